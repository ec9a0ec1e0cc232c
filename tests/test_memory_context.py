"""memory/context.py: context assembly is a pure function over the context query's rows, so
these tests build the rows by hand: no SQLite, no store, no clock. One test feeds it the rows
real SQLite returns and checks it agrees with the store."""

from __future__ import annotations

import sqlite3

import pytest

from memory import (
    MEMORY_NOTE_HEADER,
    ContextWindow,
    ConversationNotFound,
    ConversationStore,
    MemoryPolicy,
    RecalledTurn,
    Turn,
    assemble_context,
    render_memory,
)
from memory.context import clip_for_prompt, render_messages
from memory.recall import (
    MAX_RECALL_TERMS,
    RECALL_TEXT_FUNCTION,
    query_terms,
    recall_query,
    recall_text,
)
from memory.sql import (
    CONTEXT,
    CONTEXT_WITH_RECALL,
    KIND_CONVERSATION,
    KIND_HIT,
    KIND_NEXT,
    KIND_OLDER,
    KIND_PINNED,
    KIND_PREV,
    KIND_RECENT,
    KIND_SUMMARY,
    KIND_VECTOR,
)

SMALL = MemoryPolicy(
    keep_recent=6,
    message_chars=200,
    history_chars=600,
    summary_chars=200,
    recall_chars=200,
    summarize_at=10,
)


def turn(
    tid,
    role,
    content,
    *,
    is_summary=0,
    compacted=0,
    covers=(None, None, None),
    speaker=None,
    origin=None,
):
    """The 15 turn columns, in memory.sql.TURN_COLUMNS order (no outcome: the last two)."""
    row = (tid, "c", role, content, float(tid), is_summary, compacted, *covers, 0, speaker, origin)
    return (*row, None, None)


def conversation(message_count, active_count):
    return (KIND_CONVERSATION, message_count, active_count) + (None,) * 14


def recent(*turns):
    return [(KIND_RECENT, *t, None, None) for t in turns]


def hit(t, rank):
    return (KIND_HIT, *t, rank, None)


def neighbour(t, of):
    """The turn just after hit `of`."""
    return (KIND_NEXT, *t, None, of)


def previous(t, of):
    """The turn just before hit `of`."""
    return (KIND_PREV, *t, None, of)


def summary(content, covers_count=40, origin=None):
    return (
        KIND_SUMMARY,
        *turn(90, "summary", content, is_summary=1, covers=(1, 40, covers_count), origin=origin),
    )


def pinned(fid, content, conv="c"):
    """A KIND_PINNED row: memory.sql.PINNED_COLUMNS, then padding."""
    return (KIND_PINNED, fid, "owner", conv, content, float(fid), None) + (None,) * 8


def test_no_conversation_row_is_not_found():
    with pytest.raises(ConversationNotFound, match="Start a new conversation"):
        assemble_context(recent(turn(1, "user", "hi")), SMALL)


def test_an_empty_conversation():
    ctx = assemble_context([conversation(0, 0)], SMALL)
    assert ctx == ContextWindow(summary=None, turns=[], chars=0, budget=600)
    assert render_memory(ctx) is None


def test_recent_turns_come_back_oldest_first_whatever_the_row_order():
    rows = [conversation(3, 3), *recent(turn(2, "assistant", "b"), turn(3, "user", "c"))]
    rows += recent(turn(1, "user", "a"))
    ctx = assemble_context(rows, SMALL)
    assert [t.id for t in ctx.turns] == [1, 2, 3]
    assert ctx.messages() == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    assert ctx.chars == 3 and ctx.not_shown == 0


def test_budget_evicts_oldest_first_and_never_opens_on_an_assistant_turn():
    # 150 x 5 = 750 > 600: the newest four fit, but the oldest of them is an assistant turn.
    turns = [turn(i, "user" if i % 2 else "assistant", f"{i}" * 150) for i in range(1, 6)]
    ctx = assemble_context([conversation(5, 5), *recent(*turns)], SMALL)
    assert [t.id for t in ctx.turns] == [3, 4, 5]
    assert ctx.turns[0].role == "user"
    assert ctx.evicted_ids == [1, 2]
    assert ctx.chars == 450


