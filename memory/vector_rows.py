"""SQLite's half of the background vectors (memory/vector_fill.py): where they are written,
which turns still lack one, and how far the last complete pass got. PostgreSQL's is
memory/postgres/vector_rows.py."""

from __future__ import annotations

import sqlite3

from . import sql
from .connection import Connections
from .vector_fill import Pending


class SqliteVectorRows:
    """vector_fill.VectorRows over the store's writer and reader."""

    def __init__(self, db: Connections) -> None:
        self._db = db

    async def write(self, model: str, rows: list[tuple[Pending, bytes]]) -> int:
        params = [(model, vector, p.turn_id, p.content) for p, vector in rows]

        def fill(conn: sqlite3.Connection) -> int:
            before = conn.total_changes
            conn.executemany(sql.FILL_VECTOR, params)
            return conn.total_changes - before

        # Not urgent: a user's new message goes first (memory/gate.py).
        return await self._db.transact(fill)

    async def missing(self, model: str, after: int, upto: int, limit: int) -> list[Pending]:
        params = {"model": model, "after": after, "upto": upto, "n": limit}
        rows = await self._db.read_one(sql.MISSING_VECTORS, params)
        return [Pending(conv_id, turn_id, content) for turn_id, conv_id, content in rows]

    async def newest(self) -> int | None:
        rows = await self._db.read_one(sql.NEWEST_TURN, ())
        return rows[0][0] if rows else None

    async def done_upto(self, model: str) -> int:
        rows = await self._db.read_one(sql.BACKFILL_DONE, (model,))
        return rows[0][0] if rows else 0

    async def mark(self, model: str, upto: int) -> None:
        await self._db.transact(lambda conn: conn.execute(sql.BACKFILL_MARK, (model, upto)))

    async def lower_mark(self, below: int) -> None:
        await self._db.transact(lambda conn: conn.execute(sql.BACKFILL_LOWER, (below - 1,)))
