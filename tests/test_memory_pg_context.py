"""How a context load reaches PostgreSQL: one round trip, and the function m011 made of the
context statement returns exactly what the statement returns.

Real PostgreSQL from $MNEMO_TEST_DATABASE_URL, one schema per test (tests/memory_backends.py).
"""

from __future__ import annotations

import tempfile

import psycopg
import pytest
from memory_backends import FakeClock
from psycopg.pq import Trace

from memory import MemoryPolicy
from memory.postgres import PostgresStore, sql

SMALL = MemoryPolicy(
    keep_recent=4,
    summarize_at=8,
    message_chars=400,
    summary_chars=400,
    recall_chars=400,
    history_chars=2000,
)


@pytest.fixture
async def store(pg_url):
    s = await PostgresStore.open(pg_url, policy=SMALL, clock=FakeClock(), pool_max=1)
    yield s
    await s.close()


async def chat(store, owner, conv_id, n):
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        await store.append(owner, conv_id, role, f"Message {i}: we talked about hiking.")


async def test_a_context_load_is_one_round_trip(store):
    conv = await store.create_conversation("ana")
    await chat(store, "ana", conv.id, 12)
    await store.summarize_if_needed("ana", conv.id)
    await store.pin("ana", conv.id, "I'm vegetarian.")
    async with store._pool.connection() as conn:  # the pool's only connection
        pgconn = conn.pgconn
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        try:
            plain = await store.context("ana", conv.id)
            recalled = await store.context("ana", conv.id, query="hiking 拉面")
        finally:
            pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace.read().splitlines() if line[0] == "F"]
    # A round trip ends where the client sends Sync (extended protocol) or Query (simple).
    names = [message[2] for message in sent]
    assert names.count("Sync") + names.count("Query") == 2, names
    parsed = [message[3] for message in sent if message[2] == "Parse"]
    assert len(parsed) == 2 and "mnemo_context" in parsed[0] and "mnemo_context" not in parsed[1]
    assert plain.summary and plain.pinned and len(plain.turns) == 4
    assert recalled.recalled  # the folded turns said "hiking" too


@pytest.mark.parametrize("about_me_on", [True, False])
async def test_the_context_function_returns_what_the_statement_returns(store, pg_url, about_me_on):
    clock = store._clock
    folded = await store.create_conversation("ana", retention_minutes=60)
    await chat(store, "ana", folded.id, 12)
    assert await store.summarize_if_needed("ana", folded.id)
    await store.pin("ana", folded.id, "I'm vegetarian.")
    await store.pin("ana", None, "I live in Porto.")  # an "about me" fact
    await store.set_about_me("ana", about_me_on)
    fresh = await store.create_conversation("ana")
    await chat(store, "ana", fresh.id, 3)
    empty = await store.create_conversation("ana")
    bob = await store.create_conversation("bob")
    await chat(store, "bob", bob.id, 2)
    expired = await store.create_conversation("ana", retention_minutes=1)
    await chat(store, "ana", expired.id, 2)
    clock.now += 120  # past `expired`'s retention, within `folded`'s
    cases = [
        ("ana", folded.id),
        ("ana", fresh.id),
        ("ana", empty.id),
        ("bob", bob.id),
        ("ana", bob.id),  # another owner's: nothing
        ("ana", expired.id),  # past its retention: nothing
        ("ana", "missing"),
    ]
    with psycopg.connect(pg_url) as conn:
        for owner, conv_id in cases:
            params = {"conv": conv_id, "owner": owner, "now": clock.now, "keep": 4}
            statement = conn.execute(sql.context_sql(None, False), params)
            function = conn.execute(sql.CONTEXT_CALL_SQL, params)
            assert [d.name for d in function.description] == [d.name for d in statement.description]
            expected = sorted(statement.fetchall(), key=repr)
            assert sorted(function.fetchall(), key=repr) == expected, (owner, conv_id)
            assert bool(expected) == ((owner, conv_id) in cases[:4])
    window = await store.context("ana", folded.id)
    assert {p.content for p in window.pinned} == {"I'm vegetarian."} | (
        {"I live in Porto."} if about_me_on else set()
    )
