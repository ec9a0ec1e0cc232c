"""PostgreSQL's half of the background vectors (memory/vector_fill.py): where they are written
and which turns still lack one, as SQLite's memory/vector_rows.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

from psycopg import AsyncConnection

from ..vector_fill import Pending

# Vectors written after their turns, in one statement: only while the turn still holds the text
# each was made of, so an undone or rewritten turn never gets a stale one.
FILL_VECTORS_SQL = (
    "INSERT INTO turn_vectors (turn_id, conversation_id, model, vector) "
    "SELECT t.id, t.conversation_id, %(model)s, i.vector "
    "FROM unnest(%(turn)s::bigint[], %(content)s::text[], %(vector)s::bytea[]) "
    "AS i(turn, content, vector) JOIN turns t ON t.id = i.turn AND t.content = i.content "
    "ON CONFLICT (turn_id) DO UPDATE SET model = excluded.model, vector = excluded.vector"
)
# A reply rewritten: its old vector no longer says what it says.
DELETE_VECTOR_SQL = "DELETE FROM turn_vectors WHERE turn_id = %(turn)s"
# The backfill's step: messages (not summaries) up to a turn id lacking a vector of the model.
MISSING_VECTORS_SQL = (
    "SELECT t.id, t.conversation_id, t.content FROM turns t "
    "WHERE t.id > %(after)s AND t.id <= %(upto)s AND NOT t.is_summary AND NOT EXISTS "
    "(SELECT 1 FROM turn_vectors v WHERE v.turn_id = t.id AND v.model = %(model)s) "
    "ORDER BY t.id LIMIT %(n)s"
)
NEWEST_TURN_SQL = "SELECT max(id) FROM turns"
# How far a complete backfill pass got (m012_vector_backfill): one row.
BACKFILL_DONE_SQL = "SELECT done_upto FROM vector_backfill WHERE model = %(model)s"
BACKFILL_MARK_SQL = (
    "INSERT INTO vector_backfill (one, model, done_upto) VALUES (1, %(model)s, %(upto)s) "
    "ON CONFLICT (one) DO UPDATE SET model = excluded.model, done_upto = excluded.done_upto"
)
BACKFILL_LOWER_SQL = "UPDATE vector_backfill SET done_upto = least(done_upto, %(upto)s)"

Connection = Callable[[], AbstractAsyncContextManager[AsyncConnection]]
Read = Callable[[str, dict[str, object]], Awaitable[list[tuple]]]


class PostgresVectorRows:
    """vector_fill.VectorRows over the store's pooled connections (`_conn`) and reads."""

    def __init__(self, connection: Connection, read: Read) -> None:
        self._connection = connection
        self._read = read

    async def write(self, model: str, rows: list[tuple[Pending, bytes]]) -> int:
        params = {
            "model": model,
            "turn": [p.turn_id for p, _ in rows],
            "content": [p.content for p, _ in rows],
            "vector": [v for _, v in rows],
        }
        return await self._execute(FILL_VECTORS_SQL, params)

    async def missing(self, model: str, after: int, upto: int, limit: int) -> list[Pending]:
        params = {"model": model, "after": after, "upto": upto, "n": limit}
        rows = await self._read(MISSING_VECTORS_SQL, params)
        return [Pending(conv_id, turn_id, content) for turn_id, conv_id, content in rows]

    async def newest(self) -> int | None:
        rows = await self._read(NEWEST_TURN_SQL, {})
        return rows[0][0] if rows else None

    async def done_upto(self, model: str) -> int:
        rows = await self._read(BACKFILL_DONE_SQL, {"model": model})
        return rows[0][0] if rows else 0

    async def mark(self, model: str, upto: int) -> None:
        await self._execute(BACKFILL_MARK_SQL, {"model": model, "upto": upto})

    async def lower_mark(self, below: int) -> None:
        await self._execute(BACKFILL_LOWER_SQL, {"upto": below - 1})

    async def _execute(self, statement: str, params: dict[str, object]) -> int:
        async with self._connection() as conn:  # autocommit: the statement is its transaction
            cur = await conn.execute(statement, params)
            return cur.rowcount
