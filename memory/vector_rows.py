"""SQLite's half of the background vectors (memory/vector_fill.py): where they are written and
which turns still lack one. PostgreSQL's is memory/postgres/vector_rows.py."""

from __future__ import annotations

import sqlite3

from . import sql
from .connection import Connections
from .vector_fill import Pending, VectorFiller
from .vectors import Embedder


def sqlite_filler(db: Connections, embedder: Embedder | None) -> VectorFiller:
    """A VectorFiller that writes through the store's writer and reads through its reader."""

    async def write(model: str, rows: list[tuple[Pending, bytes]]) -> int:
        params = [(model, vector, p.turn_id, p.content) for p, vector in rows]

        def fill(conn: sqlite3.Connection) -> int:
            before = conn.total_changes
            conn.executemany(sql.FILL_VECTOR, params)
            return conn.total_changes - before

        # Not urgent: a user's new message goes first (memory/gate.py).
        return await db.transact(fill)

    async def missing(model: str, after: int, upto: int, limit: int) -> list[Pending]:
        params = {"model": model, "after": after, "upto": upto, "n": limit}
        rows = await db.read_one(sql.MISSING_VECTORS, params)
        return [Pending(conv_id, turn_id, content) for turn_id, conv_id, content in rows]

    return VectorFiller(embedder, write, missing)


async def newest_turn(db: Connections) -> int | None:
    """The newest turn's id at open: the backfill's bound (later turns are queued live)."""
    rows = await db.read_one(sql.NEWEST_TURN, ())
    return rows[0][0] if rows else None
