"""A graceful shutdown in-process: `Runtime.drain()`, which SIGTERM starts (the browser tests
send a real SIGTERM to `python app.py`)."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from assistant.errors import ShuttingDown
from assistant.runtime import Drained
from memory import ConversationStore
from ui import chat

OWNER = "b-owner-aaaaaaaaaaaaaaaa"


async def _through_the_ui(rt, conversation_id: str, text: str) -> None:
    async for _view in chat.stream_reply(rt, OWNER, conversation_id, text, None, []):
        pass


async def _through_the_facade(rt, conversation_id: str, text: str) -> None:
    conversations = await rt.conversations()
    async for _event in conversations.send(OWNER, conversation_id, text):
        pass


async def _until(condition, timeout_s: float = 10.0) -> None:
    for _ in range(int(timeout_s / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting")


@pytest.mark.parametrize("path", [_through_the_ui, _through_the_facade])
@pytest.mark.parametrize("grace_s,chunks,finished", [(5.0, 5, True), (0.3, 80, False)])
async def test_drain_waits_for_a_reply_or_saves_it_incomplete(
    rt, fake, path, grace_s, chunks, finished
):
    conversations = await rt.conversations()
    conversation = await (await rt.store()).create_conversation(OWNER)
    fake.reply(*[f"w{i} " for i in range(chunks)], chunk_delay=0.1)
    task = asyncio.create_task(path(rt, conversation.id, "Count"))
    await _until(lambda: bool(conversations.replies))
    await asyncio.sleep(0.15)  # a chunk or two have streamed

    drained = await rt.drain(grace_s)

    assert drained == Drained(finished=int(finished), stopped=int(not finished))
    assert task.done() and task.cancelled() is not finished
    with pytest.raises(ShuttingDown, match="Reload the page"):
        rt.accept_turn()
    with pytest.raises(ShuttingDown):
        async for _event in conversations.send(OWNER, conversation.id, "One more?"):
            pass
    async with await ConversationStore.open(rt.data_dir) as reopened:
        [question, reply] = await reopened.transcript(OWNER, conversation.id)
    assert question.content == "Count"  # "One more?" was refused before anything was saved
    assert reply.content.startswith("w0 ")
    assert reply.incomplete is not finished
    assert (f"w{chunks - 1}" in reply.content) is finished


async def test_drain_with_nothing_streaming_just_closes(rt):
    await rt.store()
    assert await rt.drain(1.0) == Drained(finished=0, stopped=0)
    assert rt.draining is True


def test_a_closed_runtime_leaves_nothing_for_a_later_loop(tmp_path, fake, caplog):
    """The model client's connections belong to the loop that made them: closed with the
    runtime, nothing is left for the garbage collector to close later on another loop (which
    logged "Task exception was never retrieved ... Event loop is closed" into whichever test
    ran then, and failed it)."""
    from assistant.gemini import GeminiModel
    from assistant.runtime import Runtime

    async def chat_once() -> None:
        rt = Runtime(tmp_path / "data", model=GeminiModel("test-key", base_url=fake.url))
        fake.reply("Hello.")
        conversations = await rt.conversations()
        conv = (await conversations.create(OWNER)).id
        await _through_the_facade(rt, conv, "Hi")
        await rt.aclose()

    async def a_later_test() -> None:
        gc.collect()  # the runtime of the first loop goes now, on this one
        await asyncio.sleep(0.05)

    # What earlier tests left for the collector goes first, and what it logs is theirs: only
    # this test's runtime is judged (the assertion failed on another test's garbage).
    gc.collect()
    caplog.clear()
    asyncio.run(chat_once())
    asyncio.run(a_later_test())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
