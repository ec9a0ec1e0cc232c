"""Two replicas for real: two processes on one PostgreSQL share conversations, write without
losing or duplicating anything, and fold a conversation once when both try at the same moment.

Each replica is tests/helpers/replica.py in its own process, opening the store the way the app
does (`memory.open_store(url)`); both start their work on the same signal.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from memory import open_store

ROOT = Path(__file__).resolve().parent.parent
REPLICA = Path(__file__).resolve().parent / "helpers" / "replica.py"


async def start_replicas(*argvs: list[str]) -> list[str]:
    """Start one process per argv, release them together, return each one's output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(REPLICA),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        for argv in argvs
    ]
    for proc in procs:
        ready = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        assert ready == b"ready\n", (ready, await proc.stderr.read())
    for proc in procs:
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
    outputs = []
    for proc in procs:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        assert proc.returncode == 0, err.decode()
        outputs.append(out.decode().strip())
    return outputs


@pytest.fixture
async def store(pg_url):
    """This test process's own view of the shared database (SQLite is one machine's file:
    replicas are PostgreSQL's job)."""
    s = await open_store(pg_url)
    yield s
    await s.close()


async def test_fifty_writers_over_two_processes_lose_and_duplicate_nothing(store, pg_url):
    conv = await store.create_conversation("ana")
    outputs = await start_replicas(
        [pg_url, "ana", conv.id, "write", "a", "25", "10"],
        [pg_url, "ana", conv.id, "write", "b", "25", "10"],
    )
    assert outputs == ["wrote 250", "wrote 250"]
    got = [t.content for t in await store.transcript("ana", conv.id)]
    sent = [f"{tag}{n}-{j}" for tag in "ab" for n in range(25) for j in range(10)]
    assert sorted(got) == sorted(sent)  # none lost, none twice
    for tag in "ab":  # each writer's messages in the order it wrote them
        for n in range(25):
            mine = [c for c in got if c.startswith(f"{tag}{n}-")]
            assert mine == [f"{tag}{n}-{j}" for j in range(10)]
    conv = await store.get_conversation("ana", conv.id)
    assert (conv.message_count, conv.active_count) == (500, 500)
    assert conv.chars == sum(len(c) for c in sent)
    ids = [t.id for t in await store.transcript("ana", conv.id)]
    assert len(ids) == len(set(ids)) == 500


async def test_a_summarization_triggered_in_two_processes_folds_once(store, pg_url):
    conv = await store.create_conversation("ana")
    for i in range(8):
        await store.append("ana", conv.id, "user" if i % 2 == 0 else "assistant", f"m{i}")
    argv = [pg_url, "ana", conv.id, "summarize"]
    outputs = await start_replicas(argv, argv)
    assert sorted(outputs) == ["folded False", "folded True"]
    assert sum(t.is_summary for t in await store.transcript("ana", conv.id)) == 1
    reopened = await open_store(pg_url)  # what a third replica sees
    try:
        st = await reopened.status("ana", conv.id)
        assert (st.summaries, st.compacted, st.active, st.summarizing) == (1, 6, 2, False)
    finally:
        await reopened.close()
