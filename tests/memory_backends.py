"""Fixtures that run the memory contract on both backends: SQLite in tmp_path and PostgreSQL.

PostgreSQL comes from $MNEMO_TEST_DATABASE_URL (`.ci/postgres.sh` starts one and sets it). Each
test gets its own schema, first on the search_path, dropped afterwards, so tests never see each
other's rows. Without the variable the PostgreSQL cases skip with one line saying so; in CI
(CI=true) they fail instead, so a CI run can never pass without having tested PostgreSQL.
"""

from __future__ import annotations

import os
import secrets
from urllib.parse import quote

import pytest

TEST_URL_ENV = "MNEMO_TEST_DATABASE_URL"
NO_SERVER = f"PostgreSQL tests need a server: set {TEST_URL_ENV} (`.ci/postgres.sh` starts one)"
# Read once, at import: conftest's isolated_env clears every MNEMO_* variable for each test.
TEST_URL = os.environ.get(TEST_URL_ENV, "").strip()
IN_CI = os.environ.get("CI", "").lower() == "true"


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
