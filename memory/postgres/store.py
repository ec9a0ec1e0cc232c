"""`PostgresStore`: the conversation store on PostgreSQL, for several app replicas sharing one
memory. Same verbs, records and guarantees as the SQLite store (memory/store.py).

Storage design
--------------
- psycopg 3 (async) over a bounded `AsyncConnectionPool` (memory/postgres/pool.py):
  connections are checked before use (without a round trip when used moments ago and quiet
  since), recycled after `max_lifetime` and closed after `max_idle`. Prepared statements are
  off (`prepare_threshold=None`) so it works behind pgbouncer and Supabase's transaction
  pooler. Connections are in autocommit; every multi-statement write is one transaction. A
  read whose connection turns out broken runs once more on another.
- Every write to a conversation's turns first locks its row (the append's UPDATE, or
  `SELECT ... FOR UPDATE`), so writes to one conversation are serialized across replicas and
  turn ids rise in commit order; writes to different conversations run in parallel.
- Hot paths are one statement, one round trip: context() (conversation, summary, recent turns,
  recall hits and their neighbours, the conversation's vectors) and append() (counters, title,
  expiry, owner check and the INSERT with its search text and vector). Turns that only the
  meaning side found take a second statement, as on SQLite. Appends that arrive together are
  written as one statement with one commit (memory/postgres/appends.py).
- Turn vectors (memory/vectors.py, int8) are a bytea in `turn_vectors`; their cosines with the
  question are computed in Python by the same functions as SQLite's, so both backends rank by
  meaning alike. pgvector is not needed.
- Summarization: a lease on the conversation row (`summarizing_until`) lets one replica at a
  time call the summarizer; the commit runs under `pg_advisory_xact_lock` for the conversation
  and re-checks that the folded turns and the previous summary are exactly as read.
- Ids are random; every call takes the owner; another owner's conversation, or one past its
  retention, behaves exactly like a missing one. Search text: see memory/postgres/text.py.
- psycopg errors are wrapped in `StorageUnavailable` here, at the boundary, with advice.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import astuple

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from ..edits import ConversationEdit, edit_columns
from ..errors import NOT_FOUND_MESSAGE, ConversationNotFound, StorageUnavailable
from ..policy import MemoryPolicy
from ..records import Conversation, Origin, Outcome, ResetResult, Turn, TurnMetrics
from ..retention import PURGE_CONVERSATIONS, PURGE_TURNS, expires_at, purge_due
from ..sql import conversation_from_row, turn_from_row
from ..summarize import ExtractiveSummarizer, Summarizer
from ..validation import (
    check_created_at,
    check_import,
    check_outcome,
    check_owner,
    check_retention,
    clean_title,
    make_title,
    validate_message,
)
from ..vector_fill import VectorFiller
from ..vectors import Embedder, embed_packed
from . import sql
from .appends import APPEND_COMMITS, AppendQueue
from .fold import Folding
from .pool import POOL_MAX, broken_connection, open_pool, safe_url, unavailable
from .reads import Reads
from .replies import Replies
from .steering import Steering
from .text import check_text, index_cjk, index_words
from .tokens import Tokens
from .vector_rows import PostgresVectorRows

log = logging.getLogger(__name__)


class PostgresStore(Reads, Folding, Tokens, Replies, Steering):
    """Owns the Mnemo schema in one PostgreSQL database: conversations, turns, summaries,
    metrics. Open with `await PostgresStore.open(url)`."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        url: str,
        policy: MemoryPolicy,
        summarizer: Summarizer,
        clock: Callable[[], float],
        embedder: Embedder | None = None,
        append_commit: str = "durable",
    ):
        self._pool = pool
        self.url = safe_url(url)
        self._raw_url = url
        self.policy = policy
        self.summarizer = summarizer
        self.embedder = embedder
        self._clock = clock
        self._summarizing: set[str] = set()
        self._last_purge = float("-inf")
        self._closed = False
        self._appends = AppendQueue(self._conn, async_commit=append_commit == "async")
        # Vectors are written after their turns, in the background (memory/vector_fill.py).
        self._vectors = VectorFiller(embedder, PostgresVectorRows(self._conn, self._read))

    @classmethod
    async def open(
        cls,
        url: str,
        policy: MemoryPolicy | None = None,
        summarizer: Summarizer | None = None,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
        *,
        pool_max: int = POOL_MAX,
        append_commit: str = "durable",
    ) -> PostgresStore:
        """Connect, migrate under an advisory lock, and return the store.

        Raises StorageUnavailable (with what to do next) when the server cannot be reached,
        refuses the login, or the user may not create the schema. With an `embedder`, every
        message gets a vector when written and recall adds meaning to keywords, as on SQLite.
        `append_commit="async"` (opt-in; default "durable") lets appends commit without
        waiting for their WAL flush: what that risks is in README, Scaling out.
        """
        if append_commit not in APPEND_COMMITS:
            raise ValueError(
                f"append_commit is {append_commit!r}; use one of {', '.join(APPEND_COMMITS)}."
            )
        pool = await open_pool(url, pool_max)
        policy = policy or MemoryPolicy()
        summarizer = summarizer or ExtractiveSummarizer()
        store = cls(pool, url, policy, summarizer, clock, embedder, append_commit)
        await store._vectors.start_backfill()
        return store

    async def close(self) -> None:
        if not self._closed:
            await self._appends.wait()  # appends already submitted are written first
            await self._vectors.aclose()  # then their vectors, within a deadline
            self._closed = True
            await self._pool.close()

    async def flush_vectors(self) -> None:
        """Until the vectors queued so far (and the backfill) are written: tests, bench."""
        await self._vectors.flush()

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- connections --------------------------------------------------------------------

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection in autocommit: each statement is its own transaction."""
        if self._closed:
            raise StorageUnavailable("The memory store is closed.")
        try:
            async with self._pool.connection() as conn:
                yield conn
        except (psycopg.Error, OSError) as exc:
            raise unavailable(exc, self._raw_url) from exc

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """One transaction; rolled back when the block raises."""
        async with self._conn() as conn, conn.transaction():
            yield conn

    async def _fetch(self, statement: str, params: dict[str, object]) -> list[tuple]:
        async with self._conn() as conn:
            cur = await conn.execute(statement, params)
            return await cur.fetchall()

    async def _read(self, statement: str, params: dict[str, object]) -> list[tuple]:
        """`_fetch` for a statement that only reads: when the pooled connection turns out to
        be broken (the server ended it moments after it was last used, so the pool's check
        skipped it, see _check), it runs once more on another connection."""
        try:
            return await self._fetch(statement, params)
        except StorageUnavailable as exc:
            if not broken_connection(exc):
                raise
        await self._sweep()  # its neighbours in the pool may be broken too (a restart)
        return await self._fetch(statement, params)

    async def _sweep(self) -> None:
        """Check every idle pooled connection now, replacing the broken ones."""
        try:
            await self._pool.check()
        except (psycopg.Error, OSError) as exc:
            raise unavailable(exc, self._raw_url) from exc

    async def _locked(self, conn: AsyncConnection, owner: str, conv_id: str) -> Conversation:
        """The visible conversation, row-locked until the transaction ends."""
        cur = await conn.execute(
            sql.LOCK_VISIBLE_SQL, {"conv": conv_id, "owner": owner, "now": self._clock()}
        )
        row = await cur.fetchone()
        if row is None:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return conversation_from_row(row)

    # -- conversations ------------------------------------------------------------------

    async def create_conversation(
        self,
        owner: str,
        title: str | None = None,
        persona_id: str = "assistant",
        persona_version: int | None = None,
        retention_minutes: int | None = None,
    ) -> Conversation:
        check_owner(owner)
        title = clean_title(title) if title is not None else None
        check_retention(retention_minutes)
        check_text(owner, title, persona_id)
        now = self._clock()
        rows = await self._fetch(
            "INSERT INTO conversations (id, owner, title, persona_id, persona_version, "
            "retention_minutes, created_at, last_active_at, expires_at) VALUES (%(id)s, "
            "%(owner)s, %(title)s, %(persona)s, %(version)s, %(retention)s, %(now)s, %(now)s, "
            f"%(expires)s) RETURNING {sql.CONVERSATION_COLUMNS}",
            {
                "id": secrets.token_urlsafe(16),
                "owner": owner,
                "title": title,
                "persona": persona_id,
                "version": persona_version,
                "retention": retention_minutes,
                "now": now,
                "expires": expires_at(retention_minutes, now),
            },
        )
        await self._maybe_purge()
        return conversation_from_row(rows[0])

    async def update_conversation(
        self, owner: str, conv_id: str, edit: ConversationEdit
    ) -> Conversation:
        """Every change in `edit` in one UPDATE: all of them, or (one refused) none."""
        check_text(edit.title, edit.persona_id)
        columns = edit_columns(edit, self._clock())
        if not columns:
            return await self.get_conversation(owner, conv_id)
        assignments = ", ".join(f"{name} = %({name})s" for name in columns)
        rows = await self._fetch(
            f"UPDATE conversations SET {assignments} WHERE id = %(conv)s AND owner = %(owner)s "
            f"AND {sql.VISIBLE} RETURNING {sql.CONVERSATION_COLUMNS}",
            {**columns, "conv": conv_id, "owner": owner, "now": self._clock()},
        )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return conversation_from_row(rows[0])

    async def rename_conversation(self, owner: str, conv_id: str, title: str) -> Conversation:
        return await self.update_conversation(owner, conv_id, ConversationEdit(title=title))

    async def set_persona(
        self, owner: str, conv_id: str, persona_id: str, persona_version: int | None = None
    ) -> Conversation:
        edit = ConversationEdit(persona_id=persona_id, persona_version=persona_version)
        return await self.update_conversation(owner, conv_id, edit)

    async def set_retention(self, owner: str, conv_id: str, minutes: int | None) -> Conversation:
        """Forget the conversation after `minutes` idle (None: keep). Counts from now."""
        edit = ConversationEdit(retention_minutes=minutes, change_retention=True)
        return await self.update_conversation(owner, conv_id, edit)

    async def delete_conversation(self, owner: str, conv_id: str) -> None:
        rows = await self._fetch(
            "DELETE FROM conversations WHERE id = %(conv)s AND owner = %(owner)s "
            f"AND {sql.VISIBLE} RETURNING 1",
            {"conv": conv_id, "owner": owner, "now": self._clock()},
        )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)

    # -- turns --------------------------------------------------------------------------

    async def append(
        self,
        owner: str,
        conv_id: str,
        role: str,
        content: str,
        *,
        incomplete: bool = False,
        created_at: float | None = None,
        speaker: str | None = None,
        origin: Origin | None = None,
        outcome: Outcome | None = None,
        outcome_note: str | None = None,
        draft: bool = False,
    ) -> Turn:
        """Save a message (a first user message titles the conversation); `created_at` (epoch
        seconds) dates a message written elsewhere; `speaker`: a roundtable reply's persona;
        `origin="tool"`: a tool note (a user turn); `outcome` and its note say how a reply
        ended when not as planned (then incomplete). Its vector as on SQLite: context()'s of
        this message, else made in the background; none for a `draft` (a reply's progress)."""
        validate_message(role, content, speaker, origin)
        outcome_note = check_outcome(outcome, outcome_note)
        incomplete = incomplete or outcome is not None
        check_text(content, speaker, outcome_note)
        now = self._clock()
        when = check_created_at(created_at, now)
        vector = self._vectors.take_fresh(conv_id, content) if role == "user" else None
        turn_id = await self._appends.submit(
            {
                "conv": conv_id,
                "owner": owner,
                "now": now,
                "chars": len(content),
                "title": make_title(content) if role == "user" and origin is None else None,
                "role": role,
                "content": content,
                "when": when,
                "incomplete": incomplete,
                "speaker": speaker,
                "origin": origin,
                "outcome": outcome,
                "outcome_note": outcome_note,
                "words": index_words(content),
                "cjk_text": index_cjk(content),
                "model": self.embedder.name if vector is not None else None,
                "vector": vector,
            },
        )
        if turn_id is None:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        if vector is None and not draft:
            self._vectors.submit(conv_id, turn_id, content)
        await self._maybe_purge()
        flags = {"incomplete": incomplete, "speaker": speaker, "origin": origin}
        flags |= {"outcome": outcome, "outcome_note": outcome_note}
        return Turn(turn_id, conv_id, role, content, when, **flags)  # type: ignore[arg-type]

    async def import_conversation(
        self,
        owner: str,
        messages: Iterable[tuple[str, str, float]],
        title: str | None = None,
        persona_id: str = "assistant",
        persona_version: int | None = None,
    ) -> Conversation:
        """A new conversation holding `messages`, (role, content, created_at) oldest first,
        so a history from elsewhere keeps its dates. All or nothing: every message is checked
        before anything is written, then one transaction writes them."""
        check_owner(owner)
        title = clean_title(title) if title is not None else None
        now = self._clock()
        rows = check_import(list(messages), now)
        check_text(owner, title, persona_id, *(c for _, c, _ in rows))
        conv_id = secrets.token_urlsafe(16)
        title = title or next((make_title(c) for role, c, _ in rows if role == "user"), None)
        vectors = await embed_packed(self.embedder, [c for _, c, _ in rows])
        async with self._write() as conn:
            # last_active_at is now: retention counts from the import, not the old messages.
            await conn.execute(
                "INSERT INTO conversations (id, owner, title, persona_id, persona_version, "
                "created_at, last_active_at, message_count, active_count, chars) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (conv_id, owner, title, persona_id, persona_version, rows[0][2] if rows else now,
                 now, len(rows), len(rows), sum(len(c) for _, c, _ in rows)),
            )  # fmt: skip
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO turns (conversation_id, role, content, created_at, words, cjk) "
                    "VALUES (%s, %s, %s, %s, mnemo_stem(%s::tsvector), %s)",
                    [(conv_id, r, c, when, index_words(c), index_cjk(c)) for r, c, when in rows],
                )
                # The new conversation's turns, in the order they were inserted.
                await cur.execute(
                    "SELECT id FROM turns WHERE conversation_id = %s ORDER BY id", (conv_id,)
                )
                ids = [tid for (tid,) in await cur.fetchall()]
                await cur.executemany(
                    "INSERT INTO turn_vectors (turn_id, conversation_id, model, vector) "
                    "VALUES (%s, %s, %s, %s)",
                    [(tid, conv_id, self.embedder.name, v)
                     for tid, v in zip(ids, vectors, strict=True) if v is not None],
                )  # fmt: skip
            return await self._locked(conn, owner, conv_id)

    async def _remove_turns(self, conn: AsyncConnection, conv_id: str, turns: list[Turn]) -> None:
        await conn.execute("DELETE FROM turns WHERE id = ANY(%s)", ([t.id for t in turns],))
        await conn.execute(
            "UPDATE conversations SET message_count = message_count - %s, "
            "active_count = active_count - %s, chars = chars - %s WHERE id = %s",
            (
                len(turns),
                sum(not t.compacted for t in turns),
                sum(len(t.content) for t in turns),
                conv_id,
            ),
        )

    async def _trailing_active(self, conn: AsyncConnection, conv_id: str) -> list[Turn]:
        limit = self.policy.summarize_at + self.policy.fold_max
        cur = await conn.execute(sql.TRAILING_ACTIVE_SQL, {"conv": conv_id, "limit": limit})
        return [turn_from_row(r) for r in await cur.fetchall()]  # newest first

    async def undo(self, owner: str, conv_id: str) -> list[Turn]:
        """Remove the last user message and everything after it; return what went, oldest first.

        Only messages still in the context can be undone; [] when there is none.
        """
        async with self._write() as conn:
            await self._locked(conn, owner, conv_id)
            dropped: list[Turn] = []
            for t in await self._trailing_active(conn, conv_id):
                dropped.append(t)
                if t.role == "user" and not t.is_tool_note:
                    break
            else:
                return []
            await self._remove_turns(conn, conv_id, dropped)
        return list(reversed(dropped))

    async def drop_last_reply(self, owner: str, conv_id: str) -> Turn | None:
        """For "retry": remove the reply (and its tool notes) after the last user message.
        Returns the newest removed reply, or None when the conversation ends on a user message."""
        async with self._write() as conn:
            await self._locked(conn, owner, conv_id)
            dropped: list[Turn] = []
            for t in await self._trailing_active(conn, conv_id):
                if t.role != "assistant" and not t.is_tool_note:
                    break
                dropped.append(t)
            replies = [t for t in dropped if t.role == "assistant"]
            if not replies:
                return None
            await self._remove_turns(conn, conv_id, dropped)
        return replies[0]

    async def reset(self, owner: str, conv_id: str) -> ResetResult:
        """Forget the conversation's turns, summaries, pins, title and plots ("about me" stays);
        the conversation stays, empty."""
        async with self._write() as conn:
            conv = await self._locked(conn, owner, conv_id)
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE NOT is_summary), count(*) FILTER (WHERE "
                "is_summary), coalesce(sum(char_length(content)) FILTER (WHERE NOT is_summary), 0) "
                "FROM turns WHERE conversation_id = %s",
                (conv_id,),
            )
            turns, summaries, chars = await cur.fetchone()
            await conn.execute("DELETE FROM turns WHERE conversation_id = %s", (conv_id,))
            pinned = await conn.execute(
                "DELETE FROM pinned_facts WHERE conversation_id = %s", (conv_id,)
            )
            # Reset means forget: the title was taken from the first message, so it goes too.
            await conn.execute(
                "UPDATE conversations SET message_count = 0, active_count = 0, chars = 0, "
                "summary_count = 0, summarizing_until = NULL, title = NULL WHERE id = %s",
                (conv_id,),
            )
            # The plots restart; the rows stay, detached, for the quota.
            await conn.execute(
                "UPDATE turn_metrics SET conversation_id = NULL WHERE conversation_id = %s",
                (conv_id,),
            )
        return ResetResult(turns, summaries, int(chars), pinned.rowcount, conv.title is not None)

    # -- metrics ------------------------------------------------------------------------

    async def record_metrics(self, owner: str, conv_id: str | None, metrics: TurnMetrics) -> None:
        """Record one model call's numbers (never text). Kept when the conversation is deleted,
        so the quota cannot be reset by deleting conversations."""
        check_owner(owner)
        check_text(owner, metrics.model, metrics.error_kind, metrics.persona_id)
        row = (owner, conv_id, self._clock(), *astuple(metrics))
        await self._fetch(sql.INSERT_METRICS_SQL + " RETURNING id", row)

    async def count_turn_requests(self, owner: str, since: float) -> int:
        """How many model calls the owner made since `since` (epoch seconds): the quota count."""
        rows = await self._fetch(
            "SELECT count(*) FROM turn_metrics WHERE owner = %(owner)s AND created_at >= %(s)s",
            {"owner": owner, "s": since},
        )
        return rows[0][0]

    # -- retention ----------------------------------------------------------------------

    async def purge_expired(
        self, max_conversations: int = PURGE_CONVERSATIONS, chunk: int = PURGE_TURNS
    ) -> int:
        """Delete up to `max_conversations` expired conversations, their turns `chunk` rows per
        transaction so a long conversation never holds its locks for long. Replicas purging
        at once skip each other's rows. Returns how many conversations were deleted."""
        rows = await self._fetch(
            "SELECT id FROM conversations WHERE expires_at IS NOT NULL AND expires_at <= %(now)s "
            "LIMIT %(n)s",
            {"now": self._clock(), "n": max_conversations},
        )
        purged = 0
        for (conv_id,) in rows:
            while True:
                async with self._write() as conn:
                    cur = await conn.execute(
                        "SELECT 1 FROM conversations WHERE id = %s AND expires_at <= %s "
                        "FOR UPDATE SKIP LOCKED",
                        (conv_id, self._clock()),
                    )
                    if await cur.fetchone() is None:
                        break  # revived, gone, or another replica is purging it
                    cur = await conn.execute(
                        "DELETE FROM turns WHERE id IN (SELECT id FROM turns "
                        "WHERE conversation_id = %s ORDER BY id LIMIT %s)",
                        (conv_id, chunk),
                    )
                    if cur.rowcount < chunk:
                        await conn.execute("DELETE FROM conversations WHERE id = %s", (conv_id,))
                        purged += 1
                        break
        return purged

    async def _maybe_purge(self) -> None:
        now = self._clock()
        if not purge_due(self._last_purge, now):
            return
        self._last_purge = now
        try:
            await self.purge_expired()
        except StorageUnavailable:
            log.warning("Purging expired conversations failed; will retry", exc_info=True)
