"""Writes committed together (memory/connection.py, `Connections.transact`): the jobs handed
to a busy writer run, when it is free, in one transaction, urgent ones first; a job that fails
(a statement, or the COMMIT) loses only its own writes; a job whose caller is cancelled still
runs, and a transaction of several hops after it sees it. Real SQLite files in tmp_path, real
asyncio tasks; the writer's own statements are read from its trace callback."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from memory import ConversationNotFound, StorageUnavailable
from memory.connection import GROUP_JOBS, MERGE_EVERY_COMMITS, Connections


async def settle() -> None:
    for _ in range(5):  # let every task started so far reach its wait
        await asyncio.sleep(0)


async def open_traced(tmp_path) -> tuple[Connections, list[str]]:
    """Connections over a table `t` (n > 0) and a child table `f` whose foreign key is only
    checked at COMMIT; and the list the writer's statements are traced into."""
    db = await Connections.open(tmp_path / "g.db")

    def schema(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE t (n INTEGER NOT NULL CHECK (n > 0))")
        c.execute("CREATE TABLE p (id INTEGER PRIMARY KEY)")
        c.execute("CREATE TABLE f (p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)")

    await db.transact(schema)
    statements: list[str] = []
    await db.writer._execute(db.writer._conn.set_trace_callback, statements.append)
    return db, statements


def insert(n: int):
    return lambda c: c.execute("INSERT INTO t VALUES (?)", (n,)).lastrowid


async def numbers(db: Connections) -> list[int]:
    return [n for (n,) in await db.read_one("SELECT n FROM t ORDER BY n", ())]


async def handed_over_together(db: Connections, jobs: list[tuple]) -> list:
    """Run `jobs` ((work, urgent) pairs) as transact() calls that all wait for one
    transaction holding the writer, then get the writer together; their outcomes."""
    busy = db._write_gate.alone()
    await busy.__aenter__()
    tasks = [asyncio.create_task(db.transact(work, urgent=urgent)) for work, urgent in jobs]
    await settle()
    await busy.__aexit__(None, None, None)
    return await asyncio.gather(*tasks, return_exceptions=True)


async def test_writes_handed_over_together_are_one_commit_urgent_ones_first(tmp_path):
    db, statements = await open_traced(tmp_path)
    try:
        statements.clear()
        jobs = [(insert(n), n > 15) for n in range(1, 21)]  # the last five are urgent
        rowids = await handed_over_together(db, jobs)
        assert statements.count("COMMIT") == 1 and db.commits == 2  # with the schema's
        # Two commits added two b-trees: too few for a merge pass (it counts commits, not jobs).
        assert db.commits < MERGE_EVERY_COMMITS and db._merge is None
        assert sorted(rowids[15:]) == [1, 2, 3, 4, 5]  # urgent: written first
        assert sorted(rowids[:15]) == list(range(6, 21))
        assert await numbers(db) == list(range(1, 21))
    finally:
        await db.close()


async def test_a_group_is_at_most_group_jobs_long(tmp_path):
    db, statements = await open_traced(tmp_path)
    try:
        statements.clear()
        count = GROUP_JOBS * 2 + 1
        await handed_over_together(db, [(insert(n), False) for n in range(1, count + 1)])
        assert statements.count("COMMIT") == 3
        assert await numbers(db) == list(range(1, count + 1))
    finally:
        await db.close()


async def test_a_failing_job_loses_only_its_own_writes_and_gets_its_own_error(tmp_path):
    db, statements = await open_traced(tmp_path)
    try:

        def refused(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO t VALUES (50)")
            c.execute("INSERT INTO t VALUES (-1)")  # the CHECK refuses it

        def gone(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO t VALUES (60)")
            raise ConversationNotFound("gone")

        jobs = [(insert(n), False) for n in range(1, 9)]
        jobs[3:3] = [(refused, False)]
        jobs[6:6] = [(gone, True)]
        outcomes = await handed_over_together(db, jobs)
        assert isinstance(outcomes[3], StorageUnavailable)
        assert "CHECK constraint failed" in str(outcomes[3])
        assert isinstance(outcomes[6], ConversationNotFound)
        assert all(isinstance(o, int) for i, o in enumerate(outcomes) if i not in (3, 6))
        assert await numbers(db) == list(range(1, 9))  # neither 50 nor 60
        assert "ROLLBACK" in statements  # the group's, before each job ran alone
        assert await db.transact(insert(9)) == 9  # the writer is still fine
    finally:
        await db.close()


async def test_a_commit_that_fails_loses_only_the_job_that_made_it_fail(tmp_path):
    db, _ = await open_traced(tmp_path)
    try:
        orphan = lambda c: c.execute("INSERT INTO f VALUES (42)")  # noqa: E731 (no parent 42)
        outcomes = await handed_over_together(
            db, [(insert(1), False), (orphan, False), (insert(2), False)]
        )
        assert isinstance(outcomes[1], StorageUnavailable)
        assert "FOREIGN KEY constraint failed" in str(outcomes[1])
        assert outcomes[0] is not None and outcomes[2] is not None
        assert await numbers(db) == [1, 2]
        assert await db.read_one("SELECT count(*) FROM f", ()) == [(0,)]
    finally:
        await db.close()


async def test_a_job_whose_caller_is_cancelled_runs_and_a_transaction_after_it_sees_it(
    tmp_path,
):
    db, _ = await open_traced(tmp_path)
    release = threading.Event()
    try:

        def slow(c: sqlite3.Connection) -> int:
            release.wait(30)  # the writer's thread is busy with this group meanwhile
            return c.execute("INSERT INTO t VALUES (1)").lastrowid

        first = asyncio.create_task(db.transact(slow))
        await settle()
        cancelled = asyncio.create_task(db.transact(insert(7)))
        await settle()  # handed over: waiting for the group in hand to finish
        cancelled.cancel()
        await settle()
        assert cancelled.cancelled()

        async def several_hops() -> list[tuple]:
            async with db.write() as w:
                return await w.execute_fetchall("SELECT n FROM t ORDER BY n")

        after = asyncio.create_task(several_hops())
        await settle()
        release.set()
        assert await first == 1
        assert await after == [(1,), (7,)]
    finally:
        release.set()
        await db.close()


async def test_writes_waiting_when_the_store_closes_are_written_first(tmp_path):
    db, _ = await open_traced(tmp_path)
    release = threading.Event()
    try:

        def slow(c: sqlite3.Connection) -> None:
            release.wait(30)

        first = asyncio.create_task(db.transact(slow))
        await settle()
        later = [asyncio.create_task(db.transact(insert(n))) for n in (1, 2, 3)]
        await settle()
        closing = asyncio.create_task(db.close())
        await settle()
        release.set()
        await asyncio.gather(first, *later, closing)
    finally:
        release.set()
        await db.close()
    reopened = await Connections.open(tmp_path / "g.db")
    try:
        assert await numbers(reopened) == [1, 2, 3]
    finally:
        await reopened.close()
    with pytest.raises(StorageUnavailable, match="closed"):
        await db.transact(insert(4))
