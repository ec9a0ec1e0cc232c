"""Two app runtimes ("replicas") on one PostgreSQL through MNEMO_DATABASE_URL: what one writes,
the other serves — conversations, saved persona versions, the quota — and nothing lands in
either replica's data dir. Real PostgreSQL, real personas, the real google-genai client against
the local fake Gemini server."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from assistant import ConfigError, Delta, Done, QuotaExceeded
from assistant.gemini import GeminiModel
from assistant.runtime import Runtime
from personas import BUILTIN_DIR
from ui.sessions import SECRET_FILE, browser_secret

OWNER = "owner-a"


@pytest.fixture
async def replicas(tmp_path, fake, pg_url):
    runtimes = [
        Runtime(
            tmp_path / f"replica-{n}",
            model=GeminiModel("test-key", base_url=fake.url),
            quota_per_hour=3,
            database_url=pg_url,
        )
        for n in (1, 2)
    ]
    yield runtimes
    for rt in runtimes:
        await rt.aclose()


async def send(conversations, conv_id, text):
    return [event async for event in conversations.send(OWNER, conv_id, text)]


async def test_what_one_replica_writes_the_other_serves(replicas, fake, tmp_path):
    one, two = [await rt.conversations() for rt in replicas]
    conv = (await one.create(OWNER)).id
    fake.reply("Hello ", "from replica one.")
    events = await send(one, conv, "Hi there")
    assert isinstance(events[-1], Done) and events[-1].saved

    opened = await two.open(OWNER, conv)
    assert [(t.role, t.content) for t in opened.transcript.turns] == [
        ("user", "Hi there"),
        ("assistant", "Hello from replica one."),
    ]
    assert [c.id for c in await two.list(OWNER)] == [conv]

    # A persona saved through one replica is the one the other uses from the next message.
    text = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
    saved = await one.save_persona(
        OWNER, text.replace("veto_threshold_pct: 15", "veto_threshold_pct: 40")
    )
    assert saved.version == 1
    served = await two.persona(OWNER, "finance")
    assert "veto_threshold_pct: 40" in served.yaml_text

    # Nothing of it is in either replica's own data dir.
    for rt in replicas:
        assert not (rt.data_dir / "mnemo.db").exists()
        assert not (rt.data_dir / "personas").exists()


async def test_the_quota_counts_across_replicas(replicas, fake):
    one, two = [await rt.conversations() for rt in replicas]
    conv = (await one.create(OWNER)).id
    for conversations in (one, two, one):
        fake.reply("ok")
        assert any(isinstance(e, Delta) for e in await send(conversations, conv, "again"))
        await (await replicas[0].service()).wait_background()
        await (await replicas[1].service()).wait_background()
    with pytest.raises(QuotaExceeded, match="3 messages in the last hour"):
        await send(two, conv, "a fourth, through the other replica")


def _connections(pg_server_url: str, application_name: str) -> int:
    import psycopg

    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s",
            (application_name,),
        ).fetchone()[0]


async def test_closing_the_runtime_leaves_no_connection_open(tmp_path, fake, pg_url, pg_server_url):
    # Every connection of this runtime carries its own application_name, so other tests'
    # connections to the same database do not count.
    name = "mnemo-close-" + secrets.token_hex(4)
    rt = Runtime(
        tmp_path / "replica",
        model=GeminiModel("test-key", base_url=fake.url),
        database_url=f"{pg_url}&application_name={name}",
    )
    for _ in range(2):  # closed, then used again: it reopens, and closes again
        conversations = await rt.conversations()
        conv = (await conversations.create(OWNER)).id
        fake.reply("ok")
        await send(conversations, conv, "Hi there")
        text = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
        await conversations.save_persona(OWNER, text)
        await asyncio.to_thread(rt.roundtables.list, OWNER)
        # The store's pool and both persona version pools (personas, roundtables) hold some.
        assert _connections(pg_server_url, name) >= 3
        await rt.close()
        # A closed connection leaves pg_stat_activity when its server process has exited,
        # just after the client hung up.
        for _ in range(200):  # at most 10 s
            if not (left := _connections(pg_server_url, name)):
                break
            await asyncio.sleep(0.05)
        assert left == 0, f"{left} connections still open after Runtime.close()"


def test_a_database_url_needs_mnemo_secret_at_start_up(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="set MNEMO_SECRET to the same value on every replica"):
        browser_secret(tmp_path, None, shared=True)
    assert not (tmp_path / SECRET_FILE).exists()  # no per-replica secret was generated
    monkeypatch.setenv("MNEMO_SECRET", "same-everywhere")
    assert browser_secret(tmp_path, None, shared=True) == "same-everywhere"


def test_a_database_url_that_is_not_postgresql_stops_the_runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_DATABASE_URL", "mysql://u:hunter2@db/mnemo")
    with pytest.raises(ConfigError, match="postgresql://") as err:
        Runtime(tmp_path, model=GeminiModel("k"))
    assert "hunter2" not in str(err.value)


async def test_the_append_commit_opt_in_reaches_the_store(tmp_path, fake, pg_url, monkeypatch):
    # MNEMO_PG_APPEND_COMMIT=async is the PostgreSQL store's opt-in (tests/test_memory_postgres.py
    # shows what it does); here: the runtime hands it to the store, and messages are saved.
    monkeypatch.setenv("MNEMO_PG_APPEND_COMMIT", "async")
    rt = Runtime(tmp_path / "data", model=GeminiModel("test-key", base_url=fake.url),
                 database_url=pg_url)  # fmt: skip
    try:
        conversations = await rt.conversations()
        conv = (await conversations.create(OWNER)).id
        fake.reply("Saved ", "quickly.")
        assert (await send(conversations, conv, "Hi"))[-1].saved
        assert rt._store.store._appends._async_commit
        opened = await conversations.open(OWNER, conv)
        assert [t.content for t in opened.transcript.turns] == ["Hi", "Saved quickly."]
    finally:
        await rt.aclose()
