"""Turn vectors off the turn's path (memory/vector_fill.py): the new message embedded once,
beside the context's read; replies embedded once, when final, in the background; a vector
never written over text it was not made of; turns lacking one filled in on open; close drains
or drops the queue. Tests taking `memory_backend` run on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import pytest
from memory_backends import rows, vector_rows

from assistant.embedding import WordLlamaEmbedder
from memory import MemoryPolicy, context, reading
from memory.postgres import reads as postgres_reads
from memory.vector_fill import Pending, VectorFiller
from memory.vectors import pack, unpack

WAIT_S = 10.0  # a bound on waiting for the other side, never a measurement


@pytest.fixture(scope="module")
def wordllama():
    return WordLlamaEmbedder.load()


class Recording:
    """wordllama's vectors under another name, recording every text and call; with
    `averages_tokens` False the question is embedded as it is stored (as USE's is). `gate`:
    each call first waits for it."""

    dims = 256

    def __init__(self, wordllama, averages_tokens=False, gate=None):
        self.name = "recording-256"
        self.averages_tokens = averages_tokens
        self._inner = wordllama
        self.gate = gate
        self.texts: list[str] = []
        self.calls = 0
        self._called = asyncio.Event()

    async def called(self, n: int) -> None:
        """Until the embedder has been called `n` times (bounded)."""
        async with asyncio.timeout(WAIT_S):
            while self.calls < n:
                self._called.clear()
                await self._called.wait()

    async def embed(self, texts):
        self.calls += 1
        self._called.set()
        if self.gate is not None:
            await asyncio.wait_for(self.gate.wait(), WAIT_S)
        self.texts += list(texts)
        return self._inner.embed_now(texts)


def watch_reads(store, backend: str) -> asyncio.Event:
    """An event set when the store sends its next read statement."""
    started = asyncio.Event()
    owner, name = (store._db, "read_one") if backend == "sqlite" else (store, "_read")
    real = getattr(owner, name)

    async def read(*args, **kwargs):
        started.set()
        return await real(*args, **kwargs)

    setattr(owner, name, read)
    return started


async def written_without_vectors(memory_backend, texts):
    """A conversation of `texts` (user and assistant in turn) stored with no embedder, as
    after a crash before their vectors were written or by a store that had none."""
    plain = await memory_backend.open()
    conv = await plain.create_conversation("ana")
    for i, text in enumerate(texts):
        await plain.append("ana", conv.id, ("user", "assistant")[i % 2], text)
    await plain.close()
    return conv


async def with_older_turns(memory_backend, embedder):
    """A store (recent window: 2 messages) and a conversation with messages older than the
    window, their vectors written and the embedder's record cleared: a context there recalls,
    so it waits for the question's vector."""
    conv = await written_without_vectors(memory_backend, ["Hi.", "Hello!", "I bake.", "Nice."])
    store = await memory_backend.open(embedder=embedder, policy=MemoryPolicy(keep_recent=2))
    await store.flush_vectors()  # the older turns' (the backfill on open)
    embedder.texts, embedder.calls = [], 0
    return store, conv


async def context_while_stuck(store, conv_id, text):
    """The context for `text` while the embedder waits on its gate, which stays shut longer
    than this allows: only a context that does not wait for the question's vector comes."""
    async with asyncio.timeout(WAIT_S / 2):
        return await store.context("ana", conv_id, query=text)


FERRY = "I took the ferry to Bergen on Saturday."


async def asked_while_stuck(memory_backend, embedder):
    """A store on `embedder`, a new conversation, and a context read for FERRY in it while
    the embedder is stuck (context_while_stuck): (store, conversation, FERRY)."""
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    await context_while_stuck(store, conv.id, FERRY)
    return store, conv, FERRY


def vector_of(store, turn_id):
    return rows(store, "SELECT model FROM turn_vectors WHERE turn_id = ?", (turn_id,))


async def test_the_new_message_is_embedded_once_while_the_context_is_read(
    memory_backend, wordllama
):
    # The embedder waits until the context's statement has been sent: it can only finish if
    # the two run together (embedding first, then reading, never gets its vector).
    embedder = Recording(wordllama)
    store, conv = await with_older_turns(memory_backend, embedder)
    embedder.gate = watch_reads(store, memory_backend.name)
    text = "I took the ferry to Bergen on Saturday."
    await context_while_stuck(store, conv.id, text)
    turn = await store.append("ana", conv.id, "user", text)
    assert vector_of(store, turn.id) == [("recording-256",)]  # written with the append
    # One call: the message, and its content words for recall; the message's is the stored one.
    assert embedder.texts == [text, "took ferry Bergen Saturday"] and embedder.calls == 1


async def test_a_context_with_nothing_to_recall_does_not_wait_for_the_question(
    memory_backend, wordllama
):
    # The embedder is stuck: a context that waited for the question's vector would not come.
    embedder = Recording(wordllama, gate=asyncio.Event())
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "Hello there.")
    await store.flush_vectors()
    text = "I took the ferry to Bergen on Saturday."
    window = await context_while_stuck(store, conv.id, text)
    assert embedder.calls == 2 and not embedder.gate.is_set()  # the question's: still stuck
    plain = await store.context("ana", conv.id)  # no question: nothing recalled either
    assert window.recalled == [] and replace(window, now=plain.now) == plain
    turn = await store.append("ana", conv.id, "user", text)  # before the vector came
    embedder.gate.set()
    await store.flush_vectors()
    assert vector_of(store, turn.id) == [("recording-256",)]  # that embedding's: not lost
    assert embedder.texts[-2:] == [text, "took ferry Bergen Saturday"]
    assert embedder.calls == 2  # not embedded a second time


