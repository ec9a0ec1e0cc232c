"""Pinned facts, "about me", the user's summary, reset that forgets, per-part metrics: the
memory contract, on both backends (SQLite in a tmp dir, PostgreSQL; tests/memory_backends.py)."""

from __future__ import annotations

import asyncio

import pytest
from memory_backends import rows

from memory import (
    ConversationNotFound,
    ExtractiveSummarizer,
    InvalidRole,
    InvalidSummary,
    MemoryPolicy,
    PinRefused,
    TurnMetrics,
    render_memory,
)
from memory.pins import MAX_PIN_CHARS, MAX_PINS

FACT = "I'm vegetarian"


@pytest.fixture
async def store(memory_backend):
    return await memory_backend.open()


async def long_conversation(store, owner="ana", n=101):
    """A conversation past summarization: its first message folded into the summary."""
    conv = await store.create_conversation(owner)
    await store.append(owner, conv.id, "user", "Our gross-margin red line is 15% for Kestrel.")
    for i in range(1, n):
        await store.append(owner, conv.id, "assistant" if i % 2 else "user", f"message {i}")
    assert await store.summarize_if_needed(owner, conv.id)
    return conv


async def test_a_pinned_fact_is_in_every_context_and_survives_summarization(store):
    conv = await store.create_conversation("ana")
    fact = await store.pin("ana", conv.id, "  I'm   vegetarian ")
    assert fact.content == FACT and not fact.about_me
    for i in range(101):
        await store.append("ana", conv.id, "user" if i % 2 == 0 else "assistant", f"turn {i}")
    assert await store.summarize_if_needed("ana", conv.id)
    ctx = await store.context("ana", conv.id, query="what should I cook")
    assert [p.content for p in ctx.pinned] == [FACT]
    assert FACT not in ctx.summary.content  # it was never a turn, so never folded
    note = render_memory(ctx)
    assert "Pinned facts" in note and f"- {FACT}" in note
    # It counts against the budget.
    assert ctx.chars == sum(ctx.part_chars().values()) <= ctx.budget
    assert ctx.part_chars()["pinned"] == len(FACT)
    status = await store.status("ana", conv.id)
    assert (status.pinned, status.pinned_chars) == (1, len(FACT))


async def test_pins_are_listed_and_deleted_one_by_one(store):
    conv = await store.create_conversation("ana")
    a = await store.pin("ana", conv.id, "fact A")
    b = await store.pin("ana", conv.id, "fact B")
    assert [p.id for p in await store.pinned("ana", conv.id)] == [a.id, b.id]
    await store.unpin("ana", a.id)
    assert [p.content for p in await store.pinned("ana", conv.id)] == ["fact B"]
    assert "fact A" not in (render_memory(await store.context("ana", conv.id)) or "")
    with pytest.raises(PinRefused, match="does not exist"):
        await store.unpin("ana", a.id)


async def test_pin_a_message_from_the_chat(store):
    conv = await store.create_conversation("ana")
    turn = await store.append("ana", conv.id, "user", "Call me Ana,\n please.")
    fact = await store.pin("ana", conv.id, source_turn_id=turn.id)
    assert (fact.content, fact.source_turn_id) == ("Call me Ana, please.", turn.id)
    other = await store.create_conversation("ana")
    with pytest.raises(PinRefused, match="no longer in this conversation"):
        await store.pin("ana", other.id, source_turn_id=turn.id)


@pytest.mark.parametrize(
    "text,error",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * (MAX_PIN_CHARS + 1), "at most 500"),
    ],
)
async def test_bad_facts_are_refused_and_nothing_is_pinned(store, text, error):
    conv = await store.create_conversation("ana")
    with pytest.raises(PinRefused, match=error):
        await store.pin("ana", conv.id, text)
    assert await store.pinned("ana", conv.id) == []


async def test_pins_are_capped_by_the_budget_and_by_count(memory_backend):
    policy = MemoryPolicy(pinned_chars=1_000)
    store = await memory_backend.open(policy=policy)
    conv = await store.create_conversation("ana")
    await store.pin("ana", conv.id, "a" * 500)
    await store.pin("ana", None, "b" * 400)  # about me counts beside every conversation
    with pytest.raises(PinRefused, match=r"1,000 characters.*900 are used.*needs 101"):
        await store.pin("ana", conv.id, "c" * 101)
    with pytest.raises(PinRefused, match="900 are used"):
        await store.pin("ana", None, "d" * 101)
    await store.pin("ana", conv.id, "c" * 100)  # exactly full
    other = await store.create_conversation("ana")
    for i in range(MAX_PINS):
        await store.pin("ana", other.id, f"f{i}")
    with pytest.raises(PinRefused, match="already has 50"):
        await store.pin("ana", other.id, "one more")


