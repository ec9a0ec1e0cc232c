"""`ConversationStore`: conversations and their turns in one SQLite database.

Storage design
--------------
- One long-lived aiosqlite connection writes; a second, query-only connection reads. WAL lets
  the reader see the last commit while a write is running. Writes are serialized by an asyncio
  lock, and every multi-statement write is one `BEGIN IMMEDIATE ... COMMIT` transaction; a
  multi-statement read is one snapshot (`BEGIN ... COMMIT` on the reader, under its own lock).
- Every aiosqlite call is a hop to the connection's thread and back, so hot paths make few:
  context() (conversation, summary, recent turns, recall hits and their neighbours) is one
  SELECT, which is its own snapshot; an append is BEGIN IMMEDIATE, one UPDATE (counters,
  title, expiry, and the owner/expiry check through RETURNING), one INSERT, COMMIT.
- Conversations carry counters (messages, active messages, characters, summaries) updated in the
  same transaction as the turns, so status and thresholds never scan turns. Every read is
  bounded and served by an index on (conversation_id, compacted, is_summary, id).
- Ids are random (`secrets.token_urlsafe`). Every call takes the owner; a conversation of
  another owner, or one past its retention, behaves exactly like a missing one.
- Summarization folds older turns into a summary turn. The summarizer runs outside any
  transaction; the commit re-checks that the folded turns and the previous summary are still
  exactly as read, else it gives up and a later call retries. One summarization per
  conversation at a time.
- Turns and summaries are also in two FTS5 indexes (see memory/recall.py), written by the
  INSERT itself (a TEMP trigger on the writer connection, see _index_turns) and removed by
  triggers on delete, so recall and search never see text that reset, undo, delete or
  retention removed: `turns_fts` (owner-wide search) and `recall_fts` (recall within one
  conversation, with per-conversation terms so its cost does not grow with the database; see
  m005_recall_fts for why it is built that way).
- sqlite3 errors are wrapped in `StorageUnavailable` here, at the boundary.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import replace
from pathlib import Path

import aiosqlite

from .errors import (
    ConversationNotFound,
    EmptyMessage,
    InvalidInput,
    InvalidRetention,
    InvalidRole,
    InvalidTitle,
    MessageTooLong,
    StorageUnavailable,
)
from .migrations import migrate
from .policy import MAX_MESSAGE_CHARS, MAX_TITLE_CHARS, TITLE_CHARS, MemoryPolicy, database_path
from .recall import (
    MAX_RECALL_TERMS,
    RECALL_TEXT_FUNCTION,
    bigram_text,
    conversation_key,
    matched_terms,
    owner_key,
    query_terms,
    recall_query,
    recall_text,
    snippet,
    term_pattern,
)
from .records import (
    ContextWindow,
    Conversation,
    MemoryStatus,
    RecalledTurn,
    ResetResult,
    SearchHit,
    Turn,
    TurnMetrics,
)
from .summarize import ExtractiveSummarizer, Summarizer

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5_000
PURGE_EVERY_S = 60.0  # at most one opportunistic purge of expired conversations per minute
PURGE_CONVERSATIONS = 20  # per purge batch
PURGE_TURNS = 500  # rows per delete statement when purging

_CONVERSATION_COLUMNS = (
    "id, owner, title, persona_id, persona_version, retention_minutes, created_at, "
    "last_active_at, message_count, active_count, chars, expires_at"
)
_TURN_COLUMNS = (
    "id, conversation_id, role, content, created_at, is_summary, compacted, covers_from_id, "
    "covers_to_id, covers_count, incomplete"
)
_TURN_COLUMNS_T = ", ".join("t." + c.strip() for c in _TURN_COLUMNS.split(","))
_TURN_COLUMNS_N = ", ".join("n." + c.strip() for c in _TURN_COLUMNS.split(","))
_VISIBLE_SQL = (
    f"SELECT {_CONVERSATION_COLUMNS} FROM conversations "
    "WHERE id = ? AND owner = ? AND (expires_at IS NULL OR expires_at > ?)"
)
_NOT_FOUND = (
    "That conversation does not exist (it may have been deleted or expired). "
    "Start a new conversation."
)

# context() in one statement. Every row is (kind, 11 turn columns, rank, neighbour_of); the
# conversation row carries only its counters.
_CONVERSATION, _SUMMARY, _RECENT, _HIT, _NEIGHBOUR = range(5)
_RECENT_CTE = (
    f"recent AS (SELECT {_TURN_COLUMNS} FROM turns WHERE conversation_id = :conv "
    "AND compacted = 0 AND is_summary = 0 ORDER BY id DESC LIMIT :keep)"
)
_CONTEXT_BASE = (
    f"SELECT {_CONVERSATION}, message_count, active_count, "
    + ", ".join(["NULL"] * 11)
    + " FROM conversations WHERE id = :conv AND owner = :owner "
    "AND (expires_at IS NULL OR expires_at > :now) "
    f"UNION ALL SELECT * FROM (SELECT {_SUMMARY}, {_TURN_COLUMNS}, NULL, NULL FROM turns "
    "WHERE conversation_id = :conv AND compacted = 0 AND is_summary = 1 ORDER BY id DESC LIMIT 1) "
    f"UNION ALL SELECT {_RECENT}, *, NULL, NULL FROM recent"
)
_CONTEXT_SQL = f"WITH {_RECENT_CTE} {_CONTEXT_BASE}"
_CONTEXT_RECALL_SQL = (
    f"WITH {_RECENT_CTE}, "
    f"hits AS (SELECT {_TURN_COLUMNS_T}, recall_fts.rank AS rank FROM recall_fts "
    # CROSS JOIN keeps recall_fts the outer loop: its MATCH reads only this conversation's
    # doclists, in rank order.
    "CROSS JOIN turns t ON t.id = recall_fts.rowid "
    # Only turns older than the recent window are candidates; the rowid bound lets FTS5 skip
    # the rest of the doclists. Two conversations can share a key in the index, hence the
    # conversation_id check.
    "WHERE recall_fts MATCH :match "
    "AND recall_fts.rowid < (SELECT coalesce(min(id), 1 << 62) FROM recent) "
    "AND t.conversation_id = :conv AND t.is_summary = 0 ORDER BY recall_fts.rank LIMIT :hits) "
    f"{_CONTEXT_BASE} "
    f"UNION ALL SELECT {_HIT}, *, NULL FROM hits "
    # Each hit's neighbour: the reply to a user turn, the question before an assistant turn.
    f"UNION ALL SELECT {_NEIGHBOUR}, {_TURN_COLUMNS_N}, NULL, h.id FROM hits h "
    "JOIN turns n ON n.id = CASE WHEN h.role = 'user' "
    "THEN (SELECT id FROM turns WHERE conversation_id = :conv AND id > h.id AND is_summary = 0 "
    "ORDER BY id LIMIT 1) "
    "ELSE (SELECT id FROM turns WHERE conversation_id = :conv AND id < h.id AND is_summary = 0 "
    "ORDER BY id DESC LIMIT 1) END"
)


def validate_message(role: str, content: str) -> None:
    """Raise InvalidRole, EmptyMessage or MessageTooLong; nothing is stored when it raises."""
    if role not in ("user", "assistant"):
        raise InvalidRole(f'Role is {role!r}; a message is either "user" or "assistant".')
    if not isinstance(content, str) or not content.strip():
        raise EmptyMessage("The message is empty. Type something before sending.")
    if len(content) > MAX_MESSAGE_CHARS:
        raise MessageTooLong(len(content), MAX_MESSAGE_CHARS)


def make_title(text: str) -> str:
    """A title from a first message: whitespace collapsed, at most TITLE_CHARS characters."""
    text = " ".join(text.split())
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[: TITLE_CHARS - 1]
    space = cut.rfind(" ")
    if text[TITLE_CHARS - 1] != " " and space >= TITLE_CHARS // 2:
        cut = cut[:space]  # do not end on half a word
    return cut.rstrip(" ,.;:") + "…"


def clip_for_prompt(text: str, limit: int) -> str:
    """Keep the start and the end of a long message; the middle gives way."""
    if len(text) <= limit:
        return text
    marker = " […] "
    head = (limit - len(marker)) * 2 // 3
    tail = limit - len(marker) - head
    return text[:head] + marker + text[len(text) - tail :]


def _conversation(row: tuple) -> Conversation:
    return Conversation(*row)


def _turn(row: tuple) -> Turn:
    return Turn(
        id=row[0],
        conversation_id=row[1],
        role=row[2],
        content=row[3],
        created_at=row[4],
        is_summary=bool(row[5]),
        compacted=bool(row[6]),
        covers_from_id=row[7],
        covers_to_id=row[8],
        covers_count=row[9],
        incomplete=bool(row[10]),
    )


_ADVICE = {
    "SQLITE_BUSY": "another program is writing to it; try again in a moment",
    "SQLITE_LOCKED": "another program is writing to it; try again in a moment",
    "SQLITE_READONLY": "make the file and its directory writable",
    "SQLITE_FULL": "free some disk space",
    "SQLITE_IOERR": "check the disk",
    "SQLITE_CANTOPEN": "check the directory exists and is writable, or set MNEMO_DATA_DIR",
    "SQLITE_CORRUPT": "move the file aside and Mnemo starts a new one",
    "SQLITE_NOTADB": "move the file aside and Mnemo starts a new one",
}


def _unavailable(exc: BaseException, path: Path) -> StorageUnavailable:
    code = getattr(exc, "sqlite_errorname", "") or ""
    advice = next((a for k, a in _ADVICE.items() if code.startswith(k)), None)
    if advice is None:
        advice = "check the disk has space and the file is writable"
    return StorageUnavailable(f"The memory database at {path} failed ({exc}): {advice}.")


async def _connect(path: Path, *, query_only: bool = False) -> aiosqlite.Connection:
    # isolation_level=None: Python's sqlite3 never opens transactions behind our back; we
    # issue BEGIN IMMEDIATE / COMMIT ourselves.
    db = aiosqlite.connect(path, isolation_level=None)
    # aiosqlite's worker thread is not a daemon: a store never closed (an app stopped with
    # Ctrl-C) would hang the interpreter at exit. A daemon thread dies with the process; WAL
    # makes that as safe as a crash, which the SIGKILL test covers.
    if hasattr(db, "_thread"):
        db._thread.daemon = True
    db = await db
    try:
        await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = await db.execute_fetchall("PRAGMA journal_mode = WAL")
        if mode[0][0].lower() != "wal":
            raise sqlite3.OperationalError(f"could not switch to WAL (journal_mode={mode[0][0]})")
        # WAL + NORMAL: a commit survives the process dying (SIGKILL); only an OS crash or
        # power cut can lose the last few commits.
        await db.execute("PRAGMA synchronous = NORMAL")
        await db.execute("PRAGMA foreign_keys = ON")
        # recall_fts's delete trigger recomputes the indexed text with it (m005_recall_fts).
        await db.create_function(RECALL_TEXT_FUNCTION, 2, recall_text, deterministic=True)
        if query_only:
            await db.execute("PRAGMA query_only = ON")
    except BaseException:
        await db.close()
        raise
    return db


class ConversationStore:
    """Owns the Mnemo database: conversations, turns, summaries, metrics."""

    def __init__(
        self,
        writer: aiosqlite.Connection,
        reader: aiosqlite.Connection,
        path: Path,
        policy: MemoryPolicy,
        summarizer: Summarizer,
        clock: Callable[[], float],
    ):
        self._writer = writer
        self._reader = reader
        self.path = path
        self.policy = policy
        self.summarizer = summarizer
        self._clock = clock
        self._write_lock = asyncio.Lock()
        self._read_lock = asyncio.Lock()
        self._summarizing: set[str] = set()
        self._last_purge = float("-inf")
        self._closed = False

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        policy: MemoryPolicy | None = None,
        summarizer: Summarizer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> ConversationStore:
        """Open (creating and migrating as needed) the database.

        `path` is a directory (the file is <dir>/mnemo.db) or a .db file; None means
        $MNEMO_DATA_DIR, else ./data. Raises StorageUnavailable when it cannot be opened.
        """
        db_path = database_path(path)
        writer = reader = None
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            writer = await _connect(db_path)
            await migrate(writer)
            await _index_turns(writer)
            reader = await _connect(db_path, query_only=True)
        except (sqlite3.Error, OSError) as exc:
            for conn in (writer, reader):
                if conn is not None:
                    with suppress(Exception):
                        await conn.close()
            raise _unavailable(exc, db_path) from exc
        return cls(
            writer,
            reader,
            db_path,
            policy or MemoryPolicy(),
            summarizer or ExtractiveSummarizer(),
            clock,
        )

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        async with self._write_lock, self._read_lock:
            for conn in (self._writer, self._reader):
                with suppress(Exception):
                    await conn.close()

    async def __aenter__(self) -> ConversationStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- transactions -------------------------------------------------------------------

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction on the writer connection (BEGIN IMMEDIATE ... COMMIT)."""
        if self._closed:
            raise StorageUnavailable("The memory store is closed.")
        async with self._write_lock:
            db = self._writer
            try:
                await db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _unavailable(exc, self.path) from exc
            try:
                yield db
            except BaseException as exc:
                with suppress(sqlite3.Error, ValueError):
                    await db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _unavailable(exc, self.path) from exc
                raise
            try:
                await db.execute("COMMIT")
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error, ValueError):
                    await db.execute("ROLLBACK")
                raise _unavailable(exc, self.path) from exc

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A consistent snapshot on the reader connection."""
        if self._closed:
            raise StorageUnavailable("The memory store is closed.")
        async with self._read_lock:
            db = self._reader
            try:
                await db.execute("BEGIN")
                try:
                    yield db
                finally:
                    await db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _unavailable(exc, self.path) from exc

    async def _read_one(self, sql: str, params: tuple | dict[str, object]) -> list[tuple]:
        """One statement on the reader: its own snapshot, no BEGIN/COMMIT round trips."""
        if self._closed:
            raise StorageUnavailable("The memory store is closed.")
        async with self._read_lock:
            try:
                return list(await self._reader.execute_fetchall(sql, params))
            except sqlite3.Error as exc:
                raise _unavailable(exc, self.path) from exc

    async def _visible(self, db: aiosqlite.Connection, owner: str, conv_id: str) -> Conversation:
        rows = await db.execute_fetchall(_VISIBLE_SQL, (conv_id, owner, self._clock()))
        if not rows:
            raise ConversationNotFound(_NOT_FOUND)
        return _conversation(rows[0])

    def _expiry(self, retention_minutes: int | None, now: float) -> float | None:
        return None if retention_minutes is None else now + retention_minutes * 60.0

    # -- conversations ------------------------------------------------------------------

    async def create_conversation(
        self,
        owner: str,
        title: str | None = None,
        persona_id: str = "assistant",
        persona_version: int | None = None,
        retention_minutes: int | None = None,
    ) -> Conversation:
        _check_owner(owner)
        title = _clean_title(title) if title is not None else None
        _check_retention(retention_minutes)
        now = self._clock()
        conv_id = secrets.token_urlsafe(16)
        async with self._write() as db:
            await db.execute(
                "INSERT INTO conversations (id, owner, title, persona_id, persona_version, "
                "retention_minutes, created_at, last_active_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conv_id,
                    owner,
                    title,
                    persona_id,
                    persona_version,
                    retention_minutes,
                    now,
                    now,
                    self._expiry(retention_minutes, now),
                ),
            )
            conv = await self._visible(db, owner, conv_id)
        await self._maybe_purge()
        return conv

    async def get_conversation(self, owner: str, conv_id: str) -> Conversation:
        rows = await self._read_one(_VISIBLE_SQL, (conv_id, owner, self._clock()))
        if not rows:
            raise ConversationNotFound(_NOT_FOUND)
        return _conversation(rows[0])

    async def list_conversations(self, owner: str, limit: int = 100) -> list[Conversation]:
        """The owner's conversations, newest activity first."""
        rows = await self._read_one(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations "
            "WHERE owner = ? AND (expires_at IS NULL OR expires_at > ?) "
            "ORDER BY last_active_at DESC, rowid DESC LIMIT ?",
            (owner, self._clock(), max(0, int(limit))),
        )
        return [_conversation(r) for r in rows]

    async def _update_conversation(
        self, owner: str, conv_id: str, sql: str, params: tuple[object, ...]
    ) -> Conversation:
        async with self._write() as db:
            await self._visible(db, owner, conv_id)
            await db.execute(f"UPDATE conversations SET {sql} WHERE id = ?", (*params, conv_id))
            return await self._visible(db, owner, conv_id)

    async def rename_conversation(self, owner: str, conv_id: str, title: str) -> Conversation:
        return await self._update_conversation(owner, conv_id, "title = ?", (_clean_title(title),))

    async def set_persona(
        self, owner: str, conv_id: str, persona_id: str, persona_version: int | None = None
    ) -> Conversation:
        return await self._update_conversation(
            owner, conv_id, "persona_id = ?, persona_version = ?", (persona_id, persona_version)
        )

    async def set_retention(self, owner: str, conv_id: str, minutes: int | None) -> Conversation:
        """Forget the conversation after `minutes` idle (None: keep). Counts from now."""
        _check_retention(minutes)
        return await self._update_conversation(
            owner,
            conv_id,
            "retention_minutes = ?, expires_at = ?",
            (minutes, self._expiry(minutes, self._clock())),
        )

    async def delete_conversation(self, owner: str, conv_id: str) -> None:
        async with self._write() as db:
            await self._visible(db, owner, conv_id)
            await db.execute("DELETE FROM conversations WHERE id = ?", (conv_id,))

    # -- turns --------------------------------------------------------------------------

    async def append(
        self, owner: str, conv_id: str, role: str, content: str, *, incomplete: bool = False
    ) -> Turn:
        """Save a message. The first user message titles an untitled conversation."""
        validate_message(role, content)
        now = self._clock()
        title = make_title(content) if role == "user" else None
        async with self._write() as db:
            # The counters, title and expiry first: the UPDATE is also the visibility check
            # (owner, not expired), so a missing conversation changes nothing.
            visible = await db.execute_fetchall(
                "UPDATE conversations SET message_count = message_count + 1, "
                "active_count = active_count + 1, chars = chars + ?, last_active_at = ?, "
                "expires_at = CASE WHEN retention_minutes IS NULL THEN NULL "
                "ELSE ? + retention_minutes * 60.0 END, title = coalesce(title, ?) "
                "WHERE id = ? AND owner = ? AND (expires_at IS NULL OR expires_at > ?) "
                "RETURNING 1",
                (len(content), now, now, title, conv_id, owner, self._clock()),
            )
            if not visible:
                raise ConversationNotFound(_NOT_FOUND)
            # The writer's index_turn trigger adds it to both FTS indexes in this statement.
            cursor = await db.execute(
                "INSERT INTO turns (conversation_id, role, content, created_at, incomplete) "
                "VALUES (?, ?, ?, ?, ?)",
                (conv_id, role, content, now, int(incomplete)),
            )
            turn_id = cursor.lastrowid
        await self._maybe_purge()
        return Turn(
            id=turn_id,
            conversation_id=conv_id,
            role=role,  # type: ignore[arg-type]
            content=content,
            created_at=now,
            incomplete=incomplete,
        )

    async def transcript(
        self,
        owner: str,
        conv_id: str,
        limit: int | None = None,
        *,
        before_id: int | None = None,
    ) -> list[Turn]:
        """Everything the user can scroll, oldest first: compacted turns and summaries too.

        `limit` keeps the newest `limit` rows (None: all); `before_id` pages back from there:
        pass the oldest id you have to get the rows before it.
        """
        async with self._read() as db:
            await self._visible(db, owner, conv_id)
            rows = await db.execute_fetchall(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND id < ? "
                "ORDER BY id DESC LIMIT ?",
                (
                    conv_id,
                    (1 << 62) if before_id is None else before_id,
                    -1 if limit is None else max(0, int(limit)),
                ),
            )
        return [_turn(r) for r in reversed(rows)]

    async def _remove_turns(
        self, db: aiosqlite.Connection, conv_id: str, turns: list[Turn]
    ) -> None:
        ids = [t.id for t in turns]
        await db.execute(
            f"DELETE FROM turns WHERE id IN ({','.join('?' * len(ids))})",
            ids,
        )
        await db.execute(
            "UPDATE conversations SET message_count = message_count - ?, "
            "active_count = active_count - ?, chars = chars - ? WHERE id = ?",
            (
                len(turns),
                sum(not t.compacted for t in turns),
                sum(len(t.content) for t in turns),
                conv_id,
            ),
        )

    async def _trailing_active(self, db: aiosqlite.Connection, conv_id: str) -> list[Turn]:
        rows = await db.execute_fetchall(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND compacted = 0 "
            "AND is_summary = 0 ORDER BY id DESC LIMIT ?",
            (conv_id, self.policy.summarize_at + self.policy.fold_max),
        )
        return [_turn(r) for r in rows]  # newest first

    async def undo(self, owner: str, conv_id: str) -> list[Turn]:
        """Remove the last user message and everything after it; return what went, oldest first.

        Only messages still in the context can be undone; [] when there is none.
        """
        async with self._write() as db:
            await self._visible(db, owner, conv_id)
            dropped: list[Turn] = []
            for turn in await self._trailing_active(db, conv_id):
                dropped.append(turn)
                if turn.role == "user":
                    break
            else:
                return []
            await self._remove_turns(db, conv_id, dropped)
        return list(reversed(dropped))

    async def drop_last_reply(self, owner: str, conv_id: str) -> Turn | None:
        """For "retry": remove the assistant turn(s) after the last user message.

        Returns the newest removed reply, or None when the conversation ends on a user message.
        """
        async with self._write() as db:
            await self._visible(db, owner, conv_id)
            dropped: list[Turn] = []
            for turn in await self._trailing_active(db, conv_id):
                if turn.role != "assistant":
                    break
                dropped.append(turn)
            if not dropped:
                return None
            await self._remove_turns(db, conv_id, dropped)
        return dropped[0]

    async def reset(self, owner: str, conv_id: str) -> ResetResult:
        """Clear every turn and summary of the conversation; the conversation stays, empty."""
        async with self._write() as db:
            await self._visible(db, owner, conv_id)
            rows = await db.execute_fetchall(
                "SELECT count(*) FILTER (WHERE is_summary = 0), "
                "count(*) FILTER (WHERE is_summary = 1), "
                "coalesce(sum(length(content)) FILTER (WHERE is_summary = 0), 0) "
                "FROM turns WHERE conversation_id = ?",
                (conv_id,),
            )
            turns, summaries, chars = rows[0]
            await db.execute("DELETE FROM turns WHERE conversation_id = ?", (conv_id,))
            await db.execute(
                "UPDATE conversations SET message_count = 0, active_count = 0, chars = 0, "
                "summary_count = 0 WHERE id = ?",
                (conv_id,),
            )
        return ResetResult(turns=turns, summaries=summaries, chars=chars)

    # -- context ------------------------------------------------------------------------

    async def context(self, owner: str, conv_id: str, query: str | None = None) -> ContextWindow:
        """What the model should see: latest summary + the newest turns under the budget.

        With `query` (the new message), older turns that match it are recalled too: at most
        `recall_k`, each with its neighbour turn, within `recall_chars` of the budget.
        """
        policy = self.policy
        terms: list[str] = []
        if query and policy.recall_k:
            terms = query_terms(query[:MAX_MESSAGE_CHARS])[:MAX_RECALL_TERMS]
        params: dict[str, object] = {
            "conv": conv_id,
            "owner": owner,
            "now": self._clock(),
            "keep": policy.keep_recent,
        }
        if terms:
            params["match"] = recall_query(conv_id, terms)
            params["hits"] = policy.recall_k * 2
        # One statement is one snapshot, and one trip to the reader's thread instead of
        # BEGIN, four or more queries and COMMIT.
        rows = await self._read_one(_CONTEXT_RECALL_SQL if terms else _CONTEXT_SQL, params)
        conv_rows = [r for r in rows if r[0] == _CONVERSATION]
        if not conv_rows:
            raise ConversationNotFound(_NOT_FOUND)
        message_count, active_count = conv_rows[0][1], conv_rows[0][2]
        summary_rows = [r[1:12] for r in rows if r[0] == _SUMMARY]
        recent_rows = sorted((r[1:12] for r in rows if r[0] == _RECENT), reverse=True)
        recalled: list[RecalledTurn] = []
        if terms and message_count > len(recent_rows):
            # Stable sort: equal ranks keep FTS5's order, as ORDER BY rank returned them.
            hit_rows = sorted((r[1:13] for r in rows if r[0] == _HIT), key=lambda r: r[-1])
            neighbours = {r[13]: r[1:12] for r in rows if r[0] == _NEIGHBOUR}
            recalled = self._recall(terms, hit_rows, neighbours, {r[0] for r in recent_rows})
        summary = _turn(summary_rows[0]) if summary_rows else None
        if summary is not None and len(summary.content) > policy.summary_chars:
            # Written under an older, larger cap.
            clipped_summary = clip_for_prompt(summary.content, policy.summary_chars)
            summary = replace(summary, content=clipped_summary)
        used = len(summary.content) if summary else 0
        used += sum(len(r.turn.content) for r in recalled)
        remaining = policy.history_chars - used

        picked: list[Turn] = []
        clipped: list[int] = []
        evicted: list[int] = []
        for row in recent_rows:  # newest first
            turn = _turn(row)
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

    def _recall(
        self,
        terms: list[str],
        rows: list[tuple],
        neighbours: dict[int, tuple],
        exclude: set[int],
    ) -> list[RecalledTurn]:
        """The best-matching turns outside the recent window, each with its neighbour.

        `rows` are the FTS hits (turn columns + rank) in rank order; `neighbours` maps a hit's
        id to its neighbour row: the reply to a user turn, or the question before an
        assistant turn (the nearest non-summary turn either way; none if of the same role).
        """
        policy = self.policy
        per_turn = min(policy.message_chars, max(200, policy.recall_chars // 4))
        budget = policy.recall_chars
        chosen: dict[int, RecalledTurn] = {}
        hits = 0
        for row in rows:
            if hits >= policy.recall_k:
                break
            turn = _turn(row)
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
            neighbour = _turn(near) if near is not None and near[2] != turn.role else None
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

    async def search(
        self,
        owner: str,
        text: str,
        limit: int = 20,
        mark: tuple[str, str] = ("**", "**"),
    ) -> list[SearchHit]:
        """The owner's messages (and summaries) matching `text`, newest first, with snippets.

        `text` is plain user input, never FTS syntax; text without words returns [].
        Snippets are raw message text with matches wrapped in `mark`: escape before HTML.
        """
        terms = query_terms(text[:MAX_MESSAGE_CHARS])
        if not terms or limit <= 0:
            return []
        rows = await self._read_one(
            "SELECT t.id, t.conversation_id, c.title, t.role, t.content, t.created_at "
            "FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid "
            "JOIN conversations c ON c.id = t.conversation_id "
            "WHERE turns_fts MATCH ? AND c.owner = ? "
            "AND (c.expires_at IS NULL OR c.expires_at > ?) "
            "ORDER BY turns_fts.rowid DESC LIMIT ?",
            (_match("owner_key", owner_key(owner), terms), owner, self._clock(), int(limit)),
        )
        return [
            SearchHit(
                conversation_id=cid,
                conversation_title=title,
                turn_id=tid,
                role=role,
                snippet=snippet(content, terms, mark),
                created_at=created,
            )
            for tid, cid, title, role, content, created in rows
        ]

    async def find_conversations(
        self, owner: str, text: str, limit: int = 20
    ) -> list[Conversation]:
        """The owner's conversations whose title or messages match `text`, newest activity
        first: for a sidebar search box. Looks at the newest 200 matching messages."""
        terms = query_terms(text[:MAX_MESSAGE_CHARS])
        if not terms or limit <= 0:
            return []
        hits = await self.search(owner, text, limit=200)
        with_messages = {h.conversation_id for h in hits}
        pattern = term_pattern(terms)
        return [
            c
            for c in await self.list_conversations(owner, limit=1000)
            if c.id in with_messages or (c.title and pattern and pattern.search(c.title))
        ][:limit]

    async def status(self, owner: str, conv_id: str) -> MemoryStatus:
        """What the memory badge shows."""
        window = await self.context(owner, conv_id)
        rows = await self._read_one(
            f"SELECT {_CONVERSATION_COLUMNS}, summary_count FROM conversations "
            "WHERE id = ? AND owner = ? AND (expires_at IS NULL OR expires_at > ?)",
            (conv_id, owner, self._clock()),
        )
        if not rows:
            raise ConversationNotFound(_NOT_FOUND)
        conv = _conversation(rows[0][:-1])
        return MemoryStatus(
            total=conv.message_count,
            active=conv.active_count,
            compacted=conv.message_count - conv.active_count,
            summaries=rows[0][-1],
            summary_covers=(window.summary.covers_count or 0) if window.summary else 0,
            context_chars=window.chars,
            budget=window.budget,
            summarizing=conv_id in self._summarizing,
            retention_minutes=conv.retention_minutes,
            expires_at=conv.expires_at,
        )

    # -- summarization ------------------------------------------------------------------

    def is_summarizing(self, conv_id: str) -> bool:
        return conv_id in self._summarizing

    async def summarize_if_needed(self, owner: str, conv_id: str) -> bool:
        """Fold older turns into a summary when the active ones reach `summarize_at`.

        Returns True when it compacted. False when not needed, when a summarization of this
        conversation is already running, when the summarizer failed (logged; nothing changed),
        or when the conversation changed underneath in a way that invalidates the fold
        (reset, undo, delete); a later call retries.
        """
        if conv_id in self._summarizing:
            return False
        self._summarizing.add(conv_id)
        try:
            return await self._summarize(owner, conv_id)
        finally:
            self._summarizing.discard(conv_id)

    async def _summarize(self, owner: str, conv_id: str) -> bool:
        policy = self.policy
        async with self._read() as db:
            conv = await self._visible(db, owner, conv_id)
            if conv.active_count < policy.summarize_at:
                return False
            fold = min(conv.active_count - policy.keep_recent, policy.fold_max)
            rows = await db.execute_fetchall(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND compacted = 0 "
                "AND is_summary = 0 ORDER BY id LIMIT ?",
                (conv_id, fold),
            )
            prev_rows = await db.execute_fetchall(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND compacted = 0 "
                "AND is_summary = 1 ORDER BY id DESC LIMIT 1",
                (conv_id,),
            )
        turns = [_turn(r) for r in rows]
        previous = _turn(prev_rows[0]) if prev_rows else None
        if not turns:
            return False

        started = time.perf_counter()
        try:
            text = await self.summarizer.summarize(
                previous.content if previous else None, turns, policy.summary_chars
            )
        except Exception:
            log.warning(
                "Summarizer %s failed for conversation %s; nothing changed, will retry later",
                type(self.summarizer).__name__,
                conv_id,
                exc_info=True,
            )
            return False
        text = (text or "").strip()[: policy.summary_chars]
        if not text:
            log.warning("Summarizer returned an empty summary for %s; not compacting", conv_id)
            return False

        first, last = turns[0].id, turns[-1].id
        now = self._clock()
        async with self._write() as db:
            # Re-check: the turns we folded are all still there and active, and no other
            # summary was written meanwhile. Appends after `last` do not matter.
            try:
                await self._visible(db, owner, conv_id)
            except ConversationNotFound:
                return False
            check = await db.execute_fetchall(
                "SELECT count(*) FROM turns WHERE conversation_id = ? AND id BETWEEN ? AND ? "
                "AND is_summary = 0 AND compacted = 0",
                (conv_id, first, last),
            )
            latest = await db.execute_fetchall(
                "SELECT id FROM turns WHERE conversation_id = ? AND compacted = 0 "
                "AND is_summary = 1 ORDER BY id DESC LIMIT 1",
                (conv_id,),
            )
            latest_id = latest[0][0] if latest else None
            if check[0][0] != len(turns) or latest_id != (previous.id if previous else None):
                log.info("Conversation %s changed during summarization; will retry", conv_id)
                return False
            covers_from = previous.covers_from_id if previous else first
            covers_count = (previous.covers_count or 0 if previous else 0) + len(turns)
            await db.execute(
                "INSERT INTO turns (conversation_id, role, content, created_at, is_summary, "
                "covers_from_id, covers_to_id, covers_count) "
                "VALUES (?, 'summary', ?, ?, 1, ?, ?, ?)",
                (conv_id, text, now, covers_from, last, covers_count),
            )
            await db.execute(
                "UPDATE turns SET compacted = 1 WHERE conversation_id = ? AND id BETWEEN ? AND ? "
                "AND is_summary = 0 AND compacted = 0",
                (conv_id, first, last),
            )
            if previous is not None:
                await db.execute("UPDATE turns SET compacted = 1 WHERE id = ?", (previous.id,))
            await db.execute(
                "UPDATE conversations SET active_count = active_count - ?, "
                "summary_count = summary_count + 1 WHERE id = ?",
                (len(turns), conv_id),
            )
        log.info(
            "Summarized %d turns of %s into %d chars in %.0f ms",
            len(turns),
            conv_id,
            len(text),
            (time.perf_counter() - started) * 1000,
        )
        return True

    # -- metrics ------------------------------------------------------------------------

    async def record_metrics(self, owner: str, conv_id: str | None, metrics: TurnMetrics) -> None:
        """Record one model call's numbers (never text). Kept when the conversation is deleted,
        so the quota cannot be reset by deleting conversations."""
        _check_owner(owner)
        async with self._write() as db:
            await db.execute(
                "INSERT INTO turn_metrics (owner, conversation_id, model, input_tokens, "
                "output_tokens, latency_ms, first_token_ms, status, error_kind, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    owner,
                    conv_id,
                    metrics.model,
                    metrics.input_tokens,
                    metrics.output_tokens,
                    metrics.latency_ms,
                    metrics.first_token_ms,
                    metrics.status,
                    metrics.error_kind,
                    self._clock(),
                ),
            )

    async def count_turn_requests(self, owner: str, since: float) -> int:
        """How many model calls the owner made since `since` (epoch seconds): the quota count."""
        rows = await self._read_one(
            "SELECT count(*) FROM turn_metrics WHERE owner = ? AND created_at >= ?",
            (owner, since),
        )
        return rows[0][0]

    # -- retention ----------------------------------------------------------------------

    async def purge_expired(
        self, max_conversations: int = PURGE_CONVERSATIONS, chunk: int = PURGE_TURNS
    ) -> int:
        """Delete up to `max_conversations` expired conversations, turns in chunks of `chunk`
        rows per transaction so a long conversation never holds the write lock for long.

        Expired conversations are already invisible, so a purge cut short is harmless.
        Returns how many conversations were deleted.
        """
        rows = await self._read_one(
            "SELECT id FROM conversations WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?",
            (self._clock(), max_conversations),
        )
        purged = 0
        for (conv_id,) in rows:
            while True:
                async with self._write() as db:
                    cursor = await db.execute(
                        "DELETE FROM turns WHERE id IN (SELECT id FROM turns "
                        "WHERE conversation_id = ? ORDER BY id LIMIT ?)",
                        (conv_id, chunk),
                    )
                    if cursor.rowcount < chunk:
                        # Re-check expiry inside the transaction: a write may have revived it.
                        cursor = await db.execute(
                            "DELETE FROM conversations WHERE id = ? AND expires_at <= ?",
                            (conv_id, self._clock()),
                        )
                        purged += cursor.rowcount
                        break
        return purged

    async def _maybe_purge(self) -> None:
        now = self._clock()
        if now - self._last_purge < PURGE_EVERY_S:
            return
        self._last_purge = now
        try:
            await self.purge_expired()
        except StorageUnavailable:
            log.warning("Purging expired conversations failed; will retry", exc_info=True)


async def _index_turns(db: aiosqlite.Connection) -> None:
    """Index every turn the writer inserts, inside the INSERT itself (a TEMP trigger: it
    lives on this connection only, so the database schema stays as the migrations made it).

    One statement instead of three per insert; each is a round trip to aiosqlite's thread.
    """
    for name, fn in (
        ("mnemo_bigram_text", bigram_text),
        ("mnemo_owner_key", owner_key),
        ("mnemo_conversation_key", conversation_key),
    ):
        await db.create_function(name, 1, fn, deterministic=True)
    await db.execute(
        "CREATE TEMP TRIGGER index_turn AFTER INSERT ON main.turns BEGIN "
        "INSERT INTO turns_fts (rowid, body, owner_key, conversation_key) VALUES (new.id, "
        "mnemo_bigram_text(new.content), "
        "mnemo_owner_key((SELECT owner FROM conversations WHERE id = new.conversation_id)), "
        "mnemo_conversation_key(new.conversation_id)); "
        "INSERT INTO recall_fts (rowid, body) VALUES (new.id, "
        f"{RECALL_TEXT_FUNCTION}(new.conversation_id, new.content)); "
        "END"
    )


def _match(key_column: str, key: str, terms: list[str]) -> str:
    """An FTS5 expression: the key (owner or conversation) AND any of the quoted terms."""
    quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return f'{key_column} : "{key}" AND body : ({quoted})'


def _check_owner(owner: str) -> None:
    if not isinstance(owner, str) or not 1 <= len(owner) <= 200:
        raise InvalidInput("The owner id must be a non-empty string of at most 200 characters.")


def _clean_title(title: str) -> str:
    cleaned = " ".join(str(title).split())
    if not cleaned:
        raise InvalidTitle("The title is empty. Type a name for the conversation.")
    if len(cleaned) > MAX_TITLE_CHARS:
        raise InvalidTitle(
            f"The title is {len(cleaned):,} characters; the limit is {MAX_TITLE_CHARS}. Shorten it."
        )
    return cleaned


def _check_retention(minutes: int | None) -> None:
    if minutes is None:
        return
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes <= 0:
        raise InvalidRetention(
            f"Retention is {minutes!r}; use a whole number of minutes above 0, or None to keep."
        )
