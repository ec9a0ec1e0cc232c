"""`PostgresVersions`: saved persona versions in PostgreSQL, so every replica serves the same.

Two tables, made by the numbered migrations below (recorded in `persona_migrations`, each
under a transaction-level advisory lock, like memory's): `persona_versions` holds each saved
version's exact YAML (immutable rows), `persona_current` the version in use. A new version takes
the next number and becomes current in one transaction under an advisory lock for that
(owner, persona), so two replicas saving at once get two versions, never one number twice.
Every row carries a `namespace` (the registry's folder: "personas", "roundtables"), so the
roundtable registry, which reuses this storage, never sees a persona's versions nor the reverse.

The registry is synchronous (it runs in a worker thread), so this uses psycopg's sync pool:
bounded, checked, recycled, and without prepared statements for transaction poolers.
"""

from __future__ import annotations

import threading
import time

import psycopg
from psycopg_pool import ConnectionPool

from .errors import PersonaNotFound, PersonaStoreUnavailable

POOL_MAX = 4
WAIT_S = 10.0  # for a connection: then the call fails and the registry serves built-ins
_KEY = "hashtextextended(%s || '/' || %s || '/' || %s, 0)"
MIGRATIONS = [
    (
        "m001_persona_versions",
        [
            "CREATE TABLE persona_versions (owner_key text NOT NULL, persona_id text NOT NULL, "
            "version integer NOT NULL CHECK (version >= 1), yaml_text text NOT NULL CHECK "
            "(octet_length(yaml_text) <= 65536), saved_at double precision NOT NULL, "
            "PRIMARY KEY (owner_key, persona_id, version))",
            "CREATE TABLE persona_current (owner_key text NOT NULL, persona_id text NOT NULL, "
            "version integer NOT NULL CHECK (version >= 0), "
            "PRIMARY KEY (owner_key, persona_id))",
        ],
    ),
    (
        # Roundtables reuse this storage: a namespace column keeps their versions apart. The
        # rows saved before it are personas'.
        "m002_namespaces",
        [
            "ALTER TABLE persona_versions ADD COLUMN namespace text NOT NULL DEFAULT 'personas'",
            "ALTER TABLE persona_versions DROP CONSTRAINT persona_versions_pkey, "
            "ADD PRIMARY KEY (namespace, owner_key, persona_id, version)",
            "ALTER TABLE persona_current ADD COLUMN namespace text NOT NULL DEFAULT 'personas'",
            "ALTER TABLE persona_current DROP CONSTRAINT persona_current_pkey, "
            "ADD PRIMARY KEY (namespace, owner_key, persona_id)",
        ],
    ),
]