async def test_pins_written_at_once_by_two_stores_never_exceed_the_budget(memory_backend):
    # Two replicas (or two processes on one SQLite file) pinning at the same moment: the
    # budget check and the insert are one step, so exactly what fits is pinned.
    policy = MemoryPolicy(pinned_chars=1_000)
    first, second = [await memory_backend.open(policy=policy) for _ in range(2)]
    conv = await first.create_conversation("ana")

    async def attempt(store, i):
        try:
            return await store.pin("ana", conv.id if i % 2 else None, f"{i:02d}" + "x" * 298)
        except PinRefused:
            return None

    results = await asyncio.gather(*(attempt((first, second)[i % 2], i) for i in range(10)))
    assert len([r for r in results if r is not None]) == 3  # 3 x 300 <= 1,000 < 4 x 300
    pinned = await first.pinned("ana", conv.id) + await second.about_me("ana")
    assert sum(len(p.content) for p in pinned) == 900


async def test_about_me_is_off_by_default_and_reaches_every_conversation_when_on(store):
    first = await store.create_conversation("ana")
    second = await store.create_conversation("ana")
    await store.pin("ana", None, "I live in Porto")
    assert (await store.settings("ana")).about_me is False
    assert (await store.context("ana", second.id)).pinned == []  # off: not sent
    await store.set_about_me("ana", True)
    for conv in (first, second):
        ctx = await store.context("ana", conv.id)
        assert [p.content for p in ctx.pinned] == ["I live in Porto"]
        assert "About the user" in render_memory(ctx)
    assert [p.content for p in await store.about_me("ana")] == ["I live in Porto"]
    await store.set_about_me("ana", False)
    assert (await store.context("ana", first.id)).pinned == []


async def test_nothing_crosses_owners(store):
    ana = await store.create_conversation("ana")
    bob = await store.create_conversation("bob")
    mine = await store.pin("ana", ana.id, "Ana's secret")
    await store.pin("ana", None, "Ana lives in Porto")
    await store.set_about_me("ana", True)
    await store.set_about_me("bob", True)
    ctx = await store.context("bob", bob.id)
    assert ctx.pinned == [] and await store.about_me("bob") == []
    with pytest.raises(ConversationNotFound):
        await store.pin("bob", ana.id, "sneaky")
    with pytest.raises(ConversationNotFound):
        await store.pinned("bob", ana.id)
    with pytest.raises(PinRefused):
        await store.unpin("bob", mine.id)
    assert [p.id for p in await store.pinned("ana", ana.id)] == [mine.id]
    with pytest.raises(ConversationNotFound):
        await store.write_summary("bob", ana.id, "hijack")
    with pytest.raises(ConversationNotFound):
        await store.export("bob", [ana.id])


async def test_an_edited_summary_is_what_the_model_gets_from_then_on(store):
    conv = await long_conversation(store)
    folded = (await store.context("ana", conv.id)).summary.covers_count
    written = await store.write_summary("ana", conv.id, "The red line is 15%. Client: Kestrel.")
    assert written.edited and written.covers_count == folded
    ctx = await store.context("ana", conv.id)
    assert ctx.summary.content == "The red line is 15%. Client: Kestrel." and ctx.summary.edited
    assert "(written by the user)" in render_memory(ctx)
    assert (await store.status("ana", conv.id)).summary_edited
    # The next summarization folds more turns into the user's text, not the old summary.
    for i in range(90):
        await store.append("ana", conv.id, "user" if i % 2 else "assistant", f"later {i}")
    assert await store.summarize_if_needed("ana", conv.id)
    after = await store.context("ana", conv.id)
    assert "Kestrel" in after.summary.content and not after.summary.edited


async def test_clearing_the_summary_leaves_none_in_the_context(store):
    conv = await long_conversation(store)
    before = await store.context("ana", conv.id)
    assert await store.write_summary("ana", conv.id, "") is None
    ctx = await store.context("ana", conv.id)
    assert ctx.summary is None
    assert ctx.turns == before.turns  # the folded turns stay folded (and in the transcript)
    assert any(t.is_summary for t in await store.transcript("ana", conv.id))