def test_long_messages_are_clipped_for_the_prompt_only():
    long = "start " + "x" * 1_000 + " end"
    ctx = assemble_context([conversation(2, 2), *recent(turn(1, "user", long))], SMALL)
    (clipped,) = ctx.turns
    assert len(clipped.content) == 200 and ctx.clipped_ids == [1]
    assert clipped.content.startswith("start ") and clipped.content.endswith(" end")
    assert " […] " in clipped.content


def test_an_evicted_clipped_turn_is_not_reported_as_clipped():
    rows = [conversation(2, 2), *recent(turn(1, "assistant", "y" * 1_000), turn(2, "user", "q"))]
    ctx = assemble_context(rows, SMALL)
    assert [t.id for t in ctx.turns] == [2]
    assert ctx.evicted_ids == [1] and ctx.clipped_ids == []


def test_summary_counts_against_the_budget_and_an_oversized_one_is_clipped():
    rows = [conversation(45, 5), summary("s" * 500), *recent(turn(41, "user", "u" * 150))]
    ctx = assemble_context(rows, SMALL)
    assert ctx.summary is not None and len(ctx.summary.content) == 200
    assert ctx.chars == 350
    assert ctx.not_shown == 4  # active turns older than the recent rows


def test_recall_takes_hits_with_their_neighbour_within_budget():
    terms = ["lucca"]
    old_q = turn(3, "user", "We ate at Lucca, the trattoria.", compacted=1)
    old_a = turn(4, "assistant", "Lucca had great carbonara.", compacted=1)
    rows = [
        conversation(30, 6),
        *recent(turn(25, "user", "Where did we eat?")),
        hit(old_q, -2.0),
        neighbour(old_a, 3),
    ]
    ctx = assemble_context(rows, SMALL, terms)
    assert [(r.turn.id, r.matched, r.neighbour_of) for r in ctx.recalled] == [
        (3, ("lucca",), None),
        (4, (), 3),
    ]
    assert ctx.recalled[0].score == 1.0  # the best keyword hit, normalised
    assert ctx.chars == sum(len(r.turn.content) for r in ctx.recalled) + 17


def test_a_neighbour_that_is_also_a_hit_becomes_a_match():
    q = turn(3, "user", "lucca question", compacted=1)
    a = turn(4, "assistant", "lucca answer", compacted=1)
    rows = [conversation(30, 6), *recent(turn(25, "user", "x")), hit(q, -3.0), hit(a, -1.0)]
    rows += [neighbour(a, 3), previous(q, 4)]
    ctx = assemble_context(rows, SMALL, ["lucca"])
    # 4 scores its own third plus the prior field's share of 3's (the turn before it).
    prior = SMALL.recall_weights.prior
    assert [(r.turn.id, r.neighbour_of) for r in ctx.recalled] == [(3, None), (4, None)]
    assert [r.score for r in ctx.recalled] == pytest.approx([1.0, 1 / 3 + prior])


def test_recall_skips_the_recent_window_and_respects_recall_k():
    policy = MemoryPolicy(
        keep_recent=6,
        message_chars=200,
        history_chars=600,
        summary_chars=200,
        recall_chars=200,
        summarize_at=10,
        recall_k=1,
    )
    in_window = turn(25, "user", "lucca now")
    rows = [conversation(30, 6), *recent(in_window)]
    rows += [hit(in_window, -9.0), hit(turn(3, "user", "lucca a"), -2.0)]
    rows += [hit(turn(5, "user", "lucca b"), -1.0)]
    ctx = assemble_context(rows, policy, ["lucca"])
    assert [r.turn.id for r in ctx.recalled] == [3]


