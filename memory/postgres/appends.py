"""Appends that arrive together are written together: one statement, one commit.

Every append is one statement (sql.APPEND_SQL), but each one alone costs a round trip, a
parse and plan (prepared statements are off for transaction poolers) and a commit, which on a
server with default durability waits for its WAL flush. Fifty conversations appending at once
then queue for the pool's connections one commit at a time. Here an append joins a queue; a
few drain tasks each take their share of what is waiting (up to MAX_BATCH) and write it with
sql.APPEND_BATCH_SQL: one statement over arrays, one plan, one commit. An append arriving
while the queue is empty goes out at once, alone, with the single statement: batching costs
no waiting, it only happens when appends are already waiting for each other.

- Each append gets exactly the single statement's result: its turn id, or none when its
  conversation is not visible to its owner (missing, expired, another owner's).
- A batch locks its conversations' rows in id order, so two replicas' batches (and any
  single-row writer) never wait for each other in a cycle. Ids are taken in the order the
  appends were called, after the locks, so one conversation's turn ids rise in call order.
- With `async_commit` (the store's opt-in `append_commit="async"`), each append's transaction
  commits without waiting for its WAL flush: see sql.append_sql and README, Scaling out.
- When a batch fails for anything but a lost server (one bad row fails the statement), its
  appends are retried one by one, so one bad append fails alone. A lost server fails them
  all, as it would fail single statements.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from psycopg import AsyncConnection
from psycopg_pool import PoolTimeout

from ..errors import StorageUnavailable
from . import sql
from .pool import broken_connection

MAX_BATCH = 64  # appends per statement: a bound on how long a batch holds its locks
DRAINS = 2  # batches in flight at once (each on a connection of its own): see _drain
# How an append's transaction commits: "durable" waits for its WAL flush (PostgreSQL's
# default), "async" does not (opt-in; README, Scaling out, says what it risks).
APPEND_COMMITS = ("durable", "async")

log = logging.getLogger(__name__)

Params = dict[str, object]
Connection = Callable[[], AbstractAsyncContextManager[AsyncConnection]]


class AppendQueue:
    """Batches `sql.APPEND_SQL` executions; `await submit(params)` -> turn id or None."""

    def __init__(self, connection: Connection, drains: int = DRAINS, async_commit: bool = False):
        self._connection = connection  # the store's `_conn`: a pooled autocommit connection
        self._drains = drains
        self._async_commit = async_commit
        self._pending: list[tuple[Params, asyncio.Future]] = []
        self._tasks: set[asyncio.Task] = set()

    async def submit(self, params: Params) -> int | None:
        """Write one append; its new turn's id, or None when the conversation is not visible.
        Raises StorageUnavailable as a single statement would."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((params, future))
        if len(self._tasks) < self._drains:
            task = asyncio.create_task(self._drain())
            self._tasks.add(task)
        # A caller cancelled after this point cancels only its wait: the append is written
        # all the same, as a statement already sent would be.
        return await future

    async def wait(self) -> None:
        """Until every append submitted so far has been written (or failed)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _drain(self) -> None:
        try:
            await self._drain_pending()
        finally:
            # Leave the set at once, in the same step as the last look at the queue: a done
            # callback runs a step later, and an append queued in between would see every
            # drain "running" and wait forever.
            self._tasks.discard(asyncio.current_task())

    async def _drain_pending(self) -> None:
        while self._pending:
            # An equal share for each drain running, so the batches go out in parallel on
            # their own connections. Two drains, not four: the commits' WAL flushes take turns
            # on the server anyway, and two write the same appends in half the statements
            # (at 1M messages, 50 writers: 265 batches for 3,000 appends against 527, client
            # CPU 0.20 against 0.25 ms per append) at the same rate within this machine's noise.
            share = min(MAX_BATCH, -(-len(self._pending) // len(self._tasks)))
            batch, rest = self._pending[:share], self._pending[share:]
            # A conversation's appends go in one batch, in the order they came: split over
            # two batches in flight, the later one could take the row lock first and be
            # written before the earlier.
            convs = {params["conv"] for params, _ in batch}
            batch += [item for item in rest if item[0]["conv"] in convs]
            self._pending = [item for item in rest if item[0]["conv"] not in convs]
            try:
                results = await self._run([p for p, _ in batch])
            except StorageUnavailable as exc:
                if len(batch) == 1 or _server_lost(exc):
                    for _, future in batch:
                        _settle(future, exc=exc)
                else:
                    log.warning("%d appends failed together (%s); one by one", len(batch), exc)
                    await self._one_by_one(batch)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                _settle(future, result=result)

    async def _one_by_one(self, batch: list[tuple[Params, asyncio.Future]]) -> None:
        for params, future in batch:
            try:
                (result,) = await self._run([params])
            except StorageUnavailable as exc:
                _settle(future, exc=exc)
            else:
                _settle(future, result=result)

    async def _run(self, batch: list[Params]) -> list[int | None]:
        results: list[int | None] = [None] * len(batch)
        async with self._connection() as conn:
            if len(batch) == 1:  # alone: the single append's statement, in autocommit
                cur = await conn.execute(sql.append_sql(False, self._async_commit), batch[0])
                row = await cur.fetchone()
                results[0] = row[0] if row is not None else None
                return results
            columns = {name: [p[name] for p in batch] for name in batch[0]}
            columns["ord"] = list(range(len(batch)))
            cur = await conn.execute(sql.append_sql(True, self._async_commit), columns)
            for i, turn_id in await cur.fetchall():
                results[i] = turn_id
        return results


def _server_lost(exc: StorageUnavailable) -> bool:
    # A lost server or a pool timeout fails every append alike: retrying them one by one
    # would only wait N times as long. A deadlock or a statement's own error is worth
    # retrying alone.
    return broken_connection(exc) or isinstance(exc.__cause__, PoolTimeout)


def _settle(future: asyncio.Future, *, result: object = None, exc: BaseException | None = None):
    if future.done():  # cancelled by its caller's loop shutting down
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)
