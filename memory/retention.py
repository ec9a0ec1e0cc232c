"""Retention: when a conversation expires, and purging the expired ones.

An expired conversation is invisible at once (every read filters on `expires_at`), so purging
is housekeeping, not privacy: it runs opportunistically, at most once a minute, in small
batches and chunked deletes so it never holds the write lock for long. A purge cut short is
harmless; the next one continues.
"""

from __future__ import annotations

from collections.abc import Callable

from . import sql
from .connection import Connections

PURGE_EVERY_S = 60.0  # at most one opportunistic purge of expired conversations per minute
PURGE_CONVERSATIONS = 20  # per purge batch
PURGE_TURNS = 500  # rows per delete statement when purging


def expires_at(retention_minutes: int | None, now: float) -> float | None:
    """When a conversation idle since `now` expires; None: kept until deleted."""
    return None if retention_minutes is None else now + retention_minutes * 60.0


def purge_due(last_purge: float, now: float) -> bool:
    """Whether an opportunistic purge should run now."""
    return now - last_purge >= PURGE_EVERY_S


async def purge_expired(
    db: Connections,
    clock: Callable[[], float],
    max_conversations: int = PURGE_CONVERSATIONS,
    chunk: int = PURGE_TURNS,
) -> int:
    """Delete up to `max_conversations` expired conversations, their turns `chunk` rows per
    transaction. Returns how many conversations were deleted."""
    rows = await db.read_one(sql.EXPIRED_CONVERSATIONS, (clock(), max_conversations))
    purged = 0
    for (conv_id,) in rows:
        while True:
            async with db.write() as conn:
                cursor = await conn.execute(sql.DELETE_TURNS_CHUNK, (conv_id, chunk))
                if cursor.rowcount < chunk:
                    cursor = await conn.execute(sql.DELETE_IF_EXPIRED, (conv_id, clock()))
                    purged += cursor.rowcount
                    break
    return purged