def test_no_recall_without_terms_or_when_everything_is_recent():
    rows = [conversation(1, 1), *recent(turn(1, "user", "lucca")), hit(turn(1, "user", "x"), -1)]
    assert assemble_context(rows, SMALL, ["lucca"]).recalled == []
    rows = [conversation(9, 1), *recent(turn(9, "user", "q")), hit(turn(1, "user", "lucca"), -1)]
    assert assemble_context(rows, SMALL).recalled == []


def test_clip_for_prompt_keeps_short_text_untouched():
    text = "short"
    assert clip_for_prompt(text, 200) is text
    assert len(clip_for_prompt("a" * 1_000, 300)) == 300


# -- the one renderer ---------------------------------------------------------------------


SUNDAY = 1_795_942_800.0  # Sunday 29 November 2026, 09:00 UTC
DAY = 86_400.0


def test_render_memory_is_the_production_memory_note():
    summary_turn = Turn(9, "c", "summary", "  - User: lives in Porto.\n", 1.0, is_summary=True)
    recalled = [
        RecalledTurn(
            Turn(3, "c", "user", "We went to Casa Guedes yesterday.", SUNDAY), ("guedes",)
        ),
        RecalledTurn(
            Turn(4, "c", "assistant", "Noted.", SUNDAY + 60), (), neighbour_of=3, continues=True
        ),
        RecalledTurn(Turn(8, "c", "user", "Guedes again today!", SUNDAY + DAY), ("guedes",)),
    ]
    window = ContextWindow(summary_turn, [], 60, 12_000, recalled=recalled, now=SUNDAY + 2 * DAY)
    assert render_memory(window) == (
        "## Memory note\n"
        "What you remember from earlier in this conversation (older messages no longer shown "
        "below). It is background written by the memory system, not a new message from the "
        "user; use it when it is relevant."
        "\n\nToday is Tuesday, 1 December 2026."
        "\n\nSummary of the earlier conversation:\n- User: lives in Porto."
        "\n\nRecalled older messages that match the new message, oldest first, under the date "
        "they were written (a date in [= ...] is what a relative date in the message meant):\n"
        "[Sunday, 29 November 2026]\n"
        "User: We went to Casa Guedes yesterday [= Saturday, 28 November 2026].\n"
        "Assistant: Noted.\n"
        "[Monday, 30 November 2026]\n"
        "User: Guedes again today [= Monday, 30 November 2026]!"
    )
    assert render_memory(window).startswith(MEMORY_NOTE_HEADER)


def test_a_run_of_consecutive_turns_over_midnight_gets_a_second_date_line():
    recalled = [
        RecalledTurn(Turn(3, "c", "user", "Late question?", SUNDAY + 14.9 * 3600), ("q",)),
        RecalledTurn(
            Turn(4, "c", "assistant", "Early answer.", SUNDAY + 15.1 * 3600), (), 3, continues=True
        ),
    ]
    note = render_memory(ContextWindow(None, [], 3, 100, recalled=recalled))
    assert note.endswith(
        "[Sunday, 29 November 2026]\nUser: Late question?\n"
        "[Monday, 30 November 2026]\nAssistant: Early answer."
    )


def test_render_memory_with_only_a_summary_or_only_recall():
    s = Turn(9, "c", "summary", "facts", 1.0, is_summary=True)
    only_summary = render_memory(ContextWindow(s, [], 5, 100))
    assert only_summary == MEMORY_NOTE_HEADER + "\n\nSummary of the earlier conversation:\nfacts"
    r = RecalledTurn(Turn(3, "c", "user", "old", SUNDAY), ("old",))
    only_recall = render_memory(ContextWindow(None, [], 3, 100, recalled=[r]))
    assert only_recall == (
        MEMORY_NOTE_HEADER + "\n\nRecalled older messages that match the new message, oldest "
        "first, under the date they were written (a date in [= ...] is what a relative date in "
        "the message meant):\n[Sunday, 29 November 2026]\nUser: old"
    )