async def test_summary_edits_are_checked(store):
    conv = await store.create_conversation("ana")
    with pytest.raises(InvalidSummary, match="no summary yet"):
        await store.write_summary("ana", conv.id, "made up")
    assert await store.write_summary("ana", conv.id, None) is None  # nothing to clear
    conv = await long_conversation(store)
    cap = store.policy.summary_chars
    with pytest.raises(InvalidSummary, match=f"limit is {cap:,}"):
        await store.write_summary("ana", conv.id, "x" * (cap + 1))
    assert not (await store.context("ana", conv.id)).summary.edited


async def test_reset_forgets_title_pins_and_every_searchable_trace(store):
    conv = await long_conversation(store)
    await store.pin("ana", conv.id, "Kestrel pays late")
    await store.pin("ana", None, "about me stays")
    await store.record_metrics("ana", conv.id, TurnMetrics(model="m", latency_ms=5))
    assert (await store.get_conversation("ana", conv.id)).title.startswith("Our gross-margin")
    assert await store.search("ana", "Kestrel")
    result = await store.reset("ana", conv.id)
    assert (result.pinned, result.title_cleared) == (1, True)
    assert (await store.get_conversation("ana", conv.id)).title is None
    assert await store.pinned("ana", conv.id) == []
    assert await store.search("ana", "Kestrel") == []
    assert await store.find_conversations("ana", "gross-margin") == []
    assert await store.conversation_metrics("ana", conv.id) == []
    assert [p.content for p in await store.about_me("ana")] == ["about me stays"]
    # The quota still counts the call (the row stays, detached).
    assert await store.count_turn_requests("ana", since=0) == 1


async def test_metrics_keep_the_characters_of_each_part_never_text(store, memory_backend):
    conv = await store.create_conversation("ana")
    parts = dict(persona_chars=900, pinned_chars=14, summary_chars=0, recalled_chars=0)
    await store.record_metrics(
        "ana", conv.id, TurnMetrics(model="m", recent_chars=30, budget_chars=12_000, **parts)
    )
    await store.record_metrics("ana", conv.id, TurnMetrics(model="m", input_tokens=7))
    await store.record_metrics("bob", conv.id, TurnMetrics(model="m"))  # not ana's
    plotted = await store.conversation_metrics("ana", conv.id)
    assert [r.metrics.persona_chars for r in plotted] == [900, None]
    assert plotted[0].metrics.budget_chars == 12_000 and plotted[1].metrics.input_tokens == 7
    with pytest.raises(ValueError, match="pinned_chars"):
        TurnMetrics(model="m", pinned_chars=-1)
    if memory_backend.name == "sqlite":
        columns = [r[1] for r in rows(store, "PRAGMA table_info(turn_metrics)")]
    else:
        statement = "SELECT column_name FROM information_schema.columns WHERE table_name = ?"
        columns = [r[0] for r in rows(store, statement, ("turn_metrics",))]
    assert "pinned_chars" in columns
    assert not [c for c in columns if "text" in c or "content" in c]


async def test_tool_notes_are_user_side_turns_that_undo_retry_and_summaries_handle(store):
    conv = await store.create_conversation("ana")
    question = await store.append("ana", conv.id, "user", "What day is it?")
    note = await store.append("ana", conv.id, "user", "today() → ok: Tuesday", origin="tool")
    await store.append("ana", conv.id, "assistant", "It is Tuesday.")
    assert note.is_tool_note and note.role == "user"
    assert (await store.get_conversation("ana", conv.id)).title == "What day is it?"
    with pytest.raises(InvalidRole):
        await store.append("ana", conv.id, "assistant", "fake", origin="tool")
    # Retry drops the reply and its tool notes, keeping the question.
    assert (await store.drop_last_reply("ana", conv.id)).content == "It is Tuesday."
    assert [t.id for t in await store.transcript("ana", conv.id)] == [question.id]
    await store.append("ana", conv.id, "user", "today() → ok: Tuesday", origin="tool")
    await store.append("ana", conv.id, "assistant", "It is Tuesday.")
    # Undo takes the question back with everything after it, tool notes included.
    undone = await store.undo("ana", conv.id)
    assert [t.content for t in undone] == [
        "What day is it?",
        "today() → ok: Tuesday",
        "It is Tuesday.",
    ]
    assert await store.transcript("ana", conv.id) == []
    # A summary keeps what was looked up.
    summary = await ExtractiveSummarizer().summarize(None, [question, note], max_chars=4_000)
    assert "- Tool: today() → ok: Tuesday" in summary
