"""The PostgreSQL store's connection pool: how it opens, how it checks connections, and what
its failures mean (StorageUnavailable with what to do next, or worth one more try).

psycopg's `AsyncConnectionPool`, bounded, with `max_idle` and `max_lifetime`, prepared
statements off (`prepare_threshold=None`) for pgbouncer and Supabase's transaction pooler, and
connections in autocommit. The check before a connection is handed out costs a round trip,
which on a busy replica is a second one for nearly every call: `_check` skips it for a
connection given back moments ago while its socket has received nothing, and asks the server
otherwise.
"""

from __future__ import annotations

import select
import time
import weakref

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..errors import StorageUnavailable
from .migrations import migrate

POOL_MIN = 1
POOL_MAX = 10
POOL_MAX_IDLE_S = 300.0
POOL_MAX_LIFETIME_S = 1_800.0
CONNECT_TIMEOUT_S = 10
# A connection back in the pool for less than this is handed out again without the check's
# round trip (see _check): on a busy replica that is nearly every checkout.
CHECK_IDLE_S = 2.0

# SQLSTATE class -> what to do next.
_ADVICE = {
    "08": "check the server is running and MNEMO_DATABASE_URL points at it",
    "28": "check the user name and password in MNEMO_DATABASE_URL",
    "3D": "create the database first (createdb NAME) or fix its name in MNEMO_DATABASE_URL",
    "42": "grant the database user CREATE on its schema so Mnemo can migrate",
    "53": "the server is out of connections, memory or disk; lower the pool size or free space",
    "57": "the server is shutting down or restarting; try again in a moment",
    "40": "the server aborted the transaction; try again",
}


def safe_url(url: str) -> str:
    """`url` with any password replaced by ***, for messages and logs."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the PostgreSQL URL"
    host, port, db = info.get("host", "localhost"), info.get("port", "5432"), info.get("dbname")
    user = info.get("user")
    return f"postgresql://{user + ':***@' if user else ''}{host}:{port}/{db or ''}"


# A refused connection carries no SQLSTATE, only libpq's text.
_CONNECT_ADVICE = {
    "does not exist": _ADVICE["3D"],
    "password authentication failed": _ADVICE["28"],
    "no password supplied": _ADVICE["28"],
    "too many clients": _ADVICE["53"],
}


def unavailable(exc: BaseException, url: str) -> StorageUnavailable:
    state = getattr(exc, "sqlstate", None) or ""
    text = str(exc)
    if isinstance(exc, PoolTimeout):
        advice = "every pooled connection stayed busy; raise the pool size or try again"
    elif state[:2] in _ADVICE:
        advice = _ADVICE[state[:2]]
    else:
        found = (a for k, a in _CONNECT_ADVICE.items() if k in text)
        advice = next(found, _ADVICE["08"])
    return StorageUnavailable(f"The memory database at {safe_url(url)} failed ({exc}): {advice}.")


# When each pooled connection was last given back, so a busy pool skips most checks.
_returned_at: weakref.WeakKeyDictionary[AsyncConnection, float] = weakref.WeakKeyDictionary()


async def _returned(conn: AsyncConnection) -> None:
    _returned_at[conn] = time.monotonic()


async def _check(conn: AsyncConnection) -> None:
    """The pool's check before handing out a connection. A connection given back less than
    CHECK_IDLE_S ago, whose socket has received nothing since, worked moments ago and is
    handed out without a round trip. Otherwise (idle for longer, or the server has sent
    something: a server ending a connection first says so, then closes it) an empty query
    asks the server; the pool replaces the connection if that fails."""
    recent = time.monotonic() - _returned_at.get(conn, float("-inf")) < CHECK_IDLE_S
    if not recent or conn.closed or _has_input(conn):
        await AsyncConnectionPool.check_connection(conn)


def _has_input(conn: AsyncConnection) -> bool:
    # poll, not select: select cannot watch a descriptor numbered 1024 or more.
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLIN)
    return bool(poller.poll(0))


async def open_pool(url: str, pool_max: int = POOL_MAX) -> AsyncConnectionPool:
    """Migrate, then open the pool. Raises StorageUnavailable with what to do next."""
    kwargs = {
        "autocommit": True,
        "prepare_threshold": None,
        "connect_timeout": CONNECT_TIMEOUT_S,
    }
    try:
        # Migrate on a connection of its own first: a wrong URL, password or database
        # fails here with the server's own reason, not as a pool timeout later.
        async with await AsyncConnection.connect(url, **kwargs) as conn:
            await migrate(conn)
    except (psycopg.Error, OSError) as exc:
        raise unavailable(exc, url) from exc
    pool = AsyncConnectionPool(
        url,
        min_size=min(POOL_MIN, pool_max),
        max_size=pool_max,
        max_idle=POOL_MAX_IDLE_S,
        max_lifetime=POOL_MAX_LIFETIME_S,
        check=_check,
        reset=_returned,
        kwargs=kwargs,
        name="mnemo",
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 5)
    except (psycopg.Error, OSError) as exc:
        await pool.close()
        raise unavailable(exc, url) from exc
    return pool


def broken_connection(exc: StorageUnavailable) -> bool:
    """Whether `exc` (raised at the store's boundary) is a connection that broke or a server
    going away, rather than a pool timeout or a statement's own error. A read, or a write
    whose transaction had not begun, may run once more on another connection: nothing it did
    can be repeated wrongly."""
    cause = exc.__cause__
    if isinstance(cause, PoolTimeout) or not isinstance(cause, psycopg.OperationalError):
        return False
    return (cause.sqlstate or "")[:2] in ("", "08", "57")
