"""`ConversationStore`: conversations and their turns in one SQLite database.

Storage design
--------------
- One long-lived aiosqlite connection writes; a query-only connection reads. WAL lets
  the reader sees the last commit while a write is running. Writes are serialized by a lock
  with a lane for a user's new message (its reply waits for it), and every multi-statement
  write is one `BEGIN IMMEDIATE ... COMMIT` transaction; a multi-statement read is one
  snapshot (`BEGIN ... COMMIT` on an idle reader). memory/connection.py holds the connections
  and these transactions.
- Every aiosqlite call is a hop to the connection's thread and back, so hot paths make few:
  context() (conversation, summary, recent turns, recall hits and their neighbours) is one
  SELECT, which is its own snapshot; an append is BEGIN IMMEDIATE, one UPDATE (counters,
  title, expiry, and the owner/expiry check through RETURNING), one INSERT, COMMIT, all in one
  hop (`Connections.transact`). All SQL text is in memory/sql.py.
- What the model sees is assembled from the context query's rows by a pure function
  (memory/context.py), and rendered there as the one memory note the model receives.
- Conversations carry counters (messages, active messages, characters, summaries) updated in the
  same transaction as the turns, so status and thresholds never scan turns. Every read is
  bounded and served by an index on (conversation_id, compacted, is_summary, id).
- Ids are random (`secrets.token_urlsafe`). Every call takes the owner; a conversation of
  another owner, or one past its retention, behaves exactly like a missing one. Expired
  conversations are purged in the background (memory/retention.py).
- Summarization folds older turns into a summary turn (memory/compaction.py). The summarizer
  runs outside any transaction; the commit re-checks that the folded turns and the previous
  summary are still exactly as read, else it gives up and a later call retries. One
  summarization per conversation at a time.
- Turns and summaries are also in two FTS5 indexes (see memory/recall.py), written by the
  INSERT itself (a TEMP trigger on the writer connection, see connection.index_turns) and
  removed by triggers on delete, so recall and search never see text that reset, undo, delete
  or retention removed: `turns_fts` (owner-wide search) and `recall_fts` (recall within one
  conversation, with per-conversation terms so its cost does not grow with the database; see
  m005_recall_fts for why it is built that way).
- Input is checked before anything is written (memory/validation.py); sqlite3 errors are
  wrapped in `StorageUnavailable` at the connection boundary.
- This is the SQLite backend of `memory.backend.MemoryBackend`; `memory.open_store()` picks a
  backend from a path or URL.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import astuple

import aiosqlite

from . import compaction, imports, retention, sql
from .connection import Connections
from .edits import ConversationEdit, edit_columns
from .errors import (
    NOT_FOUND_MESSAGE,
    ConversationNotFound,
    StorageUnavailable,
)
from .policy import MemoryPolicy, database_path
from .reading import read_context, read_search
from .recall import (
    lone_cjk,
    matching_conversations,
    query_terms,
    snippet,
)
from .records import (
    ContextWindow,
    Conversation,
    MemoryStatus,
    Origin,
    Outcome,
    ResetResult,
    SearchHit,
    Turn,
    TurnMetrics,
)
from .replies import ReplyStore
from .steering import SteeringVerbs
from .summarize import ExtractiveSummarizer, Summarizer
from .token_store import (  # noqa: F401 (re-exported: tests import them from here)
    MAX_TOKENS_PER_OWNER,
    TOKEN_TOUCH_EVERY_S,
    TokenStore,
)
from .validation import (
    MAX_MESSAGE_CHARS,
    check_created_at,
    check_import,
    check_outcome,
    check_owner,
    check_retention,
    clean_title,
    make_title,
    validate_message,
)
from .vector_fill import VectorFiller
from .vector_rows import SqliteVectorRows
from .vectors import Embedder, embed_packed

log = logging.getLogger(__name__)


class ConversationStore(ReplyStore, TokenStore, SteeringVerbs):
    """Owns the Mnemo database: conversations, turns, summaries, metrics."""

    def __init__(
        self,
        db: Connections,
        policy: MemoryPolicy,
        summarizer: Summarizer,
        clock: Callable[[], float],
        embedder: Embedder | None = None,
    ):
        self._db = db
        self.path = db.path
        self.policy = policy
        self.summarizer = summarizer
        self.embedder = embedder
        self._clock = clock
        self._summarizing: set[str] = set()
        self._last_purge = float("-inf")
        # Vectors are written after their turns, in the background (memory/vector_fill.py).
        self._vectors = VectorFiller(embedder, SqliteVectorRows(db))

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        policy: MemoryPolicy | None = None,
        summarizer: Summarizer | None = None,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
    ) -> ConversationStore:
        """Open (creating and migrating as needed) the database.

        `path` is a directory (the file is <dir>/mnemo.db) or a .db file. With an `embedder`,
        every message gets a vector (in the background, memory/vector_fill.py; older turns
        lacking one of this model too) and recall adds meaning to keywords.
        Raises StorageUnavailable when it cannot be opened.
        """
        db = await Connections.open(database_path(path))
        policy = policy or MemoryPolicy()
        store = cls(db, policy, summarizer or ExtractiveSummarizer(), clock, embedder)
        await store._vectors.start_backfill()
        return store

    async def close(self) -> None:
        await self._vectors.aclose()  # queued vectors are written first, within a deadline
        await self._db.close()

    async def flush_vectors(self) -> None:
        """Until the vectors queued so far (and the backfill) are written: tests, bench."""
        await self._vectors.flush()

    async def __aenter__(self) -> ConversationStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _visible(self, db: aiosqlite.Connection, owner: str, conv_id: str) -> Conversation:
        rows = await db.execute_fetchall(sql.VISIBLE_CONVERSATION, (conv_id, owner, self._clock()))
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return sql.conversation_from_row(rows[0])

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
        now = self._clock()
        conv_id = secrets.token_urlsafe(16)
        expires = retention.expires_at(retention_minutes, now)
        async with self._db.write() as db:
            await db.execute(
                sql.INSERT_CONVERSATION,
                (
                    conv_id,
                    owner,
                    title,
                    persona_id,
                    persona_version,
                    retention_minutes,
                    now,
                    now,
                    expires,
                ),
            )
            conv = await self._visible(db, owner, conv_id)
        await self._maybe_purge()
        return conv

    async def get_conversation(self, owner: str, conv_id: str) -> Conversation:
        rows = await self._db.read_one(sql.VISIBLE_CONVERSATION, (conv_id, owner, self._clock()))
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return sql.conversation_from_row(rows[0])

    async def list_conversations(self, owner: str, limit: int = 100) -> list[Conversation]:
        """The owner's conversations, newest activity first."""
        rows = await self._db.read_one(
            sql.LIST_CONVERSATIONS, (owner, self._clock(), max(0, int(limit)))
        )
        return [sql.conversation_from_row(r) for r in rows]

    async def update_conversation(
        self, owner: str, conv_id: str, edit: ConversationEdit
    ) -> Conversation:
        """Every change in `edit` in one UPDATE: all of them, or (one refused) none."""
        columns = edit_columns(edit, self._clock())
        async with self._db.write() as db:
            await self._visible(db, owner, conv_id)
            if columns:
                assignments = ", ".join(f"{name} = ?" for name in columns)
                await db.execute(
                    f"UPDATE conversations SET {assignments} WHERE id = ?",
                    (*columns.values(), conv_id),
                )
            return await self._visible(db, owner, conv_id)

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
        async with self._db.write() as db:
            await self._visible(db, owner, conv_id)
            await db.execute(sql.DELETE_CONVERSATION, (conv_id,))

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
        ended when not as planned (then incomplete). Its vector: the one context() made of
        this message, written with it, else made in the background after it; a `draft` (a
        reply's progress) gets none until its final save (memory/vector_fill.py)."""
        validate_message(role, content, speaker, origin)
        outcome_note = check_outcome(outcome, outcome_note)
        incomplete = incomplete or outcome is not None
        now = self._clock()
        when = check_created_at(created_at, now)
        title = make_title(content) if role == "user" and origin is None else None
        vector = self._vectors.take_fresh(conv_id, content) if role == "user" else None
        row = (conv_id, role, content, when, int(incomplete), speaker, origin, outcome)

        def insert(db: sqlite3.Connection) -> int:
            # The counters, title and expiry first: the UPDATE is also the visibility check
            # (owner, not expired), so a missing conversation changes nothing.
            counters = (len(content), now, now, title, conv_id, owner, now)
            if not db.execute(sql.APPEND_COUNTERS, counters).fetchall():
                raise ConversationNotFound(NOT_FOUND_MESSAGE)
            # The writer's index_turn trigger adds it to both FTS indexes in this statement.
            turn_id = db.execute(sql.INSERT_TURN, (*row, outcome_note)).lastrowid
            if vector is not None:
                db.execute(sql.INSERT_VECTOR, (conv_id, turn_id, self.embedder.name, vector))
            return turn_id

        # The user's message is urgent: its reply is waiting for it (memory/gate.py).
        turn_id = await self._db.transact(insert, urgent=role == "user")
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
        before anything is written (InvalidInput names the first bad one), then one
        transaction writes them. Long imports fold into summaries through
        `summarize_if_needed`, like any conversation.
        """
        check_owner(owner)
        title = clean_title(title) if title is not None else None
        now = self._clock()
        rows = check_import(list(messages), now)
        vectors = await embed_packed(self.embedder, [c for _, c, _ in rows])
        async with self._db.write() as db:
            conv_id = await imports.write_conversation(
                db, owner, rows, vectors, self.embedder, title, persona_id, persona_version, now
            )
            return await self._visible(db, owner, conv_id)

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
        async with self._db.read() as db:
            await self._visible(db, owner, conv_id)
            rows = await db.execute_fetchall(
                sql.TRANSCRIPT_PAGE,
                (
                    conv_id,
                    (1 << 62) if before_id is None else before_id,
                    -1 if limit is None else max(0, int(limit)),
                ),
            )
        return [sql.turn_from_row(r) for r in reversed(rows)]

    async def _remove_turns(
        self, db: aiosqlite.Connection, conv_id: str, turns: list[Turn]
    ) -> None:
        await db.execute(sql.delete_turns(len(turns)), [t.id for t in turns])
        await db.execute(
            sql.REMOVED_COUNTERS,
            (
                len(turns),
                sum(not t.compacted for t in turns),
                sum(len(t.content) for t in turns),
                conv_id,
            ),
        )

    async def _trailing_active(self, db: aiosqlite.Connection, conv_id: str) -> list[Turn]:
        rows = await db.execute_fetchall(
            sql.TRAILING_ACTIVE, (conv_id, self.policy.summarize_at + self.policy.fold_max)
        )
        return [sql.turn_from_row(r) for r in rows]  # newest first

    async def undo(self, owner: str, conv_id: str) -> list[Turn]:
        """Remove the last user message and everything after it; return what went, oldest first.

        Only messages still in the context can be undone; [] when there is none.
        """
        async with self._db.write() as db:
            await self._visible(db, owner, conv_id)
            dropped: list[Turn] = []
            for turn in await self._trailing_active(db, conv_id):
                dropped.append(turn)
                if turn.role == "user" and not turn.is_tool_note:
                    break
            else:
                return []
            await self._remove_turns(db, conv_id, dropped)
        return list(reversed(dropped))

    async def drop_last_reply(self, owner: str, conv_id: str) -> Turn | None:
        """For "retry": remove the reply (and its tool notes) after the last user message.
        Returns the newest removed reply, or None when the conversation ends on a user message."""
        async with self._db.write() as db:
            await self._visible(db, owner, conv_id)
            dropped: list[Turn] = []
            for turn in await self._trailing_active(db, conv_id):
                if turn.role != "assistant" and not turn.is_tool_note:
                    break
                dropped.append(turn)
            replies = [t for t in dropped if t.role == "assistant"]
            if not replies:
                return None
            await self._remove_turns(db, conv_id, dropped)
        return replies[0]

    async def reset(self, owner: str, conv_id: str) -> ResetResult:
        """Forget the conversation's turns, summaries, pins, title and plots ("about me" stays)."""
        async with self._db.write() as db:
            conv = await self._visible(db, owner, conv_id)
            turns, summaries, chars = (await db.execute_fetchall(sql.RESET_TALLY, (conv_id,)))[0]
            pinned = await db.execute(sql.DELETE_CONVERSATION_PINS, (conv_id,))
            await db.execute(sql.DELETE_ALL_TURNS, (conv_id,))
            await db.execute(sql.RESET_COUNTERS, (conv_id,))
            await db.execute(sql.DETACH_METRICS, (conv_id,))
        return ResetResult(turns, summaries, chars, pinned.rowcount, conv.title is not None)

    # -- context and search -------------------------------------------------------------

    async def expect(self, owner: str, conv_id: str, query: str) -> None:
        """Start embedding `query`, the coming message of `conv_id`, for the context() that
        recalls by it: a turn with other reads to make first lets the embedding run meanwhile.
        Returns at once; nothing is read or written."""
        if query and self.policy.recall_k:
            self._vectors.expect(conv_id, query)

    async def context(self, owner: str, conv_id: str, query: str | None = None) -> ContextWindow:
        """What the model should see: latest summary + the newest turns under the budget.

        With `query` (the new message), older turns that match it by words or meaning are
        recalled too, as snippets packed into `recall_chars` (memory/packing.py).
        """
        return await read_context(
            self._db, self._vectors, self.policy, owner, conv_id, query, self._clock()
        )

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
        characters = lone_cjk(text)  # 高 alone: not in the pair index (memory/recall.py)
        if not (terms or characters) or limit <= 0:
            return []
        rows = await read_search(self._db, owner, terms, characters, self._clock(), int(limit))
        return [
            SearchHit(
                conversation_id=cid,
                conversation_title=title,
                turn_id=tid,
                role=role,
                snippet=snippet(content, [*terms, *characters], mark),
                created_at=created,
                speaker=speaker,
            )
            for tid, cid, title, role, content, created, speaker in rows
        ]

    async def find_conversations(
        self, owner: str, text: str, limit: int = 20
    ) -> list[Conversation]:
        """The owner's conversations whose title or messages match `text`, newest activity
        first: for a sidebar search box. Looks at the newest 200 matching messages."""
        terms = query_terms(text[:MAX_MESSAGE_CHARS])
        if not terms or limit <= 0:
            return []
        hits = {h.conversation_id for h in await self.search(owner, text, limit=200)}
        conversations = await self.list_conversations(owner, limit=1000)
        return matching_conversations(conversations, hits, terms, limit)

    async def status(self, owner: str, conv_id: str) -> MemoryStatus:
        """What the memory badge shows."""
        window = await self.context(owner, conv_id)
        rows = await self._db.read_one(
            sql.CONVERSATION_WITH_SUMMARY_COUNT, (conv_id, owner, self._clock())
        )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        conv = sql.conversation_from_row(rows[0][:-1])
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
            pinned=len(window.pinned),
            pinned_chars=window.part_chars()["pinned"],
            summary_edited=bool(window.summary and window.summary.edited),
            about_me_on=(await self.settings(owner)).about_me,
            about_me_pins=sum(p.about_me for p in window.pinned),
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
            return await compaction.summarize(
                self._db, self.policy, self.summarizer, self._clock, owner, conv_id
            )
        finally:
            self._summarizing.discard(conv_id)

    # -- metrics ------------------------------------------------------------------------

    async def record_metrics(self, owner: str, conv_id: str | None, metrics: TurnMetrics) -> None:
        """Record one model call's numbers (never text). Kept when the conversation is deleted,
        so the quota cannot be reset by deleting conversations."""
        check_owner(owner)
        row = (owner, conv_id, self._clock(), *astuple(metrics))
        await self._db.transact(lambda db: db.execute(sql.INSERT_METRICS, row))

    async def count_turn_requests(self, owner: str, since: float) -> int:
        """How many model calls the owner made since `since` (epoch seconds): the quota count."""
        rows = await self._db.read_one(sql.COUNT_TURN_REQUESTS, (owner, since))
        return rows[0][0]

    # -- retention ----------------------------------------------------------------------

    async def purge_expired(
        self,
        max_conversations: int = retention.PURGE_CONVERSATIONS,
        chunk: int = retention.PURGE_TURNS,
    ) -> int:
        """Delete up to `max_conversations` expired conversations, turns in chunks of `chunk`
        rows per transaction so a long conversation never holds the write lock for long.

        Expired conversations are already invisible, so a purge cut short is harmless.
        Returns how many conversations were deleted.
        """
        return await retention.purge_expired(self._db, self._clock, max_conversations, chunk)

    async def _maybe_purge(self) -> None:
        now = self._clock()
        if not retention.purge_due(self._last_purge, now):
            return
        self._last_purge = now
        try:
            await self.purge_expired()
        except StorageUnavailable:
            log.warning("Purging expired conversations failed; will retry", exc_info=True)
