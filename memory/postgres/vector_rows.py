"""PostgreSQL's half of the background vectors (memory/vector_fill.py): where they are written
and which turns still lack one, as SQLite's memory/vector_rows.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

from psycopg import AsyncConnection

from ..vector_fill import Pending, VectorFiller
from ..vectors import Embedder

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

Connection = Callable[[], AbstractAsyncContextManager[AsyncConnection]]
Read = Callable[[str, dict[str, object]], Awaitable[list[tuple]]]


def postgres_filler(connection: Connection, read: Read, embedder: Embedder | None) -> VectorFiller:
    """A VectorFiller over the store's pooled connections (`_conn`) and reads (`_read`)."""

    async def write(model: str, rows: list[tuple[Pending, bytes]]) -> int:
        params = {
            "model": model,
            "turn": [p.turn_id for p, _ in rows],
            "content": [p.content for p, _ in rows],
            "vector": [v for _, v in rows],
        }
        async with connection() as conn:  # autocommit: the statement is its transaction
            cur = await conn.execute(FILL_VECTORS_SQL, params)
            return cur.rowcount

    async def missing(model: str, after: int, upto: int, limit: int) -> list[Pending]:
        params = {"model": model, "after": after, "upto": upto, "n": limit}
        rows = await read(MISSING_VECTORS_SQL, params)
        return [Pending(conv_id, turn_id, content) for turn_id, conv_id, content in rows]

    return VectorFiller(embedder, write, missing)


async def newest_turn(read: Read) -> int | None:
    """The newest turn's id at open: the backfill's bound (later turns are queued live)."""
    rows = await read(NEWEST_TURN_SQL, {})
    return rows[0][0] if rows else None
