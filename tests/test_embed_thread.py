"""The embedder's one thread (assistant/embed_thread.py): questions asked together are
encoded as one batch, a question goes ahead of background work, and a failure reaches its
caller without stopping the thread. A fake model records what it is asked to encode."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from assistant.embed_thread import EmbedThread
from assistant.embedding import UseEmbedder

WAIT_S = 10.0


class GatedModel:
    """Encodes a text as [len(text)] * 512; the first call waits for `gate` (so that calls
    queue up behind it) and every call is recorded."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.entered = threading.Event()

    def encode(self, texts):
        self.calls.append(list(texts))
        self.entered.set()
        if len(self.calls) == 1:
            assert self.gate.wait(WAIT_S)
        return np.array([[float(len(t))] * 512 for t in texts], dtype=np.float32)


async def until(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, WAIT_S)


async def test_questions_asked_together_are_encoded_as_one_batch():
    model = GatedModel()
    use = UseEmbedder(model)
    first = asyncio.ensure_future(use.embed(["a"]))
    await until(model.entered)  # the thread is busy with the first question
    texts = [f"question {i}" + "?" * i for i in range(9)]
    rest = [asyncio.ensure_future(use.embed([t])) for t in texts]
    await asyncio.sleep(0.05)  # every one of them queued
    model.gate.set()
    vectors = await asyncio.gather(first, *rest)
    # One call each under asyncio.to_thread: ten encodings at the single-text price.
    assert model.calls == [["a"], texts]
    assert [v.shape for v in vectors] == [(1, 512)] * 10
    assert [float(v[0, 0]) for v in vectors[1:]] == [float(len(t)) for t in texts]
    # Asked again (a preview, then the message sent): the same vector, not encoded again.
    again = await use.embed([texts[3]])
    assert np.array_equal(again, vectors[4]) and len(model.calls) == 2
    assert (await use.embed([])).shape == (0, 512)


async def busy_with_background():
    """A thread encoding a first text (held by the gate), with a 10-text background job queued
    behind it in chunks of 4: (model, worker, the first call, the background call)."""
    model = GatedModel()
    worker = EmbedThread(model.encode, chunk=4)
    blocker = asyncio.ensure_future(worker.embed(["x"]))
    await until(model.entered)
    background = asyncio.ensure_future(worker.embed([f"reply {i}" for i in range(10)]))
    await asyncio.sleep(0.05)
    return model, worker, blocker, background


async def test_a_question_goes_ahead_of_background_work_between_its_chunks():
    model, worker, blocker, background = await busy_with_background()
    question = asyncio.ensure_future(worker.embed(["the question"]))
    await asyncio.sleep(0.05)
    model.gate.set()
    await asyncio.gather(blocker, question, background)
    # The question waited for nothing but the encoding already running.
    assert [len(c) for c in model.calls] == [1, 1, 4, 4, 2]
    assert model.calls[1] == ["the question"]
    assert (await background).shape == (10, 512)


async def test_a_question_of_two_texts_is_urgent_and_batched_with_the_others():
    """Under USE a question is the message and its content words (memory/vectors.embed_query):
    it goes ahead of background work too, in one batch with the questions waiting beside it,
    and each caller gets its own vectors back."""
    model, worker, blocker, background = await busy_with_background()
    pair = asyncio.ensure_future(worker.embed(["where do I work now?", "work now"]))
    single = asyncio.ensure_future(worker.embed(["hello there"]))
    await asyncio.sleep(0.05)
    model.gate.set()
    await asyncio.gather(blocker, pair, single, background)
    assert model.calls[1] == ["where do I work now?", "work now", "hello there"]
    assert [len(c) for c in model.calls] == [1, 3, 4, 4, 2]
    assert [float(v[0]) for v in await pair] == [20.0, 8.0]
    assert [float(v[0]) for v in await single] == [11.0]
    assert (await background).shape == (10, 512)


async def test_a_failed_encoding_reaches_its_caller_and_the_thread_goes_on():
    calls = []

    def encode(texts):
        calls.append(texts)
        if texts == ["bad"]:
            raise ValueError("cannot encode that")
        return np.ones((len(texts), 512), dtype=np.float32)

    worker = EmbedThread(encode)
    with pytest.raises(ValueError, match="cannot encode that"):
        await worker.embed(["bad"])
    assert (await worker.embed(["good", "also good"])).shape == (2, 512)


async def test_a_caller_that_went_away_is_skipped():
    model = GatedModel()
    worker = EmbedThread(model.encode)
    blocker = asyncio.ensure_future(worker.embed(["x"]))
    await until(model.entered)
    gone = asyncio.ensure_future(worker.embed(["never needed"]))
    await asyncio.sleep(0.05)
    gone.cancel()
    kept = asyncio.ensure_future(worker.embed(["needed"]))
    await asyncio.sleep(0.05)
    model.gate.set()
    await asyncio.gather(blocker, kept)
    assert ["never needed"] not in model.calls and ["never needed", "needed"] not in model.calls


async def test_a_question_of_two_texts_asked_again_is_not_encoded_again():
    """A preview, then the message sent: the message and its content words are kept like a
    single text (a background batch is not kept: it would push the questions out)."""
    model = GatedModel()
    model.gate.set()
    use = UseEmbedder(model)
    first = await use.embed(["where do I work now?", "work now"])
    again = await use.embed(["where do I work now?", "work now"])
    assert np.array_equal(first, again) and model.calls == [["where do I work now?", "work now"]]
    assert np.array_equal(use.embed_now(["where do I work now?", "work now"]), first)
    batch = [f"reply {i}" for i in range(5)]
    await use.embed(batch)
    await use.embed(batch)
    assert len(model.calls) == 3
