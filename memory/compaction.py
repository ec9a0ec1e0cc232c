"""Compaction: fold a conversation's older turns into one summary turn.

Three steps, so the model call never holds a transaction: read the turns to fold (one
snapshot), summarize them (outside any transaction; it may take seconds), then commit in one
write transaction that first re-checks the folded turns and the previous summary are exactly
as read. If anything changed meanwhile (reset, undo, delete, another summary) it gives up and
a later call retries. The folded turns stay in the transcript, marked compacted.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import sql
from .connection import Connections
from .errors import NOT_FOUND_MESSAGE, ConversationNotFound
from .policy import MemoryPolicy
from .records import Conversation, Turn
from .summarize import Summarizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fold:
    """Turns to fold (oldest first) and the summary they extend, as read."""

    turns: list[Turn]
    previous: Turn | None

    @property
    def covers_from(self) -> int:
        return self.previous.covers_from_id if self.previous else self.turns[0].id

    @property
    def covers_count(self) -> int:
        return ((self.previous.covers_count or 0) if self.previous else 0) + len(self.turns)


def fold_size(conv: Conversation, policy: MemoryPolicy) -> int:
    """How many of the oldest active turns to fold now, at least; 0 below `summarize_at`."""
    if conv.active_count < policy.summarize_at:
        return 0
    return min(conv.active_count - policy.keep_recent, policy.fold_max)


def fold_boundary(turns: list[Turn], size: int) -> list[Turn]:
    """The oldest `size` of `turns` (oldest first), and any assistant turns right after them.

    The recent window never opens on an assistant turn; one left just after the fold would be
    in neither the summary nor the window. Folding it too leaves nothing between the two.
    """
    cut = min(size, len(turns))
    while cut < len(turns) and turns[cut].role != "user":
        cut += 1
    return turns[:cut]


async def summarize(
    db: Connections,
    policy: MemoryPolicy,
    summarizer: Summarizer,
    clock: Callable[[], float],
    owner: str,
    conv_id: str,
) -> bool:
    """Fold older turns into a summary when due; True when it compacted (see module doc)."""
    fold = await read_fold(db, policy, clock, owner, conv_id)
    if fold is None:
        return False
    started = time.perf_counter()
    text = await write_summary(summarizer, fold, policy, conv_id)
    if text is None or not await commit_summary(db, clock, owner, conv_id, fold, text):
        return False
    log_fold(conv_id, fold, text, started)
    return True


async def write_summary(
    summarizer: Summarizer, fold: Fold, policy: MemoryPolicy, conv_id: str
) -> str | None:
    """The summarizer's text for `fold`, stripped and capped; None (logged) when it raised
    or returned nothing, so nothing is compacted and a later call retries. Every backend
    calls this outside any transaction."""
    try:
        text = await summarizer.summarize(
            fold.previous.content if fold.previous else None, fold.turns, policy.summary_chars
        )
    except Exception:
        log.warning(
            "Summarizer %s failed for conversation %s; nothing changed, will retry later",
            type(summarizer).__name__,
            conv_id,
            exc_info=True,
        )
        return None
    text = (text or "").strip()[: policy.summary_chars]
    if not text:
        log.warning("Summarizer returned an empty summary for %s; not compacting", conv_id)
        return None
    return text


def log_fold(conv_id: str, fold: Fold, text: str, started: float) -> None:
    log.info(
        "Summarized %d turns of %s into %d chars in %.0f ms",
        len(fold.turns),
        conv_id,
        len(text),
        (time.perf_counter() - started) * 1000,
    )


async def read_fold(
    db: Connections, policy: MemoryPolicy, clock: Callable[[], float], owner: str, conv_id: str
) -> Fold | None:
    """The turns to fold and the previous summary, in one snapshot; None when not due.
    One hop to the reader (this runs after every reply)."""
    now = clock()

    def due(conn: sqlite3.Connection) -> tuple[int, list, list] | None:
        rows = conn.execute(sql.VISIBLE_CONVERSATION, (conv_id, owner, now)).fetchall()
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        size = fold_size(sql.conversation_from_row(rows[0]), policy)
        if size <= 0:
            return None
        # keep_recent more: enough to see where the next user turn starts.
        turn_rows = conn.execute(sql.OLDEST_ACTIVE, (conv_id, size + policy.keep_recent))
        previous = conn.execute(sql.LATEST_SUMMARY, (conv_id,)).fetchall()
        return size, turn_rows.fetchall(), previous

    found = await db.snapshot(due)
    if found is None:
        return None
    size, turn_rows, prev_rows = found
    turns = fold_boundary([sql.turn_from_row(r) for r in turn_rows], size)
    if not turns:
        return None
    previous = sql.turn_from_row(prev_rows[0]) if prev_rows else None
    return Fold(turns, previous)


async def commit_summary(
    db: Connections, clock: Callable[[], float], owner: str, conv_id: str, fold: Fold, text: str
) -> bool:
    """Insert the summary and mark the folded turns compacted, in one transaction, if
    nothing changed since `fold` was read; False (nothing written) when something did."""
    first, last = fold.turns[0].id, fold.turns[-1].id
    now = clock()
    async with db.write() as conn:
        # Re-check: the turns we folded are all still there and active, and no other
        # summary was written meanwhile. Appends after `last` do not matter.
        if not await conn.execute_fetchall(sql.VISIBLE_CONVERSATION, (conv_id, owner, now)):
            return False
        check = await conn.execute_fetchall(sql.COUNT_ACTIVE_BETWEEN, (conv_id, first, last))
        latest = await conn.execute_fetchall(sql.LATEST_SUMMARY_ID, (conv_id,))
        latest_id = latest[0][0] if latest else None
        previous_id = fold.previous.id if fold.previous else None
        if check[0][0] != len(fold.turns) or latest_id != previous_id:
            log.info("Conversation %s changed during summarization; will retry", conv_id)
            return False
        await conn.execute(
            sql.INSERT_SUMMARY, (conv_id, text, now, fold.covers_from, last, fold.covers_count)
        )
        await conn.execute(sql.COMPACT_BETWEEN, (conv_id, first, last))
        if previous_id is not None:
            await conn.execute(sql.COMPACT_TURN, (previous_id,))
        await conn.execute(sql.FOLDED_COUNTERS, (len(fold.turns), conv_id))
    return True
