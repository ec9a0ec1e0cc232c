"""Writing an imported conversation: its messages with their own dates, in one transaction.

The store checks the messages (memory/validation.py `check_import`) and embeds them before
calling this, so the transaction only writes.
"""

from __future__ import annotations

import secrets

import aiosqlite

from . import sql
from .validation import make_title
from .vectors import Embedder


async def write_conversation(
    db: aiosqlite.Connection,
    owner: str,
    rows: list[tuple[str, str, float]],
    vectors: list[bytes | None],
    embedder: Embedder | None,
    title: str | None,
    persona_id: str,
    persona_version: int | None,
    now: float,
) -> str:
    """Insert the conversation, its turns (indexed by the writer's trigger), their vectors and
    counters; return its id. Runs inside the caller's write transaction."""
    model = embedder.name if embedder is not None else ""
    conv_id = secrets.token_urlsafe(16)
    title = title or next((make_title(c) for role, c, _ in rows if role == "user"), None)
    started = rows[0][2] if rows else now
    # last_active_at is now: retention counts from the import, not from the old messages.
    await db.execute(
        sql.INSERT_CONVERSATION,
        (conv_id, owner, title, persona_id, persona_version, None, started, now, None),
    )
    # An imported message has no roundtable speaker, origin or outcome (the last columns, NULL).
    await db.executemany(
        sql.INSERT_TURN, [(conv_id, r, c, when, 0, None, None, None, None) for r, c, when in rows]
    )
    ids = [r[0] for r in await db.execute_fetchall(sql.TURN_IDS, (conv_id,))]
    await db.executemany(
        sql.INSERT_VECTOR,
        [(conv_id, tid, model, v) for tid, v in zip(ids, vectors, strict=True) if v is not None],
    )
    chars = sum(len(c) for _, c, _ in rows)
    await db.execute(sql.IMPORTED_COUNTERS, (len(rows), len(rows), chars, conv_id))
    return conv_id
