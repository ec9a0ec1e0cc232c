"""The SQLite store's connections under concurrency (memory/connection.py, memory/gate.py):
one-hop jobs handed to a connection's thread side by side, a transaction of several hops
alone, the lane for urgent jobs (a user's new message goes ahead of other replies' saves),
whole transactions and snapshots in one hop, and reads around a close. Real SQLite files in
tmp_path and real asyncio tasks; no clocks: orders and outcomes only."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from memory import ConversationNotFound, ConversationStore, StorageUnavailable
from memory.connection import Connections
from memory.gate import ConnectionGate

OWNER = "ana"


async def settle() -> None:
    for _ in range(5):  # let every task started so far reach its wait
        await asyncio.sleep(0)


async def job(gate: ConnectionGate, name: str, order: list[str], urgent: bool = False) -> None:
    async with gate.job(urgent):
        order.append(name)
        await asyncio.sleep(0)


async def alone(gate: ConnectionGate, name: str, order: list[str]) -> None:
    async with gate.alone():
        order.append(name)
        await asyncio.sleep(0)
        order.append(name + " done")


def enter_at_once(cm):
    """Enter `cm` by hand: None when that completed without suspending (without a pass of
    the event loop), else the suspended entry, to be resumed with .send(None)."""
    step = cm.__aenter__()
    try:
        step.send(None)
    except StopIteration:
        return None
    return step


async def test_jobs_are_let_in_side_by_side_without_waiting_for_the_event_loop():
    gate = ConnectionGate()
    jobs = [gate.job(), gate.job(urgent=True), gate.job()]
    assert [enter_at_once(j) for j in jobs] == [None, None, None]
    assert gate.jobs == 3 and not gate.locked()
    transaction = gate.alone()
    entering = enter_at_once(transaction)
    assert entering is not None  # a transaction waits for the jobs in flight
    for j in jobs:
        await j.__aexit__(None, None, None)
    assert gate.jobs == 0 and gate.locked()  # handed to the transaction
    with pytest.raises(StopIteration):
        entering.send(None)
    await transaction.__aexit__(None, None, None)
    assert not gate.locked()
    free = gate.alone()
    assert enter_at_once(free) is None  # a free connection is taken at once
    await free.__aexit__(None, None, None)


async def test_a_transaction_waits_for_the_jobs_in_flight_and_new_jobs_wait_behind_it():
    gate, order = ConnectionGate(), []
    running = gate.job()
    await running.__aenter__()
    transaction = asyncio.create_task(alone(gate, "T", order))
    await settle()
    late = asyncio.create_task(job(gate, "late job", order))
    await settle()
    assert order == []  # T waits for the job in flight; the late job waits behind T
    await running.__aexit__(None, None, None)
    await asyncio.gather(transaction, late)
    assert order == ["T", "T done", "late job"]
    assert gate.jobs == 0 and not gate.locked()


async def test_after_a_transaction_the_waiting_jobs_go_urgent_first_then_the_next_transaction():
    gate, order = ConnectionGate(), []
    first = gate.alone()
    await first.__aenter__()
    tasks = []
    for name, urgent in [("a", False), ("b", False), ("U1", True), ("c", False), ("U2", True)]:
        tasks.append(asyncio.create_task(job(gate, name, order, urgent)))
        await settle()
        if name == "b":  # a transaction queued among the jobs
            tasks.append(asyncio.create_task(alone(gate, "T2", order)))
            await settle()
    await first.__aexit__(None, None, None)
    await asyncio.gather(*tasks)
    assert order == ["U1", "U2", "a", "b", "c", "T2", "T2 done"]
    assert gate.jobs == 0 and not gate.locked()


async def test_a_transaction_is_held_from_the_moment_it_is_handed_over():
    gate = ConnectionGate()
    running = gate.job()
    await running.__aenter__()
    waiting = gate.alone()
    entering = asyncio.create_task(waiting.__aenter__())
    await settle()
    await running.__aexit__(None, None, None)  # handed to the transaction, not yet running
    assert gate.locked()
    barging = asyncio.create_task(job(gate, "barging", []))
    await entering
    await settle()
    assert not barging.done()  # it waits for the transaction handed the connection
    await waiting.__aexit__(None, None, None)
    await barging
    assert gate.jobs == 0 and not gate.locked()


@pytest.mark.parametrize("kind", ["job", "transaction"])
async def test_a_cancelled_waiter_leaves_its_place_and_loses_nobody_their_turn(kind):
    gate, order = ConnectionGate(), []
    first = gate.alone()
    await first.__aenter__()
    gone = asyncio.create_task(
        job(gate, "gone", order, True) if kind == "job" else alone(gate, "gone", order)
    )
    stays = asyncio.create_task(job(gate, "stays", order))
    await settle()
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    await first.__aexit__(None, None, None)
    await stays
    assert order == ["stays"] and gate.jobs == 0 and not gate.locked()


async def test_jobs_waiting_behind_a_transaction_that_gives_up_go_at_once():
    gate, order = ConnectionGate(), []
    running = gate.job()
    await running.__aenter__()
    transaction = asyncio.create_task(alone(gate, "T", order))
    await settle()
    behind = asyncio.create_task(job(gate, "behind", order))
    await settle()
    transaction.cancel()
    with pytest.raises(asyncio.CancelledError):
        await transaction
    await behind  # while the first job still runs: nothing is alone any more
    assert order == ["behind"]
    await running.__aexit__(None, None, None)
    assert gate.jobs == 0 and not gate.locked()


@pytest.mark.parametrize("kind", ["job", "transaction"])
async def test_a_waiter_cancelled_as_it_is_let_in_passes_its_turn_on(kind):
    gate, order = ConnectionGate(), []
    first = gate.alone()
    await first.__aenter__()
    cancelled = asyncio.create_task(
        job(gate, "cancelled", order) if kind == "job" else alone(gate, "cancelled", order)
    )
    await settle()
    after = asyncio.create_task(alone(gate, "after", order))
    await settle()
    await first.__aexit__(None, None, None)  # lets `cancelled` in...
    cancelled.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    await after
    assert order == ["after", "after done"] and gate.jobs == 0 and not gate.locked()


async def test_a_users_message_is_saved_before_replies_queued_ahead_of_it(tmp_path):
    """Replies' saves and metrics wait behind a busy writer, then a user's message comes: it
    is written first (its turn id is the lowest), and all of them are written."""
    async with await ConversationStore.open(tmp_path) as store:
        conv = await store.create_conversation(OWNER)
        other = await store.create_conversation(OWNER)
        busy = store._db._write_gate.alone()
        await busy.__aenter__()  # a transaction has the writer
        replies = [
            asyncio.create_task(store.append(OWNER, other.id, "assistant", f"reply {i}"))
            for i in range(3)
        ]
        await settle()
        question = asyncio.create_task(store.append(OWNER, conv.id, "user", "my question"))
        await settle()
        await busy.__aexit__(None, None, None)
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


@pytest.mark.parametrize("waiting_for", ["read", "write"])
async def test_work_waiting_for_a_transaction_when_the_store_closes_is_refused(
    tmp_path, waiting_for
):
    """A read (or write) waits for a transaction of several hops on its connection; the store
    closes meanwhile: the waiting one is let in only to say the store is closed (it does not
    hang, nor run on a closed connection)."""
    db = await open_connections(tmp_path)
    started, finish = asyncio.Event(), asyncio.Event()

    async def holding() -> None:
        async with db.read() if waiting_for == "read" else db.write():
            started.set()
            await finish.wait()

    holder = asyncio.create_task(holding())
    await started.wait()
    if waiting_for == "read":
        waiting = asyncio.create_task(rows(db))
    else:
        waiting = asyncio.create_task(db.transact(lambda c: c.execute("INSERT INTO t VALUES (1)")))
    await settle()
    closing = asyncio.create_task(db.close())
    await settle()
    finish.set()
    await holder
    await closing
    with pytest.raises(StorageUnavailable, match="closed"):
        await asyncio.wait_for(waiting, timeout=10)


async def test_reads_side_by_side_answer_in_the_order_asked_and_see_the_writes_before_them(
    tmp_path,
):
    """Reads handed to the reader's thread together, each after a write it must see: every
    read sees its own write (the thread answers them in order, none inside another's
    transaction), and a snapshot's statements see one state."""
    db = await open_connections(tmp_path)
    try:
        seen: list[int] = []
        written, all_written = [], asyncio.Event()

        async def write_then_read(n: int) -> None:
            await db.transact(lambda c: c.execute("INSERT INTO t VALUES (?)", (n,)))
            written.append(n)
            if len(written) == 20:
                all_written.set()
            rows = await db.read_one("SELECT count(*) FROM t WHERE n = ?", (n,))
            seen.append(rows[0][0])

        held = db.read()  # one read transaction open: the reads queue behind it
        snapshot = await held.__aenter__()
        tasks = [asyncio.create_task(write_then_read(n)) for n in range(1, 21)]
        await asyncio.wait_for(all_written.wait(), 30)  # writes do not wait for the reader
        await settle()
        assert db._read_gate.waiting == 20 and seen == []  # none ran inside this transaction
        await snapshot.execute_fetchall("SELECT count(*) FROM t")  # still this read's alone
        await held.__aexit__(None, None, None)
        await asyncio.gather(*tasks)
        assert seen == [1] * 20

        def both(c: sqlite3.Connection) -> tuple[int, int]:
            return (
                c.execute("SELECT count(*) FROM t").fetchone()[0],
                c.execute("SELECT sum(n) FROM t").fetchone()[0],
            )

        assert await db.snapshot(both) == (20, 210)
        with pytest.raises(StorageUnavailable, match="no such table"):
            await db.snapshot(lambda c: c.execute("SELECT * FROM missing").fetchall())
        assert await rows(db) == [(n,) for n in range(1, 21)]  # the reader still works
    finally:
        await db.close()