async def test_a_question_vector_that_came_before_its_append_is_written_with_it(
    memory_backend, wordllama
):
    embedder = Recording(wordllama, gate=asyncio.Event())
    store, conv, text = await asked_while_stuck(memory_backend, embedder)
    embedder.gate.set()  # the vector comes now, with no append yet to take it
    await asyncio.wait(list(store._vectors._later.values()), timeout=WAIT_S)
    await asyncio.sleep(0)  # its callback keeps the vector for the append
    turn = await store.append("ana", conv.id, "user", text)
    assert vector_of(store, turn.id) == [("recording-256",)]  # with the append
    assert embedder.calls == 1


class FailingFirst(Recording):
    """Fails its first call (the question's), then embeds as Recording does."""

    async def embed(self, texts):
        if self.calls == 0:
            self.calls += 1
            await asyncio.wait_for(self.gate.wait(), WAIT_S)
            raise RuntimeError("embedder down")
        return await super().embed(texts)


async def test_an_append_before_a_failed_question_embedding_gets_its_own_vector(
    memory_backend, wordllama
):
    embedder = FailingFirst(wordllama, gate=asyncio.Event())
    store, conv, text = await asked_while_stuck(memory_backend, embedder)
    turn = await store.append("ana", conv.id, "user", text)
    embedder.gate.set()  # the question's embedding fails: the turn is embedded in the background
    await store.flush_vectors()
    assert vector_of(store, turn.id) == [("recording-256",)]
    assert embedder.texts == [text] and embedder.calls == 2


async def test_closing_writes_a_vector_still_coming_for_a_saved_question(memory_backend, wordllama):
    embedder = Recording(wordllama, gate=asyncio.Event())
    store, conv, text = await asked_while_stuck(memory_backend, embedder)
    turn = await store.append("ana", conv.id, "user", text)
    embedder.gate.set()
    await store.close()  # no flush: the turn is embedded before the store closes
    assert vector_of(await memory_backend.open(), turn.id) == [("recording-256",)]


async def test_an_expected_question_is_embedded_at_once_and_once_for_its_conversation(
    memory_backend, wordllama
):
    # A chat turn calls expect() as soon as it knows the message (tests/test_question_head_start
    # .py): the embedding runs before the context is asked for, and the context waits for it.
    embedder = Recording(wordllama, gate=asyncio.Event())
    store = await memory_backend.open(embedder=embedder)
    mine, other = [(await store.create_conversation("ana")).id for _ in range(2)]
    text = "I took the ferry to Bergen on Saturday."
    await store.expect("ana", mine, text)
    await store.expect("ana", mine, text)  # again: still the one embedding
    await embedder.called(1)  # started, with no context() asked for yet
    embedder.gate.set()
    await store.context("ana", other, query=text)  # another conversation's makes its own
    await store.context("ana", mine, query=text)
    turn = await store.append("ana", mine, "user", text)
    assert embedder.calls == 2
    assert vector_of(store, turn.id) == [("recording-256",)]  # the expected one, with the append


