"""Who may hand work to one SQLite connection's thread: one-hop jobs side by side, or one
multi-statement transaction alone (`ConnectionGate`).

aiosqlite runs a connection's statements on a thread of its own, one after another in the
order they were handed over. A job that is one hop there and back (a read of one statement, a
whole write transaction run on the thread: `Connections.read_one`, `snapshot`, `transact`)
can therefore be handed over while others are still queued or running: the thread runs them
back to back. Only a transaction of several hops (`Connections.read()`, `write()`: BEGIN,
statements awaited one by one, COMMIT) needs the connection to itself, or another task's
statements would run inside it.

Why not one lock for every job, as before: under load the event loop is slow to come round
(50 open streams: a pass over its ready callbacks takes milliseconds), and a lock held for a
hop is handed to the next waiter only when the loop runs the holder again, and taken only
when it runs the waiter. One lock per connection made the reader and the writer serve one job
per pass or two of the loop, whatever SQLite's own time: on the bench's bursts of 50 messages
(bench api_load) a token check waited 0.1-0.8 s for the reader while each read took
0.1-2 ms on its thread.

Jobs that find a transaction holding the connection, or waiting for it, wait in two lanes:
urgent first (a user's new message, which its reply waits for), then the others, each in
arrival order; when the transaction ends they are all let in at once, and the next
transaction waits for them to finish. A transaction waits for the jobs in flight to finish,
and new jobs queue behind a waiting transaction, so neither side can starve the other.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


class ConnectionGate:
    """Jobs side by side, or one transaction alone, on one connection (module docstring)."""

    def __init__(self) -> None:
        self._jobs = 0  # jobs let in and not finished yet
        self._alone = False  # a transaction holds the connection
        self._transactions: deque[asyncio.Future[None]] = deque()
        self._lanes: tuple[deque[asyncio.Future[None]], deque[asyncio.Future[None]]] = (
            deque(),  # urgent jobs
            deque(),
        )

    @property
    def jobs(self) -> int:
        """Jobs in flight (tests)."""
        return self._jobs

    @property
    def waiting(self) -> int:
        """Jobs waiting for a transaction (tests)."""
        return sum(len(lane) for lane in self._lanes)

    def locked(self) -> bool:
        """Whether a transaction holds the connection, or is handed it."""
        return self._alone

    @asynccontextmanager
    async def job(self, urgent: bool = False) -> AsyncIterator[None]:
        """Held while a one-hop job runs. Without a transaction holding the connection or
        waiting for it, it is let in at once, without yielding to the event loop."""
        if self._alone or self._transactions:
            await self._wait(self._lanes[0 if urgent else 1], self._job_done)
        else:
            self._jobs += 1
        try:
            yield
        finally:
            self._job_done()

    @asynccontextmanager
    async def alone(self) -> AsyncIterator[None]:
        """Held while a transaction of several hops runs; no job runs meanwhile."""
        if self._alone or self._jobs or self._transactions:
            await self._wait(self._transactions, self._transaction_done)
        else:
            self._alone = True
        try:
            yield
        finally:
            self._transaction_done()

    async def _wait(self, queue: deque[asyncio.Future[None]], done: Callable[[], None]) -> None:
        turn = asyncio.get_running_loop().create_future()
        queue.append(turn)
        try:
            await turn
        except BaseException:  # cancelled, or the waiting coroutine closed
            if turn.done() and not turn.cancelled():
                done()  # let in just as we were cancelled: pass it on
            else:
                queue.remove(turn)
                self._next()  # the jobs behind a transaction that gave up go now
            raise

    def _job_done(self) -> None:
        self._jobs -= 1
        self._next()

    def _transaction_done(self) -> None:
        self._alone = False
        self._let_jobs_in()  # those that waited for this transaction go before the next
        self._next()

    def _next(self) -> None:
        """Hand the connection to the next transaction once no job runs; with none waiting,
        let the waiting jobs in."""
        if self._alone:
            return
        if not self._transactions:
            self._let_jobs_in()
            return
        if self._jobs:
            return
        while self._transactions:
            turn = self._transactions.popleft()
            if not turn.done():
                self._alone = True
                turn.set_result(None)  # held now by that waiter, though it has not run yet
                return
        self._let_jobs_in()

    def _let_jobs_in(self) -> None:
        for lane in self._lanes:  # urgent first: woken first, so handed over first
            while lane:
                turn = lane.popleft()
                if not turn.done():
                    self._jobs += 1
                    turn.set_result(None)
