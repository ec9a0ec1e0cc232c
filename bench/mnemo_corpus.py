"""Bulk-load a corpus into Mnemo's own schema, fast.

The store's migrations create the schema (so triggers and indexes, e.g. recall's FTS index, are
the real ones); rows then go in with executemany in one transaction, with the conversation
counters set the way `ConversationStore.append` keeps them. Going through `append` one message
at a time would take far longer than the benchmarks themselves at 1M messages.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from memory import ConversationStore
from memory.policy import database_path


def owner_of(conv_index: int) -> str:
    """Conversations are spread over 100 owners, as if 100 browsers had used the app."""
    return f"bench-owner-{conv_index % 100:03d}"


async def bulk_load(
    path: Path,
    n_conversations: int,
    rows: Iterable[tuple[int, int, str, str, float]],
    *,
    start_ts: float,
    embedder=None,
) -> list[str]:
    """Write conversations and their (conv index, position, role, content, ts) rows; with
    an `embedder`, each message's vector too, as `ConversationStore.append` writes it.

    Returns the conversation ids by index. The store must not be open while this runs.
    """
    store = await ConversationStore.open(path)  # runs the migrations
    await store.close()
    ids = [secrets.token_urlsafe(16) for _ in range(n_conversations)]
    stats = [[0, 0, start_ts] for _ in range(n_conversations)]  # messages, chars, last ts

    def turn_rows():
        for conv, _, role, content, ts in rows:
            st = stats[conv]
            st[0] += 1
            st[1] += len(content)
            st[2] = ts
            yield ids[conv], role, content, ts

    with sqlite3.connect(database_path(path)) as db:
        db.execute("PRAGMA synchronous = OFF")
        db.executemany(
            "INSERT INTO conversations (id, owner, title, persona_id, created_at, last_active_at)"
            " VALUES (?, ?, ?, 'assistant', ?, ?)",
            (
                (cid, owner_of(i), f"Conversation {i}", start_ts, start_ts)
                for i, cid in enumerate(ids)
            ),
        )
        db.executemany(
            "INSERT INTO turns (conversation_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            turn_rows(),
        )
        db.executemany(
            "UPDATE conversations SET message_count = ?, active_count = ?, chars = ?, "
            "last_active_at = ? WHERE id = ?",
            ((n, n, chars, last, ids[i]) for i, (n, chars, last) in enumerate(stats)),
        )
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'turns_fts'").fetchone():
            index_for_recall(db)
        if embedder is not None:
            await write_vectors(db, embedder)
    return ids


async def write_vectors(db: sqlite3.Connection, embedder, batch: int = 5_000) -> None:
    """Every message's vector into turn_vectors, in batches (issue 11). A corpus draws its
    messages from a pool (datagen.message_pool), so each distinct text is embedded once: the
    same vectors, and a 1M-message corpus under USE (~1.5 ms a text) takes seconds, not hours."""
    from memory.vectors import embedding_text, pack

    known: dict[str, bytes | None] = {}
    last = 0
    while True:
        rows = db.execute(
            "SELECT id, conversation_id, content FROM turns WHERE id > ? AND is_summary = 0 "
            "ORDER BY id LIMIT ?",
            (last, batch),
        ).fetchall()
        if not rows:
            return
        new = list(dict.fromkeys(t for _, _, c in rows if (t := embedding_text(c)) not in known))
        for i in range(0, len(new), 256):
            part = new[i : i + 256]
            known.update(zip(part, map(pack, await embedder.embed(part)), strict=True))
        db.executemany(
            "INSERT INTO turn_vectors (conversation_id, turn_id, model, vector) "
            "VALUES (?, ?, ?, ?)",
            [
                (cid, tid, embedder.name, packed)
                for tid, cid, c in rows
                if (packed := known[embedding_text(c)]) is not None
            ],
        )
        last = rows[-1][0]


def index_for_recall(db: sqlite3.Connection, batch: int = 20_000) -> None:
    """Fill recall's full-text indexes the way the store does on append (issue 6):
    `turns_fts` for search and, where the schema has it, `recall_fts` for recall."""
    from memory.recall import bigram_text, conversation_key, owner_key, recall_text

    with_recall = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'recall_fts'").fetchone()
    last = 0
    while True:
        rows = db.execute(
            "SELECT t.id, t.content, c.owner, c.id FROM turns t "
            "JOIN conversations c ON c.id = t.conversation_id WHERE t.id > ? ORDER BY t.id "
            "LIMIT ?",
            (last, batch),
        ).fetchall()
        if not rows:
            merge_indexes(db)
            return
        db.executemany(
            "INSERT INTO turns_fts (rowid, body, owner_key, conversation_key) VALUES (?, ?, ?, ?)",
            [
                (tid, bigram_text(text), owner_key(o), conversation_key(c))
                for tid, text, o, c in rows
            ],
        )
        if with_recall:
            db.executemany(
                "INSERT INTO recall_fts (rowid, body) VALUES (?, ?)",
                [(tid, recall_text(c, text)) for tid, text, _, c in rows],
            )
        last = rows[-1][0]


def merge_indexes(db: sqlite3.Connection) -> None:
    """Merge the full-text indexes as the store's background merges would have by now.

    A commit never merges (m012_fts_background_merges), so a bulk load leaves dozens of
    b-trees per index; a store that wrote these rows itself would have merged them in the
    background after its commits. Same command, larger steps, until one merges nothing.
    """
    for table in ("turns_fts", "recall_fts"):
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
            continue
        while True:
            before = db.total_changes
            db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', 1000)")
            if db.total_changes - before < 2:
                break
