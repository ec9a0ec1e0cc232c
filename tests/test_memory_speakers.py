"""Who said what: a roundtable reply's speaker is stored, and every text memory gives the model
(recent turns, recalled turns, summaries) names it. The store tests run on both backends
(SQLite and PostgreSQL, tests/memory_backends.py)."""

from __future__ import annotations

import pytest
from memory_backends import integrity_error, rows

from assistant.summarizer import summary_prompt
from memory import (
    ContextWindow,
    ExtractiveSummarizer,
    InvalidInput,
    RecalledTurn,
    Turn,
    TurnMetrics,
    render_memory,
    render_messages,
)

OWNER = "owner-a"


@pytest.fixture
async def store(memory_backend):
    return await memory_backend.open()


async def test_search_hits_say_who_said_a_reply(store):
    conv = (await store.create_conversation(OWNER, None, "roundtable:erp_board")).id
    await store.append(OWNER, conv, "user", "Is the Nike margin fine?")
    await store.append(OWNER, conv, "assistant", "The Nike margin is too thin.", speaker="finance")
    await store.append(OWNER, conv, "assistant", "Nike 的毛利太低。", speaker="finance")
    hits = await store.search(OWNER, "margin")
    assert [(h.role, h.speaker) for h in hits] == [("assistant", "finance"), ("user", None)]
    # A lone CJK character takes the other query; it says who, too.
    assert [h.speaker for h in await store.search(OWNER, "毛")] == ["finance"]


async def test_a_speaker_is_stored_with_the_reply_and_read_back(store):
    conv = (await store.create_conversation(OWNER, None, "roundtable:erp_board")).id
    await store.append(OWNER, conv, "user", "Nike at 12%?")
    await store.append(OWNER, conv, "assistant", "Finance objects.", speaker="finance")
    await store.append(OWNER, conv, "assistant", "Plain reply.")
    turns = await store.transcript(OWNER, conv)
    assert [t.speaker for t in turns] == [None, "finance", None]
    context = await store.context(OWNER, conv)
    assert [m["content"] for m in render_messages(context)] == [
        "Nike at 12%?",
        "[finance] Finance objects.",
        "Plain reply.",
    ]


@pytest.mark.parametrize(
    "role,speaker,message",
    [("user", "finance", "Only replies have a speaker"), ("assistant", "x" * 81, "1-80")],
)
async def test_a_bad_speaker_is_refused_and_nothing_is_stored(store, role, speaker, message):
    conv = (await store.create_conversation(OWNER)).id
    with pytest.raises(InvalidInput, match=message):
        await store.append(OWNER, conv, role, "text", speaker=speaker)
    assert await store.transcript(OWNER, conv) == []


async def test_a_recalled_reply_keeps_its_speaker(store):
    conv = (await store.create_conversation(OWNER)).id
    await store.append(OWNER, conv, "user", "What about the Nike order?")
    await store.append(OWNER, conv, "assistant", "The Nike margin is too thin.", speaker="finance")
    for i in range(store.policy.keep_recent):
        await store.append(OWNER, conv, "user", f"filler message {i}")
    context = await store.context(OWNER, conv, query="Nike margin")
    speakers = {r.turn.content: r.turn.speaker for r in context.recalled}
    assert speakers["The Nike margin is too thin."] == "finance"
    assert "Assistant (finance): The Nike margin is too thin." in render_memory(context)


async def test_metrics_are_kept_per_speaker(store):
    conv = (await store.create_conversation(OWNER)).id
    await store.record_metrics(OWNER, conv, TurnMetrics(model="m", persona_id="finance"))
    await store.record_metrics(OWNER, conv, TurnMetrics(model="m"))
    stored = rows(
        store, "SELECT persona_id FROM turn_metrics WHERE owner = ? ORDER BY id", (OWNER,)
    )
    assert stored == [("finance",), (None,)]
    assert await store.count_turn_requests(OWNER, since=0) == 2


async def test_the_database_refuses_an_overlong_speaker_written_around_the_store(store):
    conv = (await store.create_conversation(OWNER)).id
    with pytest.raises(integrity_error(store)):
        rows(
            store,
            "INSERT INTO turns (conversation_id, role, content, created_at, speaker) "
            "VALUES (?, 'assistant', 'x', 1.0, ?)",
            (conv, "x" * 81),
        )


def test_recalled_turns_name_their_speaker():
    recalled = [
        RecalledTurn(Turn(3, "c", "user", "Nike at 12%?", 0.5), ("nike",)),
        RecalledTurn(Turn(4, "c", "assistant", "I object.", 0.6, speaker="finance"), ()),
    ]
    note = render_memory(ContextWindow(None, [], 30, 12_000, recalled=recalled))
    assert "\nUser: Nike at 12%?\n" in note
    assert note.endswith("\nAssistant (finance): I object.")


async def test_summaries_name_the_speaker():
    turns = [
        Turn(1, "c", "user", "My budget is 20,000 pairs.", 1.0),
        Turn(2, "c", "assistant", "The margin is 12%, below our 15% bar.", 2.0, speaker="finance"),
    ]
    extractive = await ExtractiveSummarizer().summarize(None, turns, 1_000)
    assert "- Assistant (finance): The margin is 12%" in extractive
    assert "Assistant (finance): The margin is 12%" in summary_prompt(None, turns)
