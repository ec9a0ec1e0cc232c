"""English stemming in search and recall: "hiking" finds "hike" on both backends (SQLite's FTS5
`porter` tokenizer; PostgreSQL's Snowball `porter` dictionary without stop words, migration
m010_stemmed_words), and a database from before m010 is re-stemmed when it migrates.

Tests taking `store` or `memory_backend` run on real SQLite and real PostgreSQL; the rest are
PostgreSQL's own (tests/memory_backends.py gives each its own schema)."""

from __future__ import annotations

import logging
import secrets
import sqlite3

import psycopg
import pytest

from memory import MemoryPolicy
from memory.postgres import PostgresStore, migrations
from memory.postgres.migrations import MIGRATIONS, migrate
from memory.postgres.text import index_cjk, index_words

SMALL = MemoryPolicy(
    keep_recent=4,
    summarize_at=40,
    message_chars=400,
    summary_chars=400,
    recall_chars=600,
    history_chars=2000,
)
FILLER = [
    "What should we plan for dinner sometime this week?",
    "Maybe something simple, like soup or a salad.",
    "I was thinking about the weather again today.",
    "Rain all week, apparently. Take an umbrella.",
]


@pytest.fixture
async def store(memory_backend):
    return await memory_backend.open(policy=SMALL)


async def fill(store, owner, conv_id, n=10):
    for i in range(n):
        await store.append(owner, conv_id, "user" if i % 2 == 0 else "assistant", FILLER[i % 4])


@pytest.mark.parametrize(
    "stored,query",
    [
        ("We went hiking above Grindelwald last summer.", "any hikes you'd suggest?"),
        ("I love to hike on weekends.", "hiking"),
        ("My sister collects old films.", "a film for tonight"),
        ("The cats were fighting again.", "cat"),
    ],
)
async def test_a_stemmed_query_finds_its_match_in_search(store, stored, query):
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", stored)
    await fill(store, "ana", conv.id, 4)
    hits = await store.search("ana", query)
    assert [h.turn_id for h in hits] == [(await store.transcript("ana", conv.id))[0].id]


async def test_a_stemmed_query_recalls_an_older_turn(store):
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "Last spring we were hiking in the Dolomites.")
    await store.append("ana", conv.id, "assistant", "That sounds wonderful.")
    await fill(store, "ana", conv.id)
    ctx = await store.context("ana", conv.id, query="Where did I hike?")
    hits = [r.turn.content for r in ctx.recalled if r.neighbour_of is None]
    assert hits == ["Last spring we were hiking in the Dolomites."]
    # Without a shared stem nothing is recalled: stemming widens words, not to everything.
    assert (await store.context("ana", conv.id, query="Where did I swim?")).recalled == []


# -- PostgreSQL only -----------------------------------------------------------------------


def _sqlite_porter(words: list[str]) -> dict[str, str]:
    """How SQLite's index (FTS5 porter over unicode61) stems each word."""
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE f USING fts5(x, tokenize = 'porter unicode61')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, instance)")
        stems = {}
        for word in words:
            db.execute("DELETE FROM f")
            db.execute("INSERT INTO f (x) VALUES (?)", (word,))
            stems[word] = db.execute("SELECT term FROM v").fetchone()[0]
        return stems


WORDS = [
    "hiking", "hikes", "hike", "films", "running", "generously", "agreed", "caresses",
    "ponies", "relational", "conditional", "electricity", "hopefully", "pcs", "os", "ms",
    "sky", "reykjavik", "café", "über", "abc123", "42", "x" * 70,
]  # fmt: skip


async def test_postgres_stems_as_sqlite_does(pg_url):
    await (await PostgresStore.open(pg_url)).close()
    with psycopg.connect(pg_url) as conn:
        got = dict(
            conn.execute(
                "SELECT w, mnemo_stem(w::tsvector)::text FROM unnest(%s::text[]) w",
                ([index_words(w) for w in WORDS],),
            ).fetchall()
        )
    expected = _sqlite_porter(WORDS)
    for word in WORDS:
        stem = expected[word].replace("é", "e").replace("ü", "u")  # index_words folds them
        assert got[index_words(word)] == f"'{stem}':1", word


