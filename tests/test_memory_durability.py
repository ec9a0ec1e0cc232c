"""Crash safety: a writer SIGKILLed mid-append or mid-summary loses nothing it acknowledged."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from memory import ConversationStore, connection

ROOT = Path(__file__).resolve().parent.parent
WRITER = Path(__file__).resolve().parent / "helpers" / "memory_writer.py"


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
async def test_sigkill_in_a_loop_loses_no_acknowledged_message(tmp_path):
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    acknowledged: list[str] = []
    for run in range(6):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(WRITER),
            str(tmp_path),
            str(run),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        ready = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
        assert ready == b"ready\n", (ready, await proc.stderr.read())
        await asyncio.sleep(rng.uniform(0.05, 0.3))
        proc.send_signal(signal.SIGKILL)
        out = await proc.stdout.read()
        assert await proc.wait() == -signal.SIGKILL
        acknowledged += [line for line in out.decode().splitlines() if line.startswith("run ")]

        with contextlib.closing(sqlite3.connect(tmp_path / "mnemo.db")) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert db.execute("PRAGMA foreign_key_check").fetchall() == []

    assert len(acknowledged) > 50  # the writer really was busy when it died
    store = await ConversationStore.open(tmp_path)
    try:
        (conv,) = await store.list_conversations("killer")
        transcript = await store.transcript("killer", conv.id)
        stored = {t.content for t in transcript if not t.is_summary}
        assert set(acknowledged) <= stored
        # At most one unacknowledged message per run (committed, killed before printing).
        assert len(stored - set(acknowledged)) <= 6
        # Counters stayed in step with the turns through every crash.
        conv = await store.get_conversation("killer", conv.id)
        assert conv.message_count == len(stored)
        assert conv.active_count == sum(
            1 for t in transcript if not t.is_summary and not t.compacted
        )
        assert any(t.is_summary for t in transcript)
    finally:
        await store.close()


async def test_commits_leave_checkpoints_to_the_background(tmp_path):
    """A commit that checkpoints copies the WAL into the database and fsyncs it: 100+ ms on a
    busy disk (bench/summarization.py). The writer never does; a third connection does, after
    commits, so the WAL is still checkpointed and stays small."""
    async with await ConversationStore.open(tmp_path) as store:
        connections = store._db
        [[auto]] = await connections.writer.execute_fetchall("PRAGMA wal_autocheckpoint")
        assert auto == 0
        conversation = await store.create_conversation("ana")
        for i in range(60):  # ~300 KB of text and its two indexes: past a few hundred pages
            await store.append("ana", conversation.id, "user", f"message {i} " + "lorem " * 800)
        await connections.merged()  # its steps write to the WAL too, then checkpoint again
        await connections.checkpointed()
        assert connections.checkpoints > 0
        with contextlib.closing(sqlite3.connect(tmp_path / "mnemo.db")) as db:
            busy, wal_frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert busy == 0 and copied == wal_frames  # nothing was left to copy
        await store.append("ana", conversation.id, "user", "still writing after a checkpoint")
    assert not (tmp_path / "mnemo.db-wal").exists()  # closed cleanly: the WAL was removed


async def test_the_commits_of_a_moment_share_one_checkpoint(tmp_path, monkeypatch):
    """A turn commits four or five times; a checkpoint after each cost more CPU than the
    commits (bench/turn_million.py). The checkpoint waits CHECKPOINT_AFTER_S (longer here,
    so a loaded machine still makes the six appends within it) and then covers them all."""
    monkeypatch.setattr(connection, "CHECKPOINT_AFTER_S", 1.5, raising=False)
    async with await ConversationStore.open(tmp_path) as store:
        conversation = await store.create_conversation("ana")
        await store._db.checkpointed()
        before = store._db.checkpoints
        for i in range(6):
            role = "user" if i % 2 == 0 else "assistant"
            await store.append("ana", conversation.id, role, f"message {i} " + "lorem " * 50)
        await store._db.merged()
        await store._db.checkpointed()
        assert store._db.checkpoints == before + 1
        with contextlib.closing(sqlite3.connect(tmp_path / "mnemo.db")) as db:
            busy, wal_frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert busy == 0 and copied == wal_frames  # that one checkpoint copied every commit