async def test_a_question_is_recalled_by_its_mean_with_its_content_words_and_stored_as_itself(
    memory_backend, wordllama, monkeypatch
):
    embedder = Recording(wordllama)
    store, conv = await with_older_turns(memory_backend, embedder)
    text = "What do I do for a living?"
    own, content = (pack(v) for v in wordllama.embed_now([text, "living"]))
    mean = pack(unpack(own) + unpack(content))
    seen = []

    def semantic_scores(rows, query_vector):
        seen.append(query_vector)
        return context.semantic_scores(rows, query_vector)

    for reader in (reading, postgres_reads):  # each backend's
        monkeypatch.setattr(reader, "semantic_scores", semantic_scores)
    await store.context("ana", conv.id, query=text)
    turn = await store.append("ana", conv.id, "user", text)
    await store.flush_vectors()
    assert embedder.texts == [text, "living"] and embedder.calls == 1  # one call, both texts
    assert seen == [mean]  # recall compares the turns with the mean of the two
    stored = rows(store, "SELECT vector FROM turn_vectors WHERE turn_id = ?", (turn.id,))
    assert [bytes(v) for (v,) in stored] == [own]  # the turn keeps the message's own vector


async def test_a_static_models_question_is_not_reused_as_the_stored_vector(
    memory_backend, wordllama
):
    embedder = Recording(wordllama, averages_tokens=True)
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    text = "What do I do for a living?"
    await store.context("ana", conv.id, query=text)
    turn = await store.append("ana", conv.id, "user", text)
    await store.flush_vectors()
    assert embedder.texts == ["living", text]  # the question's content words, then the turn
    assert vector_of(store, turn.id) == [("recording-256",)]


async def test_a_reply_is_embedded_once_when_final_after_the_turn(memory_backend, wordllama):
    embedder = Recording(wordllama)
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "Tell me about fjords.")
    await store.flush_vectors()
    embedder.texts.clear()
    reply = await store.append("ana", conv.id, "assistant", "Fjords are", draft=True)
    for text in ("Fjords are long", "Fjords are long, deep inlets"):
        await store.update_reply("ana", conv.id, reply.id, text, draft=True)
    await store.flush_vectors()
    assert embedder.texts == [] and vector_of(store, reply.id) == []  # drafts: none yet
    final = "Fjords are long, deep inlets carved by glaciers."
    await store.update_reply("ana", conv.id, reply.id, final)
    await store.flush_vectors()
    assert embedder.texts == [final]
    assert vector_of(store, reply.id) == [("recording-256",)]


async def test_turns_that_queued_together_are_embedded_in_one_batch(memory_backend, wordllama):
    gate = asyncio.Event()
    embedder = Recording(wordllama, gate=gate)
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "first")  # the worker takes it and waits
    for i in range(10):
        await store.append("ana", conv.id, ("assistant", "user")[i % 2], f"message {i}")
    gate.set()
    await store.flush_vectors()
    assert embedder.calls < 11 and len(vector_rows(store)) == 11  # in batches, not one by one


async def test_a_vector_is_never_written_over_text_it_was_not_made_of(memory_backend, wordllama):
    embedder = Recording(wordllama, gate=asyncio.Event())
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    question = await store.append("ana", conv.id, "user", "Undo me")
    await embedder.called(1)  # the worker holds it, waiting on the gate
    await store.undo("ana", conv.id)
    embedder.gate.set()
    await store.flush_vectors()
    assert vector_of(store, question.id) == []  # gone: no orphan vector
    await store.append("ana", conv.id, "user", "Keep me")
    await store.flush_vectors()
    embedder.gate = asyncio.Event()
    answer = await store.append("ana", conv.id, "assistant", "A first text")
    await embedder.called(3)
    await store.update_reply("ana", conv.id, answer.id, "A second text", draft=True)
    embedder.gate.set()
    await store.flush_vectors()
    assert vector_of(store, answer.id) == []  # made of "A first text": not written
    assert len(vector_rows(store)) == 1  # "Keep me"


async def test_turns_lacking_a_vector_get_one_on_open_in_background_batches(
    memory_backend, wordllama, caplog
):
    await written_without_vectors(memory_backend, [f"message number {i}" for i in range(30)])
    embedder = Recording(wordllama)
    with caplog.at_level(logging.INFO, logger="memory"):
        store = await memory_backend.open(embedder=embedder)
        await store.flush_vectors()
    assert vector_rows(store) == [("recording-256", 256)] * 30
    assert embedder.calls == 1  # one batch of 30
    assert "backfill done, 30 older turns embedded by recording-256" in caplog.text
    await store.close()
    again = Recording(wordllama)
    store = await memory_backend.open(embedder=again)
    await store.flush_vectors()
    assert again.calls == 0  # nothing left to do: resumable, it keeps no state