async def test_stemming_merges_positions_and_quotes_lexemes(pg_url):
    await (await PostgresStore.open(pg_url)).close()
    with psycopg.connect(pg_url) as conn:
        (stemmed,) = conn.execute(
            "SELECT mnemo_stem(%s::tsvector)::text", (index_words("Hikes, hiking, a hike, a lake"),)
        ).fetchone()
        (query,) = conn.execute(
            "SELECT mnemo_query(%s::tsvector)::text", (r"'hikes' 'hiking' 'o''neil' 'back\\slash'",)
        ).fetchone()
        (none,) = conn.execute("SELECT mnemo_query(''::tsvector) IS NULL").fetchone()
    assert stemmed == "'hike':1,2,3 'lake':4"
    assert query == r"'back\\slash' | 'hike' | 'o''neil'"  # quotes and backslashes kept
    assert none


async def _previous_schema(pg_url) -> None:
    """The schema as it was before m010, with turns written as the previous code wrote them
    (unstemmed words)."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await migrate(conn, MIGRATIONS[: MIGRATIONS.index(migrations.m010_stemmed_words)])
        await conn.execute(
            "INSERT INTO conversations (id, owner, created_at, last_active_at, message_count, "
            "active_count, chars) VALUES ('old', 'ana', 0, 0, 5, 5, 100)"
        )
        for text in (
            "We were hiking in the Alps.",
            "Lovely, which trails?",
            "Films about mountains too.",
            "我们在拉面店吃饭",
            "Nothing to stem here.",
        ):
            await conn.execute(
                "INSERT INTO turns (conversation_id, role, content, created_at, words, cjk) "
                "VALUES ('old', 'user', %s, 0, %s::tsvector, %s)",
                (text, index_words(text), index_cjk(text)),
            )


async def test_migration_restems_a_previous_database_with_progress(pg_url, caplog, monkeypatch):
    await _previous_schema(pg_url)
    monkeypatch.setattr(migrations, "RESTEM_BATCH", 2)  # several batches, one log line each
    with caplog.at_level(logging.INFO, logger="memory.postgres.migrations"):
        store = await PostgresStore.open(pg_url)
    try:
        log = [r.getMessage() for r in caplog.records]
        assert log[0] == "Stemming the search index over 5 messages"
        assert log[1:4] == [f"Search index: {n} of 5 messages stemmed" for n in (2, 4, 5)]
        assert log[4].startswith("Search index stemmed: 5 messages in ")
        # Old turns now hold exactly what a new append writes for the same text.
        new = await store.create_conversation("ana")
        for (text,) in _rows(pg_url, "SELECT content FROM turns ORDER BY id"):
            await store.append("ana", new.id, "user", text)
        old_words, new_words = (
            _rows(
                pg_url, "SELECT words::text FROM turns WHERE conversation_id = %s ORDER BY id", (c,)
            )
            for c in ("old", new.id)
        )
        assert old_words == new_words
        assert old_words[0] == ("'alp':2 'hike':1",)  # "We were hiking in the Alps."
        hits = await store.search("ana", "hike films 拉面")
        assert {h.conversation_id for h in hits} == {"old", new.id} and len(hits) == 6
        indexes = _rows(
            pg_url, "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
        )
        assert ("turns_words",) in indexes
    finally:
        await store.close()


async def test_migration_on_an_empty_previous_database_logs_nothing(pg_url, caplog):
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await migrate(conn, MIGRATIONS[: MIGRATIONS.index(migrations.m010_stemmed_words)])
    with caplog.at_level(logging.INFO, logger="memory.postgres.migrations"):
        await (await PostgresStore.open(pg_url)).close()
    assert caplog.records == []
    assert ("m010_stemmed_words",) in _rows(pg_url, "SELECT name FROM mnemo_migrations")


async def test_a_user_who_is_not_superuser_can_migrate(pg_server_url, pg_url):
    # As on Supabase or Neon: the app's user owns its schema and is nothing more.
    role = "mnemo_plain_" + secrets.token_hex(4)
    schema = psycopg.conninfo.conninfo_to_dict(pg_url)["options"].split("=")[1].split(",")[0]
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        conn.execute(f"ALTER SCHEMA {schema} OWNER TO {role}")
    try:
        store = await PostgresStore.open(psycopg.conninfo.make_conninfo(pg_url, user=role))
        try:
            conv = await store.create_conversation("ana")
            await store.append("ana", conv.id, "user", "We were hiking.")
            assert len(await store.search("ana", "hikes")) == 1
        finally:
            await store.close()
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")  # the fixture drops it afterwards
            conn.execute(f"DROP ROLE {role}")


def _rows(url, statement, params=()):
    with psycopg.connect(url) as conn:
        return conn.execute(statement, params).fetchall()
