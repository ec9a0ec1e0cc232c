"""The alternatives Mnemo is measured against, written from their published designs.

- `ReferenceDesign`: the SQLite design this app grew from (a published blog design). One table,
  an index on (session_id, created_at DESC), a new aiosqlite connection for every call, the
  newest 20 rows loaded with LIMIT and reversed, and at >= 101 rows the oldest (count - 20) rows
  joined as "[role] content" lines, cut to the first 10,000 characters, stored as one summary
  row, the old rows deleted, all in one transaction.
- `LangChainHistory`: LangChain's `SQLChatMessageHistory` (langchain-community) on the same data.
- `DropOldest`: the Redis reference design: the last N rounds, each message clipped, the oldest
  dropped past a total cap. It is a policy over a list (Redis LPUSH + LTRIM), so it is measured
  for prompt size and memory quality only, not for storage speed.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import warnings
from collections.abc import Iterable
from pathlib import Path

import aiosqlite

REFERENCE_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'summary')),
    content TEXT NOT NULL CHECK (length(content) <= 10000),
    created_at TEXT DEFAULT (datetime('now')),
    is_summary INTEGER DEFAULT 0
);
"""
REFERENCE_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_conversations_session_created "
    "ON conversations (session_id, created_at DESC)"
)


def sqlite_timestamp(ts: float) -> str:
    """The text datetime('now') stores, for a unix timestamp."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


class ReferenceDesign:
    """The SQLite reference design, call for call: every method opens its own connection."""

    name = "SQLite reference design"
    keep_recent = 20
    summarize_at = 101
    summary_chars = 10_000

    def __init__(self, path: Path):
        self.path = Path(path)

    def create_schema(self) -> None:
        with sqlite3.connect(self.path) as db:
            db.executescript(REFERENCE_SCHEMA)
            db.execute(REFERENCE_INDEX)

    def bulk_load(self, rows: Iterable[tuple[str, str, str, float]]) -> None:
        """(session_id, role, content, created_at) rows in one transaction; index built after."""
        with sqlite3.connect(self.path) as db:
            db.executescript(REFERENCE_SCHEMA)
            db.execute("PRAGMA synchronous = OFF")
            db.executemany(
                "INSERT INTO conversations (session_id, role, content, created_at) "
                "VALUES (?, ?, ?, ?)",
                ((s, r, c, sqlite_timestamp(t)) for s, r, c, t in rows),
            )
            db.execute(REFERENCE_INDEX)

    async def load(self, session_id: str) -> list[dict[str, str]]:
        """The newest 20 rows (a summary row among them if any), oldest first."""
        async with aiosqlite.connect(self.path) as db:
            cursor = await db.execute(
                "SELECT role, content, is_summary FROM conversations WHERE session_id = ? "
                "ORDER BY created_at DESC, id DESC LIMIT ?",
                (session_id, self.keep_recent),
            )
            rows = await cursor.fetchall()
        return [{"role": r, "content": c, "is_summary": bool(s)} for r, c, s in reversed(rows)]

    async def load_with_summary(self, session_id: str) -> list[dict[str, str]]:
        """`load()`, plus the latest summary row when it is not among the newest 20.

        As published, the summary reaches the model only while it is one of the newest 20 rows
        (it sorts before the 20 rows it kept, so in practice never). The memory-quality and
        prompt-growth benchmarks give the design the benefit of the doubt and use this.
        """
        async with aiosqlite.connect(self.path) as db:
            cursor = await db.execute(
                "SELECT role, content, is_summary FROM conversations WHERE session_id = ? "
                "ORDER BY created_at DESC, id DESC LIMIT ?",
                (session_id, self.keep_recent),
            )
            rows = list(reversed(await cursor.fetchall()))
            if not any(is_summary for _, _, is_summary in rows):
                cursor = await db.execute(
                    "SELECT role, content, is_summary FROM conversations WHERE session_id = ? "
                    "AND is_summary = 1 ORDER BY created_at DESC, id DESC LIMIT 1",
                    (session_id,),
                )
                rows = list(await cursor.fetchall()) + rows
        return [{"role": r, "content": c, "is_summary": bool(s)} for r, c, s in rows]

    async def append(
        self, session_id: str, role: str, content: str, created_at: str | None = None
    ) -> None:
        """Insert one message; created_at defaults to datetime('now') as in the schema."""
        async with aiosqlite.connect(self.path) as db:
            if created_at is None:
                await db.execute(
                    "INSERT INTO conversations (session_id, role, content) VALUES (?, ?, ?)",
                    (session_id, role, content),
                )
            else:
                await db.execute(
                    "INSERT INTO conversations (session_id, role, content, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    (session_id, role, content, created_at),
                )
            await db.commit()

    async def summarize_if_needed(self, session_id: str) -> bool:
        """At >= 101 rows fold the oldest (count - 20) into one truncated summary row."""
        async with aiosqlite.connect(self.path) as db:
            await db.execute("BEGIN IMMEDIATE")
            cursor = await db.execute(
                "SELECT count(*) FROM conversations WHERE session_id = ?", (session_id,)
            )
            (count,) = await cursor.fetchone()
            if count < self.summarize_at:
                await db.rollback()
                return False
            cursor = await db.execute(
                "SELECT id, role, content, created_at FROM conversations WHERE session_id = ? "
                "ORDER BY created_at ASC, id ASC LIMIT ?",
                (session_id, count - self.keep_recent),
            )
            old = await cursor.fetchall()
            text = "\n".join(f"[{role}] {content}" for _, role, content, _ in old)
            # The summary row takes the time of the newest row it replaces, so it sorts before
            # the 20 it keeps and is loaded as the oldest of the newest 20.
            await db.execute(
                "INSERT INTO conversations (session_id, role, content, created_at, is_summary) "
                "VALUES (?, 'summary', ?, ?, 1)",
                (session_id, text[: self.summary_chars], old[-1][3]),
            )
            await db.executemany(
                "DELETE FROM conversations WHERE id = ?", [(row[0],) for row in old]
            )
            await db.commit()
            return True

    async def count(self) -> int:
        async with aiosqlite.connect(self.path) as db:
            cursor = await db.execute("SELECT count(*) FROM conversations WHERE is_summary = 0")
            (n,) = await cursor.fetchone()
            return n


class DropOldest:
    """The Redis reference design: last `rounds` rounds, each clipped, capped in total."""

    name = "drop-oldest (Redis reference design)"

    def __init__(self, rounds: int = 10, message_chars: int = 500, total_chars: int = 6_000):
        self.rounds = rounds
        self.message_chars = message_chars
        self.total_chars = total_chars

    def context(self, messages: list[tuple[str, str]]) -> list[tuple[str, str]]:
        recent = [(r, c[: self.message_chars]) for r, c in messages[-2 * self.rounds :]]
        total = sum(len(c) for _, c in recent)
        while recent and total > self.total_chars:
            total -= len(recent.pop(0)[1])
        return recent


def langchain_available() -> str | None:
    """None when LangChain's SQLChatMessageHistory imports, else why not."""
    try:
        with warnings.catch_warnings():  # its "being sunset" notice, once per run is plenty
            warnings.simplefilter("ignore", DeprecationWarning)
            from langchain_community.chat_message_histories import SQLChatMessageHistory  # noqa: F401
    except Exception as exc:  # ImportError, or a broken optional dependency underneath
        return f"{type(exc).__name__}: {exc}"
    return None


