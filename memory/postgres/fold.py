"""Summarization on PostgreSQL: fold older turns into a summary, once, whichever replica asks.

1. Claim: one UPDATE sets a lease (`summarizing_until`) on the conversation row if it needs a
   fold and nobody holds a live lease. A replica that loses the race returns False at once,
   without calling the summarizer.
2. Read the turns to fold and the previous summary (one snapshot), call the summarizer outside
   any transaction.
3. Commit in one transaction under `pg_advisory_xact_lock` for the conversation: re-check that
   the folded turns are all still there and active and that no other summary was written, then
   insert the summary, mark the turns compacted and move the counters. The lease is released
   either way; a replica that dies leaves a lease that simply runs out.

A mixin of `PostgresStore` (store.py).
"""

from __future__ import annotations

import logging
import time

from ..compaction import Fold, fold_boundary, log_fold, write_summary
from ..sql import turn_from_row
from . import sql
from .text import index_cjk, index_words

log = logging.getLogger(__name__)
LEASE_S = 300.0  # outlives any summarizer call; a dead replica's lease expires after it


class Folding:
    def is_summarizing(self, conv_id: str) -> bool:
        return conv_id in self._summarizing

    async def summarize_if_needed(self, owner: str, conv_id: str) -> bool:
        """Fold older turns into a summary when the active ones reach `summarize_at`.

        Returns True when it compacted. False when not needed, when a summarization of this
        conversation is already running (here or on another replica), when the summarizer
        failed (logged; nothing changed), or when the conversation changed underneath in a
        way that invalidates the fold (reset, undo, delete); a later call retries.
        """
        if conv_id in self._summarizing:
            return False
        self._summarizing.add(conv_id)
        try:
            return await self._summarize(owner, conv_id)
        finally:
            self._summarizing.discard(conv_id)

    async def _summarize(self, owner: str, conv_id: str) -> bool:
        now = self._clock()
        until = now + LEASE_S
        claimed = await self._fetch(
            sql.CLAIM_SQL,
            {
                "conv": conv_id,
                "owner": owner,
                "now": now,
                "until": until,
                "at": self.policy.summarize_at,
            },
        )
        if not claimed:
            await self.get_conversation(owner, conv_id)  # ConversationNotFound when not visible
            return False
        try:
            return await self._fold(conv_id, claimed[0][0])
        finally:
            await self._fetch(sql.RELEASE_SQL + " RETURNING 1", {"conv": conv_id, "until": until})

    async def _fold(self, conv_id: str, active_count: int) -> bool:
        policy = self.policy
        size = min(active_count - policy.keep_recent, policy.fold_max)
        async with self._conn() as conn, conn.transaction():
            # One snapshot for both reads.
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            # keep_recent more: enough to see where the next user turn starts.
            cur = await conn.execute(
                sql.FOLD_TURNS_SQL, {"conv": conv_id, "fold": size + policy.keep_recent}
            )
            turns = fold_boundary([turn_from_row(r) for r in await cur.fetchall()], size)
            cur = await conn.execute(sql.LATEST_SUMMARY_SQL, {"conv": conv_id})
            prev = await cur.fetchone()
        if not turns:
            return False
        fold = Fold(turns, turn_from_row(prev) if prev else None)
        started = time.perf_counter()
        text = await write_summary(self.summarizer, fold, policy, conv_id)
        if text is None:
            return False
        # PostgreSQL's text cannot hold NUL; a model could still write one.
        text = text.replace("\x00", "")
        if not text or not await self._commit_fold(conv_id, fold, text):
            return False
        log_fold(conv_id, fold, text, started)
        return True

    async def _commit_fold(self, conv_id: str, fold: Fold, text: str) -> bool:
        turns, previous = fold.turns, fold.previous
        first, last = turns[0].id, turns[-1].id
        p = {"conv": conv_id, "first": first, "last": last}
        async with self._write() as conn:
            await conn.execute(sql.FOLD_LOCK_SQL, p)
            cur = await conn.execute(
                "SELECT 1 FROM conversations WHERE id = %(conv)s AND (expires_at IS NULL "
                "OR expires_at > %(now)s) FOR UPDATE",
                {**p, "now": self._clock()},
            )
            if await cur.fetchone() is None:
                return False  # deleted or expired meanwhile
            # Re-check: the turns we folded are all still there and active, and no other
            # summary was written meanwhile. Appends after `last` do not matter.
            cur = await conn.execute(
                "SELECT count(*) FROM turns WHERE conversation_id = %(conv)s AND id BETWEEN "
                "%(first)s AND %(last)s AND NOT is_summary AND NOT compacted",
                p,
            )
            still = (await cur.fetchone())[0]
            cur = await conn.execute(sql.LATEST_SUMMARY_SQL, p)
            latest = await cur.fetchone()
            if still != len(turns) or (latest[0] if latest else None) != (
                previous.id if previous else None
            ):
                log.info("Conversation %s changed during summarization; will retry", conv_id)
                return False
            await conn.execute(
                "INSERT INTO turns (conversation_id, role, content, created_at, is_summary, "
                "covers_from_id, covers_to_id, covers_count, words, cjk) VALUES (%(conv)s, "
                "'summary', %(text)s, %(now)s, true, %(from)s, %(last)s, %(count)s, "
                "mnemo_stem(%(words)s::tsvector), %(cjk)s)",
                {
                    **p,
                    "text": text,
                    "now": self._clock(),
                    "from": fold.covers_from,
                    "count": fold.covers_count,
                    "words": index_words(text),
                    "cjk": index_cjk(text),
                },
            )
            await conn.execute(
                "UPDATE turns SET compacted = true WHERE conversation_id = %(conv)s AND id "
                "BETWEEN %(first)s AND %(last)s AND NOT is_summary AND NOT compacted",
                p,
            )
            if previous is not None:
                await conn.execute(
                    "UPDATE turns SET compacted = true WHERE id = %s", (previous.id,)
                )
            await conn.execute(
                "UPDATE conversations SET active_count = active_count - %s, "
                "summary_count = summary_count + 1 WHERE id = %s",
                (len(turns), conv_id),
            )
        return True