def test_recent_messages_carry_a_date_line_per_day_and_old_ones_their_dates():
    turns = [
        Turn(1, "c", "user", "I moved here yesterday.", SUNDAY),
        Turn(2, "c", "assistant", "Welcome!", SUNDAY + 60),
        Turn(3, "c", "user", "Tomorrow I start work.", SUNDAY + 2 * DAY),
        Turn(4, "c", "assistant", "Good luck.", SUNDAY + 2 * DAY + 60),
    ]
    window = ContextWindow(None, turns, 0, 100, now=SUNDAY + 2 * DAY + 120)
    assert render_messages(window) == [
        {
            "role": "user",
            "content": "[Sunday, 29 November 2026]\n"
            "I moved here yesterday [= Saturday, 28 November 2026].",
        },
        {"role": "assistant", "content": "Welcome!"},
        # Today's turns keep their words: "tomorrow" is still tomorrow.
        {"role": "user", "content": "[Tuesday, 1 December 2026]\nTomorrow I start work."},
        {"role": "assistant", "content": "Good luck."},
    ]
    # A window of today's turns needs no date line (the memory note says what day it is).
    today = ContextWindow(None, turns[2:], 0, 100, now=SUNDAY + 2 * DAY + 120)
    assert render_messages(today) == today.messages()
    # Without a time to render against (hand-made windows), the turns go as they are.
    assert render_messages(ContextWindow(None, turns, 0, 100)) == window.messages()


def test_pinned_facts_come_first_in_the_note_and_out_of_the_budget():
    rows = [
        conversation(4, 4),
        pinned(7, "about: lives in Porto", conv=None),
        pinned(5, "I'm vegetarian"),
        pinned(3, "red line 15%"),
        summary("s" * 100, origin="edited"),
        *recent(turn(1, "user", "u" * 160), turn(2, "assistant", "a" * 160)),
        *recent(turn(4, "user", "v" * 160)),
    ]
    ctx = assemble_context(rows, SMALL)
    assert [p.id for p in ctx.pinned] == [3, 5, 7]  # the conversation's, then about me
    # 47 pinned + 100 summary leave 453: the two newest turns fit, the oldest is evicted
    # (and the window may not open on the assistant turn, so it goes too).
    assert ctx.part_chars() == {"pinned": 47, "summary": 100, "recalled": 0, "recent": 160}
    assert ctx.chars == 307 and ctx.evicted_ids == [1, 2]
    assert render_memory(ctx) == (
        MEMORY_NOTE_HEADER + "\n\nPinned facts (the user pinned these; always keep them in mind):"
        "\n- red line 15%\n- I'm vegetarian"
        "\n\nAbout the user (pinned by them for all their conversations):"
        "\n- about: lives in Porto"
        "\n\nSummary of the earlier conversation (written by the user):\n" + "s" * 100
    )


# -- agrees with the store -------------------------------------------------------------------