async def test_closing_writes_the_vectors_still_queued(memory_backend, wordllama):
    store = await memory_backend.open(embedder=Recording(wordllama))
    conv = await store.create_conversation("ana")
    for i in range(6):
        await store.append("ana", conv.id, ("user", "assistant")[i % 2], f"message {i}")
    await store.close()  # no flush: close drains the queue
    reopened = await memory_backend.open()
    assert len(vector_rows(reopened)) == 6


async def test_what_close_dropped_is_embedded_on_the_next_open(memory_backend, wordllama):
    conv = await written_without_vectors(memory_backend, ["written before any embedder"])
    store = await memory_backend.open(embedder=Recording(wordllama))
    await store.flush_vectors()  # a complete pass: its mark says turn 1 is done
    stuck = Recording(wordllama, gate=asyncio.Event())  # never opens
    await store.close()
    store = await memory_backend.open(embedder=stuck)
    for i in range(3):
        await store.append("ana", conv.id, ("assistant", "user")[i % 2], f"late message {i}")
    await store.close()  # waits its 5 s, then drops them and moves the mark back
    assert len(vector_rows(store)) == 1
    store = await memory_backend.open(embedder=Recording(wordllama))
    await store.flush_vectors()
    assert len(vector_rows(store)) == 4


async def test_a_complete_pass_is_not_repeated(memory_backend, wordllama):
    conv = await written_without_vectors(memory_backend, [f"message {i}" for i in range(5)])
    first = Recording(wordllama)
    store = await memory_backend.open(embedder=first)
    await store.flush_vectors()
    await store.close()
    assert first.texts == [f"message {i}" for i in range(5)]
    first_turn = "(SELECT min(turn_id) FROM turn_vectors)"
    rows(store, f"DELETE FROM turn_vectors WHERE turn_id = {first_turn} RETURNING turn_id")
    second = Recording(wordllama)
    store = await memory_backend.open(embedder=second)
    await store.append("ana", conv.id, "user", "a new one")
    await store.flush_vectors()
    assert second.texts == ["a new one"]  # the pass before covered the first five
    other = Recording(wordllama)
    other.name = "another-model"
    store = await memory_backend.open(embedder=other)
    await store.flush_vectors()
    assert len(other.texts) == 6  # another model's mark means nothing for this one


async def test_a_close_right_after_the_backfill_keeps_its_mark(wordllama):
    # The pass's last step writes its mark: flush() returned and close() cancelled it while
    # that write was still under way, so the next open embedded every turn again.
    marks: list = []

    class Rows:
        async def newest(self):
            return 2

        async def done_upto(self, model):
            return 0

        async def missing(self, model, after, upto, limit):
            return [Pending("conv", i, f"text {i}") for i in range(after + 1, upto + 1)]

        async def write(self, model, batch):
            return len(batch)

        async def mark(self, model, upto):
            await asyncio.sleep(0.05)  # a round trip to the database
            marks.append(upto)

        async def lower_mark(self, below):
            marks.append(("lowered before", below))

    filler = VectorFiller(Recording(wordllama), Rows())
    await filler.start_backfill()
    await filler.flush()
    await filler.aclose()
    assert marks == [2]


async def test_closing_drops_what_cannot_be_embedded_in_time(caplog, wordllama):
    written: list = []

    class Rows:
        async def write(self, model, batch):
            written.extend(batch)
            return len(batch)

        async def lower_mark(self, below):
            written.append(("lowered before", below))

    embedder = Recording(wordllama, gate=asyncio.Event())  # never opens
    filler = VectorFiller(embedder, Rows())
    filler.submit("conv", 1, "first")
    await asyncio.sleep(0.1)  # the worker holds "first"
    filler.submit("conv", 2, "second")
    with caplog.at_level(logging.WARNING, logger="memory"):
        await filler.aclose(timeout_s=0.05)
    assert written == [("lowered before", 1)] and "2 turns closed without one" in caplog.text
    filler.submit("conv", 3, "after close")  # ignored: nothing restarts
    assert filler._task is None
