"""Fixtures that run the memory contract on both backends: SQLite in tmp_path and PostgreSQL.

PostgreSQL comes from $MNEMO_TEST_DATABASE_URL (`.ci/postgres.sh` starts one and sets it). Each
test gets its own schema, first on the search_path, dropped afterwards, so tests never see each
other's rows. Without the variable the PostgreSQL cases skip with one line saying so; in CI
(CI=true) they fail instead, so a CI run can never pass without having tested PostgreSQL.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import weakref
from urllib.parse import quote

import pytest

TEST_URL_ENV = "MNEMO_TEST_DATABASE_URL"
NO_SERVER = f"PostgreSQL tests need a server: set {TEST_URL_ENV} (`.ci/postgres.sh` starts one)"
# Read once, at import: conftest's isolated_env clears every MNEMO_* variable for each test.
TEST_URL = os.environ.get(TEST_URL_ENV, "").strip()
IN_CI = os.environ.get("CI", "").lower() == "true"


class FakeClock:
    """A clock the test moves: the stores take `clock=` for idle expiry and timestamps."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _require_url() -> str:
    if TEST_URL:
        return TEST_URL
    if IN_CI:
        pytest.fail(f"{NO_SERVER}; CI must test PostgreSQL, so this fails instead of skipping.")
    pytest.skip(NO_SERVER)


def with_search_path(url: str, schema: str) -> str:
    """`url` with the connection's search_path set to `schema` (then public, where the
    pg_trgm extension lives: an extension belongs to one schema per database)."""
    option = quote(f"-c search_path={schema},public", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={option}"


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """The test server's URL, after checking it answers and can create pg_trgm."""
    import psycopg

    url = _require_url()
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
    except psycopg.Error as exc:
        pytest.fail(f"{TEST_URL_ENV}={url} does not answer ({exc}); start the server or unset it.")
    return url


@pytest.fixture
def pg_url(pg_server_url):
    """A PostgreSQL URL whose search_path is a fresh schema, dropped after the test."""
    import psycopg

    schema = "test_" + secrets.token_hex(6)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield with_search_path(pg_server_url, schema)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Which backend a contract test runs on."""
    return request.param


@pytest.fixture
def store_target(backend, tmp_path, request) -> str:
    """What `memory.open_store()` opens for this backend: a path or a PostgreSQL URL."""
    if backend == "sqlite":
        return str(tmp_path)
    return request.getfixturevalue("pg_url")


# Where each store opened here lives, so tests can look at its tables directly.
_TARGETS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class BackendUnderTest:
    """Opens stores on one backend for one test, and closes them afterwards."""

    def __init__(self, name: str, target: str):
        self.name = name
        self.target = target
        self.opened: list = []

    async def open(self, **kwargs):
        """`memory.open_store(target, **kwargs)`: policy, summarizer, clock."""
        from memory import open_store

        store = await open_store(self.target, **kwargs)
        _TARGETS[store] = self
        self.opened.append(store)
        return store


@pytest.fixture
async def memory_backend(backend, store_target):
    """The backend of this contract test: `await memory_backend.open(policy=...)`."""
    under_test = BackendUnderTest(backend, store_target)
    yield under_test
    for store in under_test.opened:
        await store.close()


def rows(store, statement: str, params: tuple = ()) -> list[tuple]:
    """Run `statement` (with ? placeholders, SQL both backends accept) on the store's own
    database, outside the store: what is really in the tables."""
    if _TARGETS[store].name == "sqlite":
        with sqlite3.connect(store.path) as db:
            return db.execute(statement, params).fetchall()
    import psycopg

    with psycopg.connect(_TARGETS[store].target) as conn:
        return conn.execute(statement.replace("?", "%s"), params).fetchall()


async def conversation_with_fact(store, fact, ack, filler, *, owner="ana", turns=60):
    """A conversation that opens with one planted fact and its reply, then `turns` pairs of
    filler (cycled): what recall must find the fact among."""
    conv = await store.create_conversation(owner)
    await store.append(owner, conv.id, "user", fact)
    await store.append(owner, conv.id, "assistant", ack)
    for i in range(turns):
        user, reply = filler[i % len(filler)]
        await store.append(owner, conv.id, "user", user)
        await store.append(owner, conv.id, "assistant", reply)
    await store.flush_vectors()  # written after the turns, in the background
    return conv


def vector_rows(store):
    """(model, bytes) of every stored turn vector, in turn order."""
    return rows(store, "SELECT model, length(vector) FROM turn_vectors ORDER BY turn_id")


def integrity_error(store) -> type[Exception]:
    """What the store's driver raises when a constraint refuses a row."""
    if _TARGETS[store].name == "sqlite":
        return sqlite3.IntegrityError
    import psycopg

    return psycopg.IntegrityError
