"""update_reply and set_outcome on both backends (SQLite and PostgreSQL, tests/memory_backends.py):
a streaming reply rewritten in place moves its search text and counters; outcomes are stored."""

from __future__ import annotations

import pytest

from memory import ConversationNotFound, InvalidInput

OWNER = "owner-a"


@pytest.fixture
async def store(memory_backend):
    return await memory_backend.open()


async def test_a_rewritten_reply_is_found_by_its_new_text_only(store):
    conv = (await store.create_conversation(OWNER)).id
    await store.append(OWNER, conv, "user", "How is the harbour?")
    reply = await store.append(OWNER, conv, "assistant", "Foggy", outcome="incomplete")
    assert reply.incomplete and reply.outcome == "incomplete"
    done = await store.update_reply(OWNER, conv, reply.id, "Sunny with lighthouse views")
    assert (done.outcome, done.incomplete, done.created_at) == (None, False, reply.created_at)
    turns = await store.transcript(OWNER, conv)
    assert [(t.content, t.outcome) for t in turns][-1] == ("Sunny with lighthouse views", None)
    assert [h.turn_id for h in await store.search(OWNER, "lighthouse")] == [reply.id]
    assert await store.search(OWNER, "Foggy") == []
    status = await store.status(OWNER, conv)
    assert status.total == 2
    conversation = await store.get_conversation(OWNER, conv)
    assert conversation.chars == len("How is the harbour?") + len("Sunny with lighthouse views")


async def test_a_reply_that_is_gone_or_a_question_is_not_rewritten(store):
    conv = (await store.create_conversation(OWNER)).id
    question = await store.append(OWNER, conv, "user", "Hello")
    with pytest.raises(ConversationNotFound):
        await store.update_reply(OWNER, conv, question.id, "not a reply")
    with pytest.raises(ConversationNotFound):
        await store.update_reply(OWNER, conv, question.id + 99, "gone")
    with pytest.raises(ConversationNotFound):
        await store.update_reply("someone-else", conv, question.id, "theirs")
    assert [t.content for t in await store.transcript(OWNER, conv)] == ["Hello"]


async def test_an_outcome_is_set_cleared_and_checked(store):
    conv = (await store.create_conversation(OWNER)).id
    question = await store.append(OWNER, conv, "user", "Anyone there?")
    await store.set_outcome(OWNER, conv, question.id, "failed", "Gemini is busy. Retry.")
    (turn,) = await store.transcript(OWNER, conv)
    assert (turn.outcome, turn.outcome_note) == ("failed", "Gemini is busy. Retry.")
    await store.set_outcome(OWNER, conv, question.id, None)
    (turn,) = await store.transcript(OWNER, conv)
    assert (turn.outcome, turn.outcome_note, turn.incomplete) == (None, None, False)
    # A note without an outcome: a line the chat writes on a normal turn (a roundtable's veto).
    await store.set_outcome(OWNER, conv, question.id, None, "a note without an outcome")
    (turn,) = await store.transcript(OWNER, conv)
    assert (turn.outcome, turn.outcome_note, turn.incomplete) == (
        None,
        "a note without an outcome",
        False,
    )
    with pytest.raises(InvalidInput, match="'failed', 'stopped' or 'incomplete'"):
        await store.set_outcome(OWNER, conv, question.id, "exploded", "x")
    with pytest.raises(ConversationNotFound):
        await store.set_outcome(OWNER, conv, question.id + 99, "failed", "x")
