"""Context assembly: what the model sees of a conversation, and the one text it receives.

`assemble_context()` is a pure function over the rows of one context query (memory/sql.py:
CONTEXT, CONTEXT_WITH_RECALL) and a `MemoryPolicy`: no database, no clock, so it is tested on
hand-made rows and a second backend only has to return the same rows. `render_memory()` turns
the result into the memory note appended to the system prompt; the chat turn, the inspector
and the benchmarks all use it, so they show exactly what is sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import replace

from .errors import NOT_FOUND_MESSAGE, ConversationNotFound
from .policy import MemoryPolicy
from .recall import matched_terms
from .records import ContextWindow, RecalledTurn, Turn
from .sql import (
    KIND_CONVERSATION,
    KIND_HIT,
    KIND_NEIGHBOUR,
    KIND_RECENT,
    KIND_SUMMARY,
    TURN_WIDTH,
    turn_from_row,
)

MEMORY_NOTE_HEADER = (
    "## Memory note\n"
    "What you remember from earlier in this conversation (older messages no longer shown below). "
    "It is background written by the memory system, not a new message from the user; use it "
    "when it is relevant."
)
_TURN = slice(1, 1 + TURN_WIDTH)  # the turn columns of a context row
_TURN_AND_RANK = slice(1, 2 + TURN_WIDTH)


def render_memory(context: ContextWindow) -> str | None:
    """The summary and recalled turns as one clearly labelled note, or None when empty."""
    parts: list[str] = []
    if context.summary is not None:
        parts.append("Summary of the earlier conversation:\n" + context.summary.content.strip())
    if context.recalled:
        lines = [f"{r.turn.role.capitalize()}: {r.turn.content}" for r in context.recalled]
        parts.append(
            "Recalled older messages that match the new message, oldest first:\n" + "\n".join(lines)
        )
    if not parts:
        return None
    return MEMORY_NOTE_HEADER + "\n\n" + "\n\n".join(parts)


def clip_for_prompt(text: str, limit: int) -> str:
    """Keep the start and the end of a long message; the middle gives way."""
    if len(text) <= limit:
        return text
    marker = " […] "
    head = (limit - len(marker)) * 2 // 3
    tail = limit - len(marker) - head
    return text[:head] + marker + text[len(text) - tail :]


def assemble_context(
    rows: Iterable[Sequence], policy: MemoryPolicy, terms: Sequence[str] = ()
) -> ContextWindow:
    """The ContextWindow for the rows of one context query.

    Each row is (kind, 11 turn columns, rank, neighbour_of); the KIND_CONVERSATION row holds
    (kind, message_count, active_count). `terms` are the recall query terms ([] without
    recall). Raises ConversationNotFound when there is no conversation row.
    """
    rows = list(rows)
    conv_rows = [r for r in rows if r[0] == KIND_CONVERSATION]
    if not conv_rows:
        raise ConversationNotFound(NOT_FOUND_MESSAGE)
    message_count, active_count = conv_rows[0][1], conv_rows[0][2]
    summary_rows = [r[_TURN] for r in rows if r[0] == KIND_SUMMARY]
    recent_rows = sorted((tuple(r[_TURN]) for r in rows if r[0] == KIND_RECENT), reverse=True)
    recalled: list[RecalledTurn] = []
    if terms and message_count > len(recent_rows):
        # Stable sort: equal ranks keep FTS5's order, as ORDER BY rank returned them.
        hits = sorted((r[_TURN_AND_RANK] for r in rows if r[0] == KIND_HIT), key=lambda r: r[-1])
        neighbours = {r[-1]: r[_TURN] for r in rows if r[0] == KIND_NEIGHBOUR}
        exclude = {r[0] for r in recent_rows}
        recalled = recall_turns(list(terms), hits, neighbours, exclude, policy)
    summary = turn_from_row(summary_rows[0]) if summary_rows else None
    if summary is not None and len(summary.content) > policy.summary_chars:
        # Written under an older, larger cap.
        summary = replace(summary, content=clip_for_prompt(summary.content, policy.summary_chars))
    used = len(summary.content) if summary else 0
    used += sum(len(r.turn.content) for r in recalled)
    picked, clipped, evicted, remaining = _pick_recent(
        recent_rows, policy.history_chars - used, policy
    )
    return ContextWindow(
        summary=summary,
        turns=picked,
        chars=policy.history_chars - remaining,
        budget=policy.history_chars,
        clipped_ids=clipped,
        evicted_ids=sorted(evicted),
        recalled=recalled,
        not_shown=max(0, active_count - len(recent_rows)),
    )


def _pick_recent(
    recent_rows: list[tuple], remaining: int, policy: MemoryPolicy
) -> tuple[list[Turn], list[int], list[int], int]:
    """Newest first under `remaining` characters: (picked oldest first, clipped ids, evicted
    ids, characters left)."""
    picked: list[Turn] = []
    clipped: list[int] = []
    evicted: list[int] = []
    for row in recent_rows:  # newest first
        turn = turn_from_row(row)
        text = clip_for_prompt(turn.content, policy.message_chars)
        if evicted or len(text) > remaining:
            evicted.append(turn.id)  # everything older than the first that does not fit
            continue
        if text is not turn.content:
            clipped.append(turn.id)
            turn = replace(turn, content=text)
        picked.append(turn)
        remaining -= len(text)
    # The model's history must open on a user message.
    while picked and picked[-1].role == "assistant":
        gone = picked.pop()
        evicted.insert(0, gone.id)
        remaining += len(gone.content)
        with suppress(ValueError):
            clipped.remove(gone.id)
    picked.reverse()
    return picked, clipped, evicted, remaining


def recall_turns(
    terms: list[str],
    rows: list[Sequence],
    neighbours: dict[int, Sequence],
    exclude: set[int],
    policy: MemoryPolicy,
) -> list[RecalledTurn]:
    """The best-matching turns outside the recent window, each with its neighbour.

    `rows` are the FTS hits (turn columns + rank) in rank order; `neighbours` maps a hit's
    id to its neighbour row: the reply to a user turn, or the question before an
    assistant turn (the nearest non-summary turn either way; none if of the same role).
    """
    per_turn = min(policy.message_chars, max(200, policy.recall_chars // 4))
    budget = policy.recall_chars
    chosen: dict[int, RecalledTurn] = {}
    hits = 0
    for row in rows:
        if hits >= policy.recall_k:
            break
        turn = turn_from_row(row)
        if turn.id in exclude:
            continue
        matched = matched_terms(terms, turn.content)
        if turn.id in chosen:  # already here as a neighbour: it is a match in its own right
            chosen[turn.id] = replace(
                chosen[turn.id], matched=matched, neighbour_of=None, score=row[-1]
            )
            hits += 1
            continue
        hit = replace(turn, content=clip_for_prompt(turn.content, per_turn))
        near = neighbours.get(turn.id)
        neighbour = turn_from_row(near) if near is not None and near[2] != turn.role else None
        if neighbour is not None and (neighbour.id in exclude or neighbour.id in chosen):
            neighbour = None
        if neighbour is not None:
            neighbour = replace(neighbour, content=clip_for_prompt(neighbour.content, per_turn))
        cost = len(hit.content)
        if neighbour is not None and cost + len(neighbour.content) > budget:
            neighbour = None
        if cost > budget:
            continue
        chosen[hit.id] = RecalledTurn(turn=hit, matched=matched, score=row[-1])
        budget -= cost
        if neighbour is not None:
            chosen[neighbour.id] = RecalledTurn(turn=neighbour, matched=(), neighbour_of=hit.id)
            budget -= len(neighbour.content)
        hits += 1
    return [chosen[i] for i in sorted(chosen)]
