"""SQLite connections: one writer, one query-only reader, and their transactions.

Every aiosqlite call is a hop to the connection's thread and back; `read_one()` and
`snapshot()` exist so a read costs one hop, not one per statement plus BEGIN and COMMIT, and
`transact()` so the writes of every message (append, a reply's saves, metrics) are one hop,
not one per statement. sqlite3 errors are wrapped in `StorageUnavailable` here, with advice
on what to do.

Those one-hop jobs are handed to the connection's thread as they come, side by side: the
thread runs them back to back in that order. A transaction of several hops (`read()`,
`write()`) has the connection to itself. Each connection has a `ConnectionGate` for that
(memory/gate.py, which says why: a lock per connection made a busy event loop the pace of
every read and write); jobs that wait for a transaction there have a lane for urgent ones: a
user's new message, which its reply waits for, goes ahead of other replies' saves and metrics.

`transact()` jobs waiting for the writer are committed together: the jobs handed over while
the writer's thread is busy are run, when it is free, in one transaction (urgent ones first,
up to `GROUP_JOBS`), so a burst of messages, replies, vectors and metrics costs one COMMIT and
one new b-tree per full-text index instead of one per job. Each caller learns its job's
outcome after that COMMIT. When one job fails, the group is rolled back and each job runs in a
transaction of its own, so only the failed one's writes are lost (a job is statements on the
connection and nothing else, so running it again after the rollback is running it once).
At 50 concurrent API streams the writer thread's CPU per message fell by 8-30% (nine pairs
of runs side by side); the first byte did not move beyond the noise (bench/results/api_load.md,
2026-12-03 16:00-17:00).

Checkpoints run on a third connection, in the background. By default SQLite checkpoints inside
the COMMIT that pushes the WAL past 1,000 pages: that commit copies ~4 MB into the database
file and fsyncs it, which made one summarization commit in a hundred take 100-140 ms instead of
~5 (bench/summarization.py). So the writer never checkpoints (`wal_autocheckpoint = 0`); after a
commit, when none is running, a PASSIVE checkpoint starts on the checkpointer connection's own
thread, `CHECKPOINT_AFTER_S` later, so the other commits of the same moment share it: a chat
turn commits four or five times (its message, the reply, metrics, a fold, the reply's vector),
and a checkpoint after each cost 0.3-1.6 ms of CPU (fsyncs included) where one after all of
them costs about the same as one (bench/turn_million.py). PASSIVE never blocks the writer or
the reader, and the WAL stays small because one follows every burst of commits. If the
checkpointer cannot be opened, the writer keeps SQLite's automatic checkpoints.

FTS5 merges leave the commit path too. Each commit adds one small b-tree (segment) to each
full-text index, and by default FTS5 merges them inside the commits: every 64 leaf pages
written, one commit merged up to 64 pages per level of the index (in a summarization commit,
up to 29 ms of the writer thread's CPU instead of about 2). m012 turns that off
(`automerge = 0`). Once every `MERGE_EVERY_COMMITS` commits (fewer new segments cannot fill a
level) a background task merges on the writer, in steps of at most `MERGE_PAGES` pages (the
'merge' command), each a short transaction of its own in one hop, until no level
holds `usermerge` segments. The writer runs the steps, not the checkpointer: a second writing
connection would make the writer's commits wait in SQLite's busy handler (sleeps of 1, 2, 5,
10 ms...), where the writer's thread runs one job after the other. A commit waits at most
one step.
`crisismerge` is the backstop if the steps fall behind: a level that reaches that many
segments is merged in the commit that adds the last one.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TypeVar

import aiosqlite

from .errors import StorageUnavailable
from .gate import ConnectionGate
from .migrations import migrate
from .recall import RECALL_TEXT_FUNCTION, bigram_text, conversation_key, owner_key, recall_text
from .sql import INDEX_TURN_TRIGGER, REINDEX_TURN_TRIGGER

log = logging.getLogger(__name__)
T = TypeVar("T")
# A transact() job: its work, and where its outcome goes.
_Write = tuple[Callable[[sqlite3.Connection], object], asyncio.Future]

BUSY_TIMEOUT_MS = 5_000
# The full-text indexes the writer adds to in every commit (m004, m005), merged in the
# background (module docstring).
FTS_TABLES = ("turns_fts", "recall_fts")
# Pages (about 4 KB each) one background merge step writes at most: the longest a commit
# can wait behind a step.
MERGE_PAGES = 16
# A commit adds one b-tree per index, and a level is merged once it holds m012's usermerge
# (4) of them: a merge pass after fewer new commits than that would find nothing to do.
MERGE_EVERY_COMMITS = 4
# Between two steps the merge waits this long, so that it takes at most about a third of the
# writer's time and the commits and readers of a busy process keep the CPU they need.
MERGE_PAUSE_S = 0.002
# A checkpoint starts this long after the commit that asked for it (module docstring): long
# enough for a turn's commits to share one, short enough that the WAL stays small.
CHECKPOINT_AFTER_S = 0.2
# The most `transact()` jobs one transaction commits together (module docstring): the first
# job of a group waits for the others' statements too, so groups stay short.
GROUP_JOBS = 32

_ADVICE = {
    "SQLITE_BUSY": "another program is writing to it; try again in a moment",
    "SQLITE_LOCKED": "another program is writing to it; try again in a moment",
    "SQLITE_READONLY": "make the file and its directory writable",
    "SQLITE_FULL": "free some disk space",
    "SQLITE_IOERR": "check the disk",
    "SQLITE_CANTOPEN": "check the directory exists and is writable, or set MNEMO_DATA_DIR",
    "SQLITE_CORRUPT": "move the file aside and Mnemo starts a new one",
    "SQLITE_NOTADB": "move the file aside and Mnemo starts a new one",
}


def unavailable(exc: BaseException, path: Path) -> StorageUnavailable:
    """A sqlite3 (or OS) error as StorageUnavailable, with advice for its error code."""
    code = getattr(exc, "sqlite_errorname", "") or ""
    advice = next((a for k, a in _ADVICE.items() if code.startswith(k)), None)
    if advice is None:
        advice = "check the disk has space and the file is writable"
    return StorageUnavailable(f"The memory database at {path} failed ({exc}): {advice}.")


async def connect(path: Path, *, query_only: bool = False) -> aiosqlite.Connection:
    """A connection in WAL mode with a busy timeout and foreign keys on."""
    # isolation_level=None: Python's sqlite3 never opens transactions behind our back; we
    # issue BEGIN IMMEDIATE / COMMIT ourselves.
    db = aiosqlite.connect(path, isolation_level=None)
    # aiosqlite's worker thread is not a daemon: a store never closed (an app stopped with
    # Ctrl-C) would hang the interpreter at exit. A daemon thread dies with the process; WAL
    # makes that as safe as a crash, which the SIGKILL test covers.
    if hasattr(db, "_thread"):
        db._thread.daemon = True
    db = await db
    try:
        await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = await db.execute_fetchall("PRAGMA journal_mode = WAL")
        if mode[0][0].lower() != "wal":
            raise sqlite3.OperationalError(f"could not switch to WAL (journal_mode={mode[0][0]})")
        # WAL + NORMAL: a commit survives the process dying (SIGKILL); only an OS crash or
        # power cut can lose the last few commits.
        await db.execute("PRAGMA synchronous = NORMAL")
        await db.execute("PRAGMA foreign_keys = ON")
        # recall_fts's delete trigger recomputes the indexed text with it (m005_recall_fts).
        await db.create_function(RECALL_TEXT_FUNCTION, 2, recall_text, deterministic=True)
        if query_only:
            await db.execute("PRAGMA query_only = ON")
    except BaseException:
        await db.close()
        raise
    return db


async def index_turns(db: aiosqlite.Connection) -> None:
    """Index every turn the writer inserts, inside the INSERT itself (a TEMP trigger).

    One statement instead of three per insert; each is a round trip to aiosqlite's thread.
    """
    for name, fn in (
        ("mnemo_bigram_text", bigram_text),
        ("mnemo_owner_key", owner_key),
        ("mnemo_conversation_key", conversation_key),
    ):
        await db.create_function(name, 1, fn, deterministic=True)
    await db.execute(INDEX_TURN_TRIGGER)
    await db.execute(REINDEX_TURN_TRIGGER)


class Connections:
    """The writer and the reader of one database file, each behind its ConnectionGate,
    and the connection that checkpoints the WAL in the background (see the module docstring).

    One reader: its thread answers reads in the order they were asked, so a read after a
    write sees it. With two side by side, a summarization check still reading made the next
    reply's check skip its fold (summarize_if_needed skips while one runs), and reads that
    are one hop each gain little from a second thread under one GIL."""

    def __init__(
        self,
        writer: aiosqlite.Connection,
        reader: aiosqlite.Connection,
        path: Path,
        checkpointer: aiosqlite.Connection | None = None,
    ):
        self.writer = writer
        self.reader = reader
        self.path = path
        self.checkpointer = checkpointer
        self._write_gate = ConnectionGate()
        self._read_gate = ConnectionGate()
        self._checkpoint: asyncio.Task[None] | None = None
        self._checkpoint_again = False
        self.checkpoints = 0  # completed background checkpoints (tests, benchmarks)
        self._closing = asyncio.Event()  # a checkpoint waiting to start need not wait
        self._merge: asyncio.Task[None] | None = None
        self._merge_again = False
        self._unmerged_commits = 0
        # transact() jobs handed over and not yet run: urgent ones, then the others.
        self._writes: tuple[deque[_Write], deque[_Write]] = (deque(), deque())
        self._drainer: asyncio.Task[None] | None = None
        self.commits = 0  # transactions transact() committed (tests, benchmarks)
        self.merge_steps = 0  # background merge steps that merged something (tests)
        self.closed = False

    @classmethod
    async def open(cls, path: Path) -> Connections:
        """Create (and migrate) the file as needed; StorageUnavailable when it cannot."""
        writer = reader = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = await connect(path)
            await migrate(writer)
            await index_turns(writer)
            reader = await connect(path, query_only=True)
        except (sqlite3.Error, OSError) as exc:
            for conn in (writer, reader):
                if conn is not None:
                    with suppress(Exception):
                        await conn.close()
            raise unavailable(exc, path) from exc
        checkpointer = None
        try:
            checkpointer = await connect(path)
            await writer.execute("PRAGMA wal_autocheckpoint = 0")
        except (sqlite3.Error, OSError):
            log.warning("no background checkpointer for %s; SQLite checkpoints in commits", path)
            if checkpointer is not None:
                with suppress(Exception):
                    await checkpointer.close()
            checkpointer = None
        return cls(writer, reader, path, checkpointer)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._closing.set()
        for task in (self._merge, self._checkpoint):
            if task is not None:
                with suppress(Exception):
                    await task
        # Alone on both: every write and read running has finished; those still waiting
        # are let in afterwards and refuse (_check_open).
        async with self._write_gate.alone(), self._read_gate.alone():
            await self._writes_drained()
            # The checkpointer first: the last connection to close checkpoints the whole WAL
            # and deletes it, and that should be the writer, which knows no reader is left.
            for conn in (self.checkpointer, self.reader, self.writer):
                if conn is not None:
                    with suppress(Exception):
                        await conn.close()

    async def checkpointed(self) -> None:
        """Wait for the background checkpoint running or about to, if any (tests, benchmarks)."""
        while self._checkpoint is not None and not self._checkpoint.done():
            await asyncio.wait({self._checkpoint})

    async def merged(self) -> None:
        """Wait for the background FTS5 merge running now, if any (tests, benchmarks)."""
        while self._merge is not None and not self._merge.done():
            await asyncio.wait({self._merge})

    def _committed(self) -> None:
        """After a commit: start a background merge and checkpoint, or ask the running ones
        to repeat."""
        if self.closed:
            return
        self._unmerged_commits += 1
        if self._merge is not None and not self._merge.done():
            self._merge_again = True
        elif self._unmerged_commits >= MERGE_EVERY_COMMITS:
            self._merge = asyncio.get_running_loop().create_task(self._merge_fts())
        self._start_checkpoint()

    def _start_checkpoint(self) -> None:
        if self.checkpointer is None or self.closed:
            return
        if self._checkpoint is not None and not self._checkpoint.done():
            self._checkpoint_again = True
            return
        self._checkpoint = asyncio.get_running_loop().create_task(self._checkpoint_wal())

    async def _merge_fts(self) -> None:
        """Merge the FTS5 indexes a step at a time until a pass over them merges nothing
        and no commit came meanwhile. Each step is a job on the writer's thread behind the
        writes already handed to it, so a commit waits at most one step."""
        try:
            while not self.closed:
                self._merge_again, self._unmerged_commits = False, 0
                merged = False
                for table in FTS_TABLES:
                    merged |= await self._merge_step(table)
                    await asyncio.sleep(MERGE_PAUSE_S)
                if merged:
                    self._start_checkpoint()  # the steps wrote to the WAL too
                elif not self._merge_again:
                    return
        except (sqlite3.Error, ValueError) as exc:  # the next commit tries again
            log.warning("background FTS5 merge in %s failed: %s", self.path, exc)

    async def _merge_step(self, table: str) -> bool:
        """One 'merge' of at most MERGE_PAGES pages, in its own transaction (one hop); True
        when it merged something (FTS5's documented test: total_changes() grew by 2 or more)."""
        async with self._write_gate.job():
            if self.closed:
                return False
            merged = await self.writer._execute(_merge_once, self.writer, table)
        self.merge_steps += merged
        return merged

    async def _checkpoint_wal(self) -> None:
        assert self.checkpointer is not None
        try:
            while True:
                with suppress(TimeoutError):  # the commits made meanwhile join this one
                    async with asyncio.timeout(CHECKPOINT_AFTER_S):
                        await self._closing.wait()
                if self.closed:  # the last connection to close checkpoints the whole WAL
                    return
                self._checkpoint_again = False
                await self.checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self.checkpoints += 1
                if not self._checkpoint_again or self.closed:
                    return
        except sqlite3.Error as exc:  # the next commit tries again; the WAL only grows
            log.warning("background checkpoint of %s failed: %s", self.path, exc)

    def _check_open(self) -> None:
        if self.closed:
            raise StorageUnavailable("The memory store is closed.")

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction on the writer connection (BEGIN IMMEDIATE ... COMMIT), its
        statements awaited one by one: the writer is this transaction's alone meanwhile."""
        self._check_open()
        async with self._write_gate.alone():
            await self._writes_drained()
            self._check_open()  # the store closed while this write waited
            db = self.writer
            try:
                await db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise unavailable(exc, self.path) from exc
            try:
                yield db
            except BaseException as exc:
                with suppress(sqlite3.Error, ValueError):
                    await db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise unavailable(exc, self.path) from exc
                raise
            try:
                await db.execute("COMMIT")
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error, ValueError):
                    await db.execute("ROLLBACK")
                raise unavailable(exc, self.path) from exc
        self._committed()

    async def transact(self, work: Callable[[sqlite3.Connection], T], *, urgent: bool = False) -> T:
        """`work(connection)` as one write transaction run whole on the writer's thread: one
        hop there and back instead of one per statement (BEGIN, each statement, COMMIT).

        For the writes of every message (append, a reply's saves, metrics): under load each
        hop waits for the busy event loop to resume the coroutine. A job beside the others
        (ConnectionGate); `urgent`: ahead of the jobs that are not, while they wait for a
        transaction and within a group (module docstring). `work` runs in that thread: plain
        sqlite3, no awaiting, nothing but statements (it may run again after a rollback).

        Once handed over, the job runs even if its caller is cancelled, as a statement handed
        to the thread does; a transaction of several hops (`write()`) waits for it."""
        self._check_open()
        async with self._write_gate.job(urgent):
            self._check_open()
            loop = asyncio.get_running_loop()
            outcome: asyncio.Future[T] = loop.create_future()
            self._writes[0 if urgent else 1].append((work, outcome))
            if self._drainer is None or self._drainer.done():
                self._drainer = loop.create_task(self._drain_writes())
            try:
                result = await asyncio.shield(outcome)
            except sqlite3.Error as exc:
                raise unavailable(exc, self.path) from exc
        return result

    async def _drain_writes(self) -> None:
        """Hand the waiting transact() jobs to the writer's thread, a group at a time, and
        give each caller its outcome once its group is done."""
        while any(self._writes):
            group: list[_Write] = []
            for lane in self._writes:
                while lane and len(group) < GROUP_JOBS:
                    group.append(lane.popleft())
            try:
                # aiosqlite (pinned) has no public call for "run this on the connection's
                # thread"; _execute is what each of its own methods uses for that.
                outcomes, commits = await self.writer._execute(
                    _in_group, self.writer, [work for work, _ in group]
                )
            except Exception as exc:  # the thread is gone (the connection closed under it)
                outcomes, commits = [(False, exc)] * len(group), 0
            self.commits += commits
            for _ in range(commits):  # each commit added a b-tree to the indexes (merges)
                self._committed()
            for (_, future), (ok, value) in zip(group, outcomes, strict=True):
                if future.done():
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
                    future.exception()  # a cancelled caller never will: no "never retrieved"

    async def _writes_drained(self) -> None:
        """Wait until every transact() job handed over has run (called holding the writer
        alone, so no new one comes meanwhile)."""
        while self._drainer is not None and not self._drainer.done():
            await asyncio.wait({self._drainer})

    @asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A consistent snapshot on the reader connection, its statements awaited one by one:
        the reader is this read's alone meanwhile (`snapshot` is one hop)."""
        self._check_open()
        async with self._read_gate.alone():
            self._check_open()  # the store closed while this read waited
            db = self.reader
            try:
                await db.execute("BEGIN")
                try:
                    yield db
                finally:
                    await db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise unavailable(exc, self.path) from exc

    async def read_one(self, sql: str, params: tuple | dict[str, object]) -> list[tuple]:
        """One statement on the reader: its own snapshot, no BEGIN/COMMIT round trips."""
        return await self.snapshot(lambda conn: conn.execute(sql, params).fetchall())

    async def snapshot(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(connection)` in one read transaction run whole on the reader's thread (one
        consistent snapshot, one hop), beside the other reads (ConnectionGate). `work` runs
        in that thread: plain sqlite3, no awaiting."""
        self._check_open()
        async with self._read_gate.job():
            self._check_open()  # the store closed while this read waited
            try:
                return await self.reader._execute(_in_snapshot, self.reader, work)
            except sqlite3.Error as exc:
                raise unavailable(exc, self.path) from exc


def _in_snapshot(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """On the reader's thread: `work` in one read transaction (a single statement needs
    none: SQLite reads it from one snapshot)."""
    conn = db._conn
    conn.execute("BEGIN")
    try:
        return work(conn)
    finally:
        conn.execute("COMMIT")


def _merge_once(db: aiosqlite.Connection, table: str) -> bool:
    """On the writer's thread: one FTS5 'merge' step; whether it merged anything."""
    conn = db._conn
    before = conn.total_changes
    conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (MERGE_PAGES,))
    return conn.total_changes - before >= 2


def _in_transaction(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """On the writer's thread: BEGIN IMMEDIATE, `work`, COMMIT; ROLLBACK if anything fails."""
    conn = db._conn  # the sqlite3 connection aiosqlite runs on this thread
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = work(conn)
        conn.execute("COMMIT")
    except BaseException:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return result


def _in_group(
    db: aiosqlite.Connection, works: list[Callable[[sqlite3.Connection], object]]
) -> tuple[list[tuple[bool, object]], int]:
    """On the writer's thread: `works` in one transaction, or, when one of them (or the
    COMMIT) fails, each in a transaction of its own (module docstring). Each job's outcome
    (whether it committed, its result or error), and how many transactions committed."""
    if len(works) > 1:
        with suppress(Exception):  # rolled back: each alone below
            results = _in_transaction(db, lambda conn: [work(conn) for work in works])
            return [(True, result) for result in results], 1
    outcomes: list[tuple[bool, object]] = []
    for work in works:
        try:
            outcomes.append((True, _in_transaction(db, work)))
        except Exception as exc:
            outcomes.append((False, exc))
    return outcomes, sum(ok for ok, _ in outcomes)