class LangChainHistory:
    """LangChain `SQLChatMessageHistory` over one SQLite file.

    `per_call_engine=True` follows LangChain's documented pattern (a history object built from a
    connection string in every `get_session_history` call, hence a new engine per call); the
    default shares one engine and builds only the history object per call, which is kinder.
    """

    def __init__(self, path: Path, *, per_call_engine: bool = False):
        from sqlalchemy import create_engine

        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self.per_call_engine = per_call_engine
        self.engine = None if per_call_engine else create_engine(self.url)
        self.name = "LangChain SQLChatMessageHistory" + (
            " (new engine per call)" if per_call_engine else ""
        )

    def history(self, session_id: str):
        from langchain_community.chat_message_histories import SQLChatMessageHistory

        return SQLChatMessageHistory(
            session_id=session_id, connection=self.url if self.per_call_engine else self.engine
        )

    def bulk_load(self, rows: Iterable[tuple[str, str, str, float]]) -> None:
        """(session_id, role, content, created_at) rows stored as LangChain stores them."""
        from langchain_core.messages import AIMessage, HumanMessage, message_to_dict

        self.history("bulk-load-probe")  # let LangChain create its own table (and indexes)
        templates = {
            "user": message_to_dict(HumanMessage(content="")),
            "assistant": message_to_dict(AIMessage(content="")),
        }

        def encode(role: str, content: str) -> str:
            template = templates[role]
            return json.dumps({**template, "data": {**template["data"], "content": content}})

        with sqlite3.connect(self.path) as db:
            db.execute("PRAGMA synchronous = OFF")
            db.executemany(
                "INSERT INTO message_store (session_id, message) VALUES (?, ?)",
                ((s, encode(r, c)) for s, r, c, _ in rows),
            )

    def load(self, session_id: str) -> list[dict[str, str]]:
        """What a LangChain app gives the model: the session's messages, newest 20 kept."""
        messages = self.history(session_id).messages[-20:]
        return [{"role": m.type, "content": m.content} for m in messages]

    def append(self, session_id: str, role: str, content: str) -> None:
        from langchain_core.messages import AIMessage, HumanMessage

        message = HumanMessage(content=content) if role == "user" else AIMessage(content=content)
        self.history(session_id).add_message(message)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.dispose()
