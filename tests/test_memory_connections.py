"""The SQLite store's connections under concurrency (memory/connection.py): the write lock's
lane for urgent writes (a user's new message goes ahead of other replies' saves), whole
transactions in one hop to the writer's thread, and reads around a close. Real SQLite
files in tmp_path and real asyncio tasks; no clocks: orders and outcomes only."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from memory import ConversationNotFound, ConversationStore, StorageUnavailable
from memory.connection import READERS, Connections, WriteLock

OWNER = "ana"


async def queued(lock: WriteLock, urgent: bool, name: str, order: list[str]) -> None:
    async with lock.turn(urgent):
        order.append(name)
        await asyncio.sleep(0)


async def settle() -> None:
    for _ in range(5):  # let every task started so far reach its wait
        await asyncio.sleep(0)


async def test_an_urgent_write_goes_before_the_others_waiting_each_lane_in_order():
    lock, order = WriteLock(), []
    await lock.acquire()
    tasks = []
    for name, urgent in [("a", False), ("b", False), ("U1", True), ("c", False), ("U2", True)]:
        tasks.append(asyncio.create_task(queued(lock, urgent, name, order)))
        await settle()
    lock.release()
    await asyncio.gather(*tasks)
    assert order == ["U1", "U2", "a", "b", "c"]
    assert not lock.locked()


async def test_a_free_lock_is_taken_at_once_and_never_looks_free_while_handed_over():
    lock = WriteLock()
    await lock.acquire()
    waiter = asyncio.create_task(lock.acquire())
    await settle()
    lock.release()  # handed to the waiter: still held, though it has not run yet
    assert lock.locked()
    barging = asyncio.create_task(lock.acquire(urgent=True))
    await waiter
    await settle()
    assert not barging.done()  # it waits its turn behind the one handed the lock
    lock.release()
    await barging
    lock.release()
    assert not lock.locked()


async def test_a_cancelled_waiter_leaves_its_place_and_loses_nobody_the_lock():
    lock, order = WriteLock(), []
    await lock.acquire()
    gone = asyncio.create_task(queued(lock, True, "gone", order))
    stays = asyncio.create_task(queued(lock, False, "stays", order))
    await settle()
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    lock.release()
    await stays
    assert order == ["stays"] and not lock.locked()


async def test_a_waiter_cancelled_as_it_is_handed_the_lock_passes_it_on():
    lock, order = WriteLock(), []
    await lock.acquire()
    first = asyncio.create_task(queued(lock, False, "first", order))
    second = asyncio.create_task(queued(lock, False, "second", order))
    await settle()
    lock.release()  # handed to `first`...
    first.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    await second
    assert order == ["second"] and not lock.locked()


async def test_a_users_message_is_saved_before_replies_queued_ahead_of_it(tmp_path):
    """Replies' saves and metrics wait behind a busy writer, then a user's message comes: it
    is written first (its turn id is the lowest), and all of them are written."""
    async with await ConversationStore.open(tmp_path) as store:
        conv = await store.create_conversation(OWNER)
        other = await store.create_conversation(OWNER)
        lock: WriteLock = store._db._write_lock
        await lock.acquire()  # the writer is busy
        replies = [
            asyncio.create_task(store.append(OWNER, other.id, "assistant", f"reply {i}"))
            for i in range(3)
        ]
        await settle()
        question = asyncio.create_task(store.append(OWNER, conv.id, "user", "my question"))
        await settle()
        lock.release()
        written = await asyncio.gather(question, *replies)
        assert written[0].id == min(t.id for t in written)
        assert [t.content for t in await store.transcript(OWNER, other.id)] == [
            "reply 0",
            "reply 1",
            "reply 2",
        ]


async def open_connections(tmp_path) -> Connections:
    db = await Connections.open(tmp_path / "c.db")
    await db.transact(lambda c: c.execute("CREATE TABLE t (n INTEGER NOT NULL CHECK (n > 0))"))
    return db


async def rows(db: Connections) -> list[tuple]:
    return await db.read_one("SELECT n FROM t ORDER BY n", ())


async def test_a_transaction_commits_whole_or_not_at_all(tmp_path):
    db = await open_connections(tmp_path)
    try:

        def two(c: sqlite3.Connection) -> int:
            c.execute("INSERT INTO t VALUES (1)")
            return c.execute("INSERT INTO t VALUES (2)").lastrowid

        assert await db.transact(two) == 2
        assert await rows(db) == [(1,), (2,)]

        def then_refused(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO t VALUES (3)")
            c.execute("INSERT INTO t VALUES (-1)")  # the CHECK refuses it

        with pytest.raises(StorageUnavailable, match="CHECK constraint failed"):
            await db.transact(then_refused)

        def then_missing(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO t VALUES (4)")
            raise ConversationNotFound("gone")

        with pytest.raises(ConversationNotFound):
            await db.transact(then_missing)
        assert await rows(db) == [(1,), (2,)]  # neither 3 nor 4
        assert await db.transact(lambda c: c.execute("INSERT INTO t VALUES (5)").rowcount) == 1
    finally:
        await db.close()
    with pytest.raises(StorageUnavailable, match="closed"):
        await db.transact(lambda c: None)


async def test_closing_waits_for_the_reads_running(tmp_path):
    db = await open_connections(tmp_path)
    read_started, finish = asyncio.Event(), asyncio.Event()

    async def slow_read() -> list[tuple]:
        async with db.read() as snapshot:
            read_started.set()
            await finish.wait()
            return list(await snapshot.execute_fetchall("SELECT count(*) FROM t"))

    reading = asyncio.create_task(slow_read())
    await read_started.wait()
    closing = asyncio.create_task(db.close())
    await settle()
    assert not closing.done()
    finish.set()
    assert await reading == [(0,)]
    await closing


async def test_a_read_waiting_for_a_reader_when_the_store_closes_is_refused(tmp_path):
    """Both readers busy, a third read waits; the store closes meanwhile: the waiting read
    gets a reader back only to say the store is closed (it does not hang, nor run on a
    closed connection)."""
    db = await open_connections(tmp_path)
    started, finish = asyncio.Event(), asyncio.Event()
    busy = 0

    async def holding() -> None:
        nonlocal busy
        async with db.read():
            busy += 1
            if busy == READERS:
                started.set()
            await finish.wait()

    holders = [asyncio.create_task(holding()) for _ in range(READERS)]
    await started.wait()
    waiting = asyncio.create_task(rows(db))
    await settle()
    closing = asyncio.create_task(db.close())
    await settle()
    finish.set()
    await asyncio.gather(*holders)
    await closing
    with pytest.raises(StorageUnavailable, match="closed"):
        await asyncio.wait_for(waiting, timeout=10)
