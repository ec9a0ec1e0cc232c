"""Memory strategies fed one conversation message by message, for prompt size and quality.

Each strategy answers one question: given everything said so far, what text of the history
does the model get? Each does its own summarization the way its design does (after every
message here; Mnemo's app does it in the background after the reply).
"""

from __future__ import annotations

import inspect
import sqlite3
from contextlib import closing
from pathlib import Path

from bench.baselines import DropOldest, ReferenceDesign, sqlite_timestamp


def chars(texts: list[str]) -> int:
    return sum(len(t) for t in texts)


class FullHistory:
    """Everything, every time: the upper bound on what the model could know."""

    name = "full history"

    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []

    async def add(self, role: str, content: str) -> None:
        self.messages.append((role, content))

    async def context(self, query: str | None = None) -> list[str]:
        return [c for _, c in self.messages]

    async def close(self) -> None:
        pass


class DropOldestStrategy(FullHistory):
    """The Redis reference design over the same messages."""

    def __init__(self, policy: DropOldest, name: str | None = None) -> None:
        super().__init__()
        self.policy = policy
        self.name = name or policy.name

    async def context(self, query: str | None = None) -> list[str]:
        return [c for _, c in self.policy.context(self.messages)]


class ReferenceStrategy:
    """The SQLite reference design: append, then its summarize check, each on a new connection.

    Messages are stamped one minute apart (as a real chat's would be, at datetime('now')'s
    one-second resolution), and the context is its summary + newest 20 rows.
    """

    name = "SQLite reference design"

    def __init__(self, path: Path, start_ts: float = 1_767_225_600.0) -> None:
        self.design = ReferenceDesign(path)
        self.design.create_schema()
        self.session = "planted"
        self.ts = start_ts

    async def add(self, role: str, content: str) -> None:
        self.ts += 60
        await self.design.append(self.session, role, content, sqlite_timestamp(self.ts))
        await self.design.summarize_if_needed(self.session)

    async def context(self, query: str | None = None) -> list[str]:
        return [row["content"] for row in await self.design.load_with_summary(self.session)]

    async def close(self) -> None:
        pass


class MnemoStrategy:
    """Mnemo's ConversationStore; with `recall`, context() gets the question as its query."""

    def __init__(self, store, owner: str, conv_id: str, *, recall: bool = False) -> None:
        self.store = store
        self.owner = owner
        self.conv_id = conv_id
        self.recall = recall
        self.name = "Mnemo with recall" if recall else "Mnemo"
        self.recalled_turns = 0

    @classmethod
    async def create(cls, store, owner: str, *, recall: bool = False) -> MnemoStrategy:
        conv = await store.create_conversation(owner)
        return cls(store, owner, conv.id, recall=recall)

    async def add(self, role: str, content: str) -> None:
        await self.store.append(self.owner, self.conv_id, role, content)
        await self.store.summarize_if_needed(self.owner, self.conv_id)

    async def context(self, query: str | None = None) -> list[str]:
        if hasattr(self.store, "flush_vectors"):  # written in the background: caught up
            await self.store.flush_vectors()
        if self.recall and query is not None:
            ctx = await self.store.context(self.owner, self.conv_id, query=query)
        else:
            ctx = await self.store.context(self.owner, self.conv_id)
        recalled = getattr(ctx, "recalled", []) or []
        self.recalled_turns += len(recalled)
        try:  # what the model receives: memory's own renderers (dates, labels and all)
            from memory import render_memory, render_messages
        except ImportError:  # an older memory/: its raw parts
            texts = [ctx.summary.content] if ctx.summary else []
            texts.extend(r.turn.content for r in recalled)
            return texts + [t.content for t in ctx.turns]
        note = render_memory(ctx)
        return ([note] if note else []) + [m["content"] for m in render_messages(ctx)]

    def view(self, *, recall: bool) -> MnemoStrategy:
        """The same conversation seen with or without recall (no second copy of the data)."""
        return MnemoStrategy(self.store, self.owner, self.conv_id, recall=recall)

    async def close(self) -> None:
        pass


def default_embedder():
    """The embedder the app uses by default (issue 11), or None where this build has none."""
    try:
        from assistant.embedding import select_embedder
    except ImportError:
        return None
    return select_embedder()


def recall_supported(store) -> bool:
    """Whether this memory/ build recalls (issue 6): context() takes a query and the database
    has a full-text index to recall from."""
    if "query" not in inspect.signature(store.context).parameters:
        return False
    path = getattr(store, "path", None)
    if path is None:
        return True
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%'"
        ).fetchall()
    return bool(rows)