class PostgresVersions:
    """Saved persona versions in the database at `url` (see module doc)."""

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "personas",
        pool_max: int = POOL_MAX,
        wait_s: float = WAIT_S,
    ):
        # Nothing connects here: the app starts even while the database is down, and the
        # first call migrates.
        if not namespace or len(namespace) > 40:
            raise ValueError("A version namespace is a short name, like the registry's folder.")
        self._url = url
        self._ns = namespace
        self._pool_max = pool_max
        self._wait_s = wait_s
        self._migrated = False
        self._lock = threading.Lock()  # the migrations run once; the pool opens once
        self._pool: ConnectionPool | None = None

    def _open_pool(self) -> ConnectionPool:
        # min_size=0 and no wait: opening connects nobody, so the app starts (and serves the
        # built-ins) while the database is down.
        pool = ConnectionPool(
            self._url,
            min_size=0,
            max_size=self._pool_max,
            timeout=self._wait_s,
            max_idle=300.0,
            max_lifetime=1_800.0,
            check=ConnectionPool.check_connection,
            kwargs={"autocommit": True, "prepare_threshold": None, "connect_timeout": 10},
            name=f"mnemo-{self._ns}",
            open=False,
        )
        pool.open(wait=False)
        return pool

    def close(self) -> None:
        """Close every pooled connection. A later call opens a new pool: the Runtime may be
        used again after it closed (its store reopens the same way)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _connection(self):
        """A pooled connection, after the migrations have run once."""
        with self._lock:
            if self._pool is None:
                self._pool = self._open_pool()
            pool = self._pool
            if not self._migrated:
                with pool.connection() as conn:
                    migrate(conn)
                self._migrated = True
        return pool.connection()

    def _rows(self, sql: str, params: tuple) -> list[tuple]:
        try:
            with self._connection() as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.Error as exc:
            raise unavailable(exc) from exc

    def numbers(self, owner_key: str, persona_id: str) -> list[int]:
        rows = self._rows(
            "SELECT version FROM persona_versions WHERE namespace = %s AND owner_key = %s "
            "AND persona_id = %s ORDER BY version",
            (self._ns, owner_key, persona_id),
        )
        return [v for (v,) in rows]

    def read(self, owner_key: str, persona_id: str, version: int) -> tuple[str, float]:
        rows = self._rows(
            "SELECT yaml_text, saved_at FROM persona_versions WHERE namespace = %s "
            "AND owner_key = %s AND persona_id = %s AND version = %s",
            (self._ns, owner_key, persona_id, version),
        )
        if not rows:
            raise PersonaNotFound(f"Version {version} of {persona_id!r} does not exist.")
        return rows[0]

    def create(self, owner_key: str, persona_id: str, text: str) -> tuple[int, float]:
        saved_at = time.time()
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute(
                    f"SELECT pg_advisory_xact_lock({_KEY})", (self._ns, owner_key, persona_id)
                )
                (number,) = conn.execute(
                    "INSERT INTO persona_versions (namespace, owner_key, persona_id, version, "
                    "yaml_text, saved_at) SELECT %s, %s, %s, coalesce(max(version), 0) + 1, "
                    "%s, %s FROM persona_versions WHERE namespace = %s AND owner_key = %s "
                    "AND persona_id = %s RETURNING version",
                    (self._ns, owner_key, persona_id, text, saved_at, self._ns, owner_key,
                     persona_id),
                ).fetchone()  # fmt: skip
                self._upsert_current(conn, owner_key, persona_id, number)
        except psycopg.Error as exc:
            raise unavailable(exc) from exc
        return number, saved_at

    def current(self, owner_key: str, persona_id: str) -> int | None:
        rows = self._rows(
            "SELECT version FROM persona_current WHERE namespace = %s AND owner_key = %s "
            "AND persona_id = %s",
            (self._ns, owner_key, persona_id),
        )
        return rows[0][0] if rows else None

    def set_current(self, owner_key: str, persona_id: str, version: int) -> None:
        try:
            with self._connection() as conn:
                self._upsert_current(conn, owner_key, persona_id, version)
        except psycopg.Error as exc:
            raise unavailable(exc) from exc

    def _upsert_current(self, conn: psycopg.Connection, owner_key: str, pid: str, v: int) -> None:
        conn.execute(
            "INSERT INTO persona_current (namespace, owner_key, persona_id, version) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (namespace, owner_key, persona_id) "
            "DO UPDATE SET version = excluded.version",
            (self._ns, owner_key, pid, v),
        )

    def persona_ids(self, owner_key: str) -> set[str]:
        rows = self._rows(
            "SELECT DISTINCT persona_id FROM persona_versions WHERE namespace = %s "
            "AND owner_key = %s",
            (self._ns, owner_key),
        )
        return {pid for (pid,) in rows}

    def forget(self, owner_key: str) -> int:
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute(
                    "DELETE FROM persona_current WHERE namespace = %s AND owner_key = %s",
                    (self._ns, owner_key),
                )
                cursor = conn.execute(
                    "DELETE FROM persona_versions WHERE namespace = %s AND owner_key = %s",
                    (self._ns, owner_key),
                )
                return cursor.rowcount
        except psycopg.Error as exc:
            raise unavailable(exc) from exc


def unavailable(exc: psycopg.Error) -> PersonaStoreUnavailable:
    # PoolTimeout's text says only that no connection came; the URL may hold a password.
    return PersonaStoreUnavailable(
        f"Saved personas are unavailable ({type(exc).__name__}: {exc}); built-in personas "
        "still work. Check MNEMO_DATABASE_URL and that the server is running, then try again."
    )


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply pending persona migrations, each in a transaction under an advisory lock."""
    applied = []
    for name, statements in MIGRATIONS:
        with conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock("
                "hashtextextended('mnemo.personas:' || current_schema(), 0))"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS persona_migrations "
                "(name text PRIMARY KEY, applied_at double precision NOT NULL)"
            )
            done = conn.execute("SELECT 1 FROM persona_migrations WHERE name = %s", (name,))
            if done.fetchone() is None:
                for sql in statements:
                    conn.execute(sql)
                conn.execute("INSERT INTO persona_migrations VALUES (%s, %s)", (name, time.time()))
                applied.append(name)
    return applied