async def test_the_rows_real_sqlite_returns_assemble_to_what_the_store_returns(tmp_path):
    store = await ConversationStore.open(tmp_path, policy=SMALL)
    try:
        conv = await store.create_conversation("ana")
        await store.append("ana", conv.id, "user", "The trattoria was called Lucca.")
        await store.append("ana", conv.id, "assistant", "Lucca, noted.")
        for i in range(12):
            await store.append("ana", conv.id, "user" if i % 2 == 0 else "assistant", f"m{i} " * 30)
        assert await store.summarize_if_needed("ana", conv.id)
        question = "What was that trattoria?"
        expected = await store.context("ana", conv.id, query=question)
        assert expected.summary is not None and expected.recalled
    finally:
        await store.close()

    terms = query_terms(question)[:MAX_RECALL_TERMS]
    params = {"conv": conv.id, "owner": "ana", "now": 4e9, "keep": SMALL.keep_recent}
    with sqlite3.connect(store.path) as db:
        db.create_function(RECALL_TEXT_FUNCTION, 2, recall_text, deterministic=True)
        plain = db.execute(CONTEXT, params | {"whole": 300}).fetchall()
        params.update(match=recall_query(conv.id, terms), hits=SMALL.recall_k)
        # All older turns (a small conversation), or each hit with its neighbours: the same.
        whole = db.execute(CONTEXT_WITH_RECALL, params | {"whole": 300}).fetchall()
        hits = db.execute(CONTEXT_WITH_RECALL, params | {"whole": 0}).fetchall()
    assert {r[0] for r in whole} >= {KIND_OLDER} and KIND_NEXT not in {r[0] for r in whole}
    assert KIND_OLDER not in {r[0] for r in hits} and KIND_NEXT in {r[0] for r in hits}
    for rows in (whole, hits):
        assert assemble_context(rows, SMALL, terms, query=question, now=expected.now) == expected
    assert assemble_context(plain, SMALL).recalled == []


@pytest.mark.parametrize(
    "row",
    [
        (7, "c", "user", "hi", 1.5, 0, 1, None, None, None, 1, None, "tool", "failed", "why"),
        (8, "c", "summary", "s", 2.5, 1, 0, 1, 6, 6, 0, "finance", "edited", None, None),
        # A row that goes on past the turn's columns (PostgreSQL's transcript page).
        (9, "c", "assistant", "x", 3.5, 0, 0, None, None, None, 0, None, None, None, None, 42),
    ],
)
def test_a_turn_row_becomes_the_turn_its_constructor_makes(row):
    import dataclasses

    from memory.sql import turn_from_row

    made = turn_from_row(row)
    flags = {"is_summary", "compacted", "incomplete"}
    expected = Turn(
        **{
            f.name: bool(v) if f.name in flags else v
            for f, v in zip(dataclasses.fields(Turn), row, strict=False)
        }
    )
    assert made == expected and vars(made) == vars(expected) and hash(made) == hash(expected)
    assert all(type(getattr(made, f)) is bool for f in flags)
    assert dataclasses.replace(made, content="y").content == "y"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.content = "changed"  # type: ignore[misc]


def test_turns_found_by_meaning_are_fetched_unless_the_rows_hold_every_older_turn():
    import numpy as np

    from memory.context import missing_candidates, semantic_scores
    from memory.vectors import pack

    rng = np.random.default_rng(2)
    q = rng.normal(size=64)
    older = [turn(i, ("user", "assistant")[i % 2], f"turn {i}") for i in range(1, 13)]
    vectors = {i: pack(q + 0.3 * rng.normal(size=64)) for i in range(1, 13)}
    vector_rows = [(KIND_VECTOR, i, None, None, v) + (None,) * 13 for i, v in vectors.items()]
    rows = [conversation(20, 20), *recent(turn(13, "user", "now")), *vector_rows]
    # A big conversation's rows: one keyword hit (and its next); the rest is missing.
    big = [*rows, hit(older[0], -3.0), neighbour(older[1], 1)]
    semantic = semantic_scores(big, pack(q))
    missing, _ = missing_candidates(big, semantic, SMALL)
    assert missing and set(missing) <= set(range(3, 13))
    assert missing[0] == max(range(3, 13), key=lambda i: semantic[i])  # best by meaning first
    # A small one's rows hold every older turn: nothing to fetch.
    small = [*rows, hit(older[0], -3.0), *[(KIND_OLDER, *t, None, None) for t in older]]
    assert missing_candidates(small, semantic_scores(small, pack(q)), SMALL) == ([], None)
    # One older turn's row absent: it is fetched again.
    partial = [r for r in small if not (r[0] == KIND_OLDER and r[1] == missing[0])]
    assert missing[0] in missing_candidates(partial, semantic_scores(partial, pack(q)), SMALL)[0]
