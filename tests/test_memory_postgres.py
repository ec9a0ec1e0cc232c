"""memory/postgres/: what only the PostgreSQL backend has: its schema, migrations under an
advisory lock, its pool, its search indexes, and several stores ("replicas") on one database.

The verbs themselves are the contract suite's (tests/test_memory*.py, run on both backends).
Real PostgreSQL from $MNEMO_TEST_DATABASE_URL, one schema per test (tests/memory_backends.py).
"""

# ruff: noqa: E501 -- EXPECTED_SCHEMA holds the server's DDL text verbatim
from __future__ import annotations

import asyncio
import secrets
import socket
import time

import psycopg
import pytest
from memory_backends import FakeClock

from memory import InvalidInput, MemoryPolicy, StorageUnavailable
from memory.postgres import PostgresStore, sql
from memory.postgres.appends import AppendQueue
from memory.postgres.migrations import MIGRATIONS
from memory.postgres.text import cjk_patterns, index_cjk, index_words, word_query
from memory.recall import query_terms

SCHEMA_SQL = """
SELECT 'column', c.table_name || '.' || c.column_name,
       c.data_type || CASE WHEN c.is_nullable = 'NO' THEN ' NOT NULL' ELSE '' END
       || coalesce(' DEFAULT ' || c.column_default, '')
       || CASE WHEN c.is_identity = 'YES' THEN ' IDENTITY' ELSE '' END
FROM information_schema.columns c WHERE c.table_schema = current_schema()
UNION ALL
SELECT 'constraint', t.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid
WHERE t.relnamespace = current_schema()::regnamespace
UNION ALL
SELECT 'index', indexname, regexp_replace(indexdef, ' ON \\S+\\.', ' ON ')
FROM pg_indexes WHERE schemaname = current_schema()
UNION ALL
SELECT 'function', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
       pg_get_function_result(p.oid) || ' ' || l.lanname || ' ' || p.provolatile::text
FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
WHERE p.pronamespace = current_schema()::regnamespace
UNION ALL
SELECT 'dictionary', d.dictname, t.tmplname || coalesce(' ' || d.dictinitoption, '')
FROM pg_ts_dict d JOIN pg_ts_template t ON t.oid = d.dicttemplate
WHERE d.dictnamespace = current_schema()::regnamespace
ORDER BY 1, 2
"""

# Long lines: the server's own text, compared verbatim.
EXPECTED_SCHEMA = [
    ("column", "api_tokens.created_at", "double precision NOT NULL"),
    ("column", "api_tokens.hint", "text NOT NULL"),
    ("column", "api_tokens.id", "text NOT NULL"),
    ("column", "api_tokens.last_used_at", "double precision"),
    ("column", "api_tokens.name", "text NOT NULL"),
    ("column", "api_tokens.owner", "text NOT NULL"),
    ("column", "api_tokens.revoked_at", "double precision"),
    ("column", "api_tokens.seq", "bigint NOT NULL IDENTITY"),
    ("column", "api_tokens.token_hash", "text NOT NULL"),
    ("column", "conversations.active_count", "integer NOT NULL DEFAULT 0"),
    ("column", "conversations.chars", "bigint NOT NULL DEFAULT 0"),
    ("column", "conversations.created_at", "double precision NOT NULL"),
    ("column", "conversations.expires_at", "double precision"),
    ("column", "conversations.id", "text NOT NULL"),
    ("column", "conversations.last_active_at", "double precision NOT NULL"),
    ("column", "conversations.message_count", "integer NOT NULL DEFAULT 0"),
    ("column", "conversations.owner", "text NOT NULL"),
    ("column", "conversations.persona_id", "text NOT NULL DEFAULT 'assistant'::text"),
    ("column", "conversations.persona_version", "integer"),
    ("column", "conversations.retention_minutes", "integer"),
    ("column", "conversations.seq", "bigint NOT NULL IDENTITY"),
    ("column", "conversations.summarizing_until", "double precision"),
    ("column", "conversations.summary_count", "integer NOT NULL DEFAULT 0"),
    ("column", "conversations.title", "text"),
    ("column", "mnemo_migrations.applied_at", "double precision NOT NULL"),
    ("column", "mnemo_migrations.name", "text NOT NULL"),
    ("column", "owner_settings.about_me", "boolean NOT NULL DEFAULT false"),
    ("column", "owner_settings.owner", "text NOT NULL"),
    ("column", "owner_settings.time_zone", "text"),
    ("column", "pinned_facts.content", "text NOT NULL"),
    ("column", "pinned_facts.conversation_id", "text"),
    ("column", "pinned_facts.created_at", "double precision NOT NULL"),
    ("column", "pinned_facts.id", "bigint NOT NULL IDENTITY"),
    ("column", "pinned_facts.owner", "text NOT NULL"),
    ("column", "pinned_facts.source_turn_id", "bigint"),
    ("column", "turn_metrics.budget_chars", "integer"),
    ("column", "turn_metrics.conversation_id", "text"),
    ("column", "turn_metrics.created_at", "double precision NOT NULL"),
    ("column", "turn_metrics.error_kind", "text"),
    ("column", "turn_metrics.first_token_ms", "integer"),
    ("column", "turn_metrics.id", "bigint NOT NULL IDENTITY"),
    ("column", "turn_metrics.input_tokens", "integer"),
    ("column", "turn_metrics.latency_ms", "integer"),
    ("column", "turn_metrics.model", "text NOT NULL"),
    ("column", "turn_metrics.output_tokens", "integer"),
    ("column", "turn_metrics.owner", "text NOT NULL"),
    ("column", "turn_metrics.persona_chars", "integer"),
    ("column", "turn_metrics.persona_id", "text"),
    ("column", "turn_metrics.pinned_chars", "integer"),
    ("column", "turn_metrics.recalled_chars", "integer"),
    ("column", "turn_metrics.recent_chars", "integer"),
    ("column", "turn_metrics.status", "text NOT NULL"),
    ("column", "turn_metrics.summary_chars", "integer"),
    ("column", "turn_vectors.conversation_id", "text NOT NULL"),
    ("column", "turn_vectors.model", "text NOT NULL"),
    ("column", "turn_vectors.turn_id", "bigint NOT NULL"),
    ("column", "turn_vectors.vector", "bytea NOT NULL"),
    ("column", "turns.cjk", "text"),
    ("column", "turns.compacted", "boolean NOT NULL DEFAULT false"),
    ("column", "turns.content", "text NOT NULL"),
    ("column", "turns.conversation_id", "text NOT NULL"),
    ("column", "turns.covers_count", "integer"),
    ("column", "turns.covers_from_id", "bigint"),
    ("column", "turns.covers_to_id", "bigint"),
    ("column", "turns.created_at", "double precision NOT NULL"),
    ("column", "turns.id", "bigint NOT NULL IDENTITY"),
    ("column", "turns.incomplete", "boolean NOT NULL DEFAULT false"),
    ("column", "turns.is_summary", "boolean NOT NULL DEFAULT false"),
    ("column", "turns.origin", "text"),
    ("column", "turns.outcome", "text"),
    ("column", "turns.outcome_note", "text"),
    ("column", "turns.role", "text NOT NULL"),
    ("column", "turns.speaker", "text"),
    ("column", "turns.words", "tsvector NOT NULL DEFAULT ''::tsvector"),
    ("column", "vector_backfill.done_upto", "bigint NOT NULL"),
    ("column", "vector_backfill.model", "text NOT NULL"),
    ("column", "vector_backfill.one", "integer NOT NULL"),
    ("constraint", "api_tokens.api_tokens_hint_check", "CHECK ((char_length(hint) <= 8))"),
    (
        "constraint",
        "api_tokens.api_tokens_name_check",
        "CHECK (((char_length(name) >= 1) AND (char_length(name) <= 60)))",
    ),
    (
        "constraint",
        "api_tokens.api_tokens_owner_check",
        "CHECK (((char_length(owner) >= 1) AND (char_length(owner) <= 200)))",
    ),
    ("constraint", "api_tokens.api_tokens_pkey", "PRIMARY KEY (id)"),
    (
        "constraint",
        "api_tokens.api_tokens_token_hash_check",
        "CHECK ((char_length(token_hash) = 64))",
    ),
    ("constraint", "api_tokens.api_tokens_token_hash_key", "UNIQUE (token_hash)"),
    ("constraint", "conversations.conversations_active_count_check", "CHECK ((active_count >= 0))"),
    ("constraint", "conversations.conversations_chars_check", "CHECK ((chars >= 0))"),
    ("constraint", "conversations.conversations_check", "CHECK ((active_count <= message_count))"),
    (
        "constraint",
        "conversations.conversations_message_count_check",
        "CHECK ((message_count >= 0))",
    ),
    (
        "constraint",
        "conversations.conversations_owner_check",
        "CHECK (((char_length(owner) >= 1) AND (char_length(owner) <= 200)))",
    ),
    ("constraint", "conversations.conversations_pkey", "PRIMARY KEY (id)"),
    (
        "constraint",
        "conversations.conversations_retention_minutes_check",
        "CHECK (((retention_minutes IS NULL) OR (retention_minutes > 0)))",
    ),
    ("constraint", "conversations.conversations_seq_key", "UNIQUE (seq)"),
    (
        "constraint",
        "conversations.conversations_summary_count_check",
        "CHECK ((summary_count >= 0))",
    ),
    (
        "constraint",
        "conversations.conversations_title_check",
        "CHECK (((title IS NULL) OR ((char_length(title) >= 1) AND (char_length(title) <= 100))))",
    ),
    ("constraint", "mnemo_migrations.mnemo_migrations_pkey", "PRIMARY KEY (name)"),
    (
        "constraint",
        "owner_settings.owner_settings_owner_check",
        "CHECK (((char_length(owner) >= 1) AND (char_length(owner) <= 200)))",
    ),
    ("constraint", "owner_settings.owner_settings_pkey", "PRIMARY KEY (owner)"),
    (
        "constraint",
        "owner_settings.owner_settings_time_zone_check",
        "CHECK (((time_zone IS NULL) OR ((char_length(time_zone) >= 1) AND (char_length(time_zone) <= 64))))",
    ),
    (
        "constraint",
        "pinned_facts.pinned_facts_content_check",
        "CHECK (((char_length(content) >= 1) AND (char_length(content) <= 500)))",
    ),
    (
        "constraint",
        "pinned_facts.pinned_facts_conversation_id_fkey",
        "FOREIGN KEY (conversation_id) REFERENCES conversations(id) ON DELETE CASCADE",
    ),
    (
        "constraint",
        "pinned_facts.pinned_facts_owner_check",
        "CHECK (((char_length(owner) >= 1) AND (char_length(owner) <= 200)))",
    ),
    ("constraint", "pinned_facts.pinned_facts_pkey", "PRIMARY KEY (id)"),
    (
        "constraint",
        "turn_metrics.turn_metrics_budget_chars_check",
        "CHECK (((budget_chars IS NULL) OR (budget_chars >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_first_token_ms_check",
        "CHECK (((first_token_ms IS NULL) OR (first_token_ms >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_input_tokens_check",
        "CHECK (((input_tokens IS NULL) OR (input_tokens >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_latency_ms_check",
        "CHECK (((latency_ms IS NULL) OR (latency_ms >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_output_tokens_check",
        "CHECK (((output_tokens IS NULL) OR (output_tokens >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_persona_chars_check",
        "CHECK (((persona_chars IS NULL) OR (persona_chars >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_pinned_chars_check",
        "CHECK (((pinned_chars IS NULL) OR (pinned_chars >= 0)))",
    ),
    ("constraint", "turn_metrics.turn_metrics_pkey", "PRIMARY KEY (id)"),
    (
        "constraint",
        "turn_metrics.turn_metrics_recalled_chars_check",
        "CHECK (((recalled_chars IS NULL) OR (recalled_chars >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_recent_chars_check",
        "CHECK (((recent_chars IS NULL) OR (recent_chars >= 0)))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_status_check",
        "CHECK ((status = ANY (ARRAY['ok'::text, 'error'::text, 'stopped'::text, 'refused'::text])))",
    ),
    (
        "constraint",
        "turn_metrics.turn_metrics_summary_chars_check",
        "CHECK (((summary_chars IS NULL) OR (summary_chars >= 0)))",
    ),
    ("constraint", "turn_vectors.turn_vectors_pkey", "PRIMARY KEY (turn_id)"),
    (
        "constraint",
        "turn_vectors.turn_vectors_turn_id_fkey",
        "FOREIGN KEY (turn_id) REFERENCES turns(id) ON DELETE CASCADE",
    ),
    ("constraint", "turn_vectors.turn_vectors_vector_check", "CHECK ((octet_length(vector) > 0))"),
    ("constraint", "turns.turns_check", "CHECK ((is_summary = (role = 'summary'::text)))"),
    (
        "constraint",
        "turns.turns_check1",
        "CHECK (((role = 'summary'::text) = (covers_to_id IS NOT NULL)))",
    ),
    (
        "constraint",
        "turns.turns_check2",
        "CHECK (((covers_from_id IS NULL) OR (covers_from_id <= covers_to_id)))",
    ),
    (
        "constraint",
        "turns.turns_check3",
        "CHECK (((origin IS NULL) OR ((origin = 'edited'::text) AND (role = 'summary'::text)) OR ((origin = 'tool'::text) AND (role = 'user'::text))))",
    ),
    (
        "constraint",
        "turns.turns_content_check",
        "CHECK (((char_length(content) >= 1) AND (char_length(content) <= 10000)))",
    ),
    (
        "constraint",
        "turns.turns_conversation_id_fkey",
        "FOREIGN KEY (conversation_id) REFERENCES conversations(id) ON DELETE CASCADE",
    ),
    (
        "constraint",
        "turns.turns_outcome_check",
        "CHECK (((outcome IS NULL) OR (outcome = ANY (ARRAY['failed'::text, 'stopped'::text, 'incomplete'::text]))))",
    ),
    (
        "constraint",
        "turns.turns_outcome_note_check",
        "CHECK (((outcome_note IS NULL) OR (char_length(outcome_note) <= 1000)))",
    ),
    ("constraint", "turns.turns_pkey", "PRIMARY KEY (id)"),
    (
        "constraint",
        "turns.turns_role_check",
        "CHECK ((role = ANY (ARRAY['user'::text, 'assistant'::text, 'summary'::text])))",
    ),
    (
        "constraint",
        "turns.turns_speaker_check",
        "CHECK (((speaker IS NULL) OR ((char_length(speaker) >= 1) AND (char_length(speaker) <= 80))))",
    ),
    ("constraint", "vector_backfill.vector_backfill_one_check", "CHECK ((one = 1))"),
    ("constraint", "vector_backfill.vector_backfill_pkey", "PRIMARY KEY (one)"),
    ("dictionary", "mnemo_porter", "snowball language = 'porter'"),
    (
        "function",
        "mnemo_context(conv text, owner_id text, now_s double precision, keep integer)",
        "TABLE(message_count integer, active_count integer, kind integer, id bigint, conversation_id text, role text, content text, created_at double precision, is_summary boolean, compacted boolean, covers_from_id bigint, covers_to_id bigint, covers_count integer, incomplete boolean, speaker text, origin text, outcome text, outcome_note text, rank double precision, neighbour_of bigint, vector bytea) plpgsql s",
    ),
    ("function", "mnemo_query(words tsvector)", "tsquery sql i"),
    ("function", "mnemo_stem(words tsvector)", "tsvector sql i"),
    (
        "index",
        "api_tokens_owner",
        "CREATE INDEX api_tokens_owner ON api_tokens USING btree (owner, created_at DESC)",
    ),
    (
        "index",
        "api_tokens_pkey",
        "CREATE UNIQUE INDEX api_tokens_pkey ON api_tokens USING btree (id)",
    ),
    (
        "index",
        "api_tokens_token_hash_key",
        "CREATE UNIQUE INDEX api_tokens_token_hash_key ON api_tokens USING btree (token_hash)",
    ),
    (
        "index",
        "conversations_expires",
        "CREATE INDEX conversations_expires ON conversations USING btree (expires_at) WHERE (expires_at IS NOT NULL)",
    ),
    (
        "index",
        "conversations_owner_active",
        "CREATE INDEX conversations_owner_active ON conversations USING btree (owner, last_active_at DESC, seq DESC)",
    ),
    (
        "index",
        "conversations_pkey",
        "CREATE UNIQUE INDEX conversations_pkey ON conversations USING btree (id)",
    ),
    (
        "index",
        "conversations_seq_key",
        "CREATE UNIQUE INDEX conversations_seq_key ON conversations USING btree (seq)",
    ),
    (
        "index",
        "mnemo_migrations_pkey",
        "CREATE UNIQUE INDEX mnemo_migrations_pkey ON mnemo_migrations USING btree (name)",
    ),
    (
        "index",
        "owner_settings_pkey",
        "CREATE UNIQUE INDEX owner_settings_pkey ON owner_settings USING btree (owner)",
    ),
    (
        "index",
        "pinned_facts_conversation",
        "CREATE INDEX pinned_facts_conversation ON pinned_facts USING btree (conversation_id)",
    ),
    (
        "index",
        "pinned_facts_pkey",
        "CREATE UNIQUE INDEX pinned_facts_pkey ON pinned_facts USING btree (id)",
    ),
    (
        "index",
        "pinned_facts_scope",
        "CREATE INDEX pinned_facts_scope ON pinned_facts USING btree (owner, conversation_id, id)",
    ),
    (
        "index",
        "turn_metrics_conversation",
        "CREATE INDEX turn_metrics_conversation ON turn_metrics USING btree (conversation_id, id) WHERE (conversation_id IS NOT NULL)",
    ),
    (
        "index",
        "turn_metrics_owner_time",
        "CREATE INDEX turn_metrics_owner_time ON turn_metrics USING btree (owner, created_at)",
    ),
    (
        "index",
        "turn_metrics_pkey",
        "CREATE UNIQUE INDEX turn_metrics_pkey ON turn_metrics USING btree (id)",
    ),
    (
        "index",
        "turn_vectors_conversation",
        "CREATE INDEX turn_vectors_conversation ON turn_vectors USING btree (conversation_id, turn_id)",
    ),
    (
        "index",
        "turn_vectors_pkey",
        "CREATE UNIQUE INDEX turn_vectors_pkey ON turn_vectors USING btree (turn_id)",
    ),
    (
        "index",
        "turns_cjk",
        "CREATE INDEX turns_cjk ON turns USING gin (cjk gin_trgm_ops) WHERE (cjk IS NOT NULL)",
    ),
    (
        "index",
        "turns_conversation",
        "CREATE INDEX turns_conversation ON turns USING btree (conversation_id, compacted, is_summary, id)",
    ),
    (
        "index",
        "turns_conversation_id",
        "CREATE INDEX turns_conversation_id ON turns USING btree (conversation_id, id)",
    ),
    ("index", "turns_pkey", "CREATE UNIQUE INDEX turns_pkey ON turns USING btree (id)"),
    ("index", "turns_words", "CREATE INDEX turns_words ON turns USING gin (words)"),
    (
        "index",
        "vector_backfill_pkey",
        "CREATE UNIQUE INDEX vector_backfill_pkey ON vector_backfill USING btree (one)",
    ),
]


def rows(url, statement, params=()):
    with psycopg.connect(url) as conn:
        return conn.execute(statement, params).fetchall()


def run(url, statement):
    with psycopg.connect(url) as conn:
        conn.execute(statement)


@pytest.fixture
async def store(pg_url):
    s = await PostgresStore.open(pg_url, clock=FakeClock())
    yield s
    await s.close()


# -- schema and migrations ----------------------------------------------------------------


async def test_schema_is_pinned(store, pg_url):
    assert rows(pg_url, SCHEMA_SQL) == EXPECTED_SCHEMA


async def test_replicas_starting_together_migrate_once(pg_url):
    stores = await asyncio.gather(*(PostgresStore.open(pg_url) for _ in range(6)))
    for s in stores:
        await s.close()
    names = rows(pg_url, "SELECT name FROM mnemo_migrations ORDER BY name")
    assert [n for (n,) in names] == [fn.__name__ for fn in MIGRATIONS]
    again = await PostgresStore.open(pg_url)  # reopening applies nothing and keeps the data
    await again.close()
    assert len(rows(pg_url, "SELECT name FROM mnemo_migrations")) == len(MIGRATIONS)


async def test_the_pool_is_bounded_checked_and_pooler_safe(store):
    pool = store._pool
    assert pool.max_size == 10 and pool.min_size == 1
    assert pool.max_idle == 300 and pool.max_lifetime == 1800
    assert pool._check is not None
    async with pool.connection() as conn:
        # No server-side prepared statements: pgbouncer's transaction mode cannot keep them.
        assert conn.prepare_threshold is None
        assert conn.autocommit


# -- failures say what to do next ---------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_no_server_is_a_clear_error(pg_server_url):
    url = f"postgresql://mnemo:hunter2@127.0.0.1:{_closed_port()}/mnemo"
    with pytest.raises(StorageUnavailable) as err:
        await PostgresStore.open(url)
    message = str(err.value)
    assert "hunter2" not in message  # the password never reaches a message or a log
    assert "MNEMO_DATABASE_URL" in message


async def test_missing_database_says_create_it(pg_server_url):
    url = pg_server_url.rsplit("/", 1)[0] + "/no_such_db_here"
    with pytest.raises(StorageUnavailable, match="createdb"):
        await PostgresStore.open(url)


async def test_nul_is_refused_with_advice_and_stores_nothing(store, pg_url):
    conv = await store.create_conversation("ana")
    with pytest.raises(InvalidInput, match="NUL"):
        await store.append("ana", conv.id, "user", "before\x00after")
    with pytest.raises(InvalidInput, match="NUL"):
        await store.rename_conversation("ana", conv.id, "bad\x00title")
    assert rows(pg_url, "SELECT count(*) FROM turns") == [(0,)]
    assert (await store.get_conversation("ana", conv.id)).title is None


def end_connections(url, application_name):
    """End the connections named `application_name`, as a server restart does, and wait
    until their server processes are gone (each says why to its client, then hangs up)."""
    with psycopg.connect(url, autocommit=True) as conn:
        # Materialized first: a WHERE may call pg_terminate_backend before the name filter.
        killed = conn.execute(
            "WITH named AS MATERIALIZED (SELECT pid FROM pg_stat_activity "
            "WHERE application_name = %s) SELECT pid FROM named WHERE pg_terminate_backend(pid)",
            (application_name,),
        ).fetchall()
        pids = [pid for (pid,) in killed]
        assert pids, "no connection to end"
        for _ in range(200):
            left = "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)"
            if conn.execute(left, (pids,)).fetchone()[0] == 0:
                return
            time.sleep(0.05)
        raise AssertionError(f"connections {pids} were not ended within 10 s")


@pytest.mark.parametrize("first", ["read", "append"])
async def test_connections_killed_moments_after_use_are_replaced(pg_url, first):
    # The server ends every connection of the pool (a restart, a failover, an idle timeout)
    # moments after they were used: connections given back moments ago skip the pool's check
    # round trip unless the server has said something since, and a server ending one says
    # so first. No message and no read is lost.
    name = "mnemo-kill-" + secrets.token_hex(4)
    store = await PostgresStore.open(f"{pg_url}&application_name={name}", clock=FakeClock())
    try:
        conv = await store.create_conversation("ana")
        await asyncio.gather(*(store.get_conversation("ana", conv.id) for _ in range(5)))
        end_connections(pg_url, name)
        if first == "read":
            assert (await store.context("ana", conv.id, query="anything")).turns == []
        await store.append("ana", conv.id, "user", "still here")
        end_connections(pg_url, name)
        assert [t.content for t in await store.transcript("ana", conv.id)] == ["still here"]
    finally:
        await store.close()


async def test_appends_arriving_together_are_all_written_in_order(store):
    # 30 conversations, each appending 6 messages one after the other, all at once: they go
    # out in shared transactions, and nothing is lost, duplicated or reordered.
    convs = [(await store.create_conversation("ana")).id for _ in range(30)]

    async def talk(conv_id):
        return [
            (await store.append("ana", conv_id, ("user", "assistant")[k % 2], f"m{k}")).id
            for k in range(6)
        ]

    ids = await asyncio.gather(*(talk(c) for c in convs))
    for conv_id, turn_ids in zip(convs, ids, strict=True):
        turns = await store.transcript("ana", conv_id)
        assert [(t.id, t.content) for t in turns] == list(
            zip(turn_ids, [f"m{k}" for k in range(6)], strict=True)
        )
        assert (await store.get_conversation("ana", conv_id)).message_count == 6


async def test_appends_together_keep_owner_isolation_titles_and_vectors(pg_url, caplog):
    class Embedder:
        name, dims = "test-embedder", 4

        async def embed(self, texts):
            return [[1.0, float(len(t)), 0.0, 0.5] for t in texts]

    store = await PostgresStore.open(pg_url, clock=FakeClock(), embedder=Embedder())
    try:
        mine = [(await store.create_conversation("ana")).id for _ in range(4)]
        expired = await store.create_conversation("ana", retention_minutes=1)
        store._clock.now += 120
        calls = [("ana", c, f"first in {n}") for n, c in enumerate(mine)]
        calls += [("mallory", mine[0], "not yours"), ("ana", "no-such-id", "nowhere")]
        calls += [("ana", expired.id, "too late"), ("ana", mine[1], "second in 1")]
        results = await asyncio.gather(
            *(store.append(owner, c, "user", text) for owner, c, text in calls),
            return_exceptions=True,
        )
        assert [type(r).__name__ for r in results] == ["Turn"] * 4 + [
            "ConversationNotFound"
        ] * 3 + ["Turn"]
        for n, c in enumerate(mine):
            conv = await store.get_conversation("ana", c)
            texts = [t.content for t in await store.transcript("ana", c)]
            expected = [f"first in {n}"] + (["second in 1"] if n == 1 else [])
            assert (texts, conv.title, conv.message_count) == (expected, expected[0], len(expected))
        written = [r.id for r in results if not isinstance(r, Exception)]
        await store.flush_vectors()  # written after their turns, in the background
        vectors = rows(pg_url, "SELECT turn_id, model FROM turn_vectors ORDER BY turn_id")
        assert vectors == [(i, "test-embedder") for i in sorted(written)]
        assert "failed together" not in caplog.text  # written as batches, not one by one
    finally:
        await store.close()


async def test_one_failing_append_in_a_batch_fails_alone(store, pg_url, caplog):
    # A statement error aborts its whole transaction; the batch's other appends are written
    # one by one. The failure here is a real one from the server: a trigger refusing a row.
    run(
        pg_url,
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.content = 'poison' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$",
    )
    run(
        pg_url,
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON turns "
        "FOR EACH ROW EXECUTE FUNCTION refuse_poison()",
    )
    convs = [(await store.create_conversation("ana")).id for _ in range(12)]
    texts = ["poison" if i == 5 else f"fine {i}" for i in range(12)]
    results = await asyncio.gather(
        *(store.append("ana", c, "user", t) for c, t in zip(convs, texts, strict=True)),
        return_exceptions=True,
    )
    assert isinstance(results[5], StorageUnavailable) and "refused" in str(results[5])
    assert "appends failed together" in caplog.text
    assert [r.content for i, r in enumerate(results) if i != 5] == [
        t for t in texts if t != "poison"
    ]
    counts = [(await store.get_conversation("ana", c)).message_count for c in convs]
    assert counts == [0 if i == 5 else 1 for i in range(12)]


async def test_a_lone_drain_never_strands_an_append(store):
    # A drain that found the queue empty used to leave the set of running drains only a step
    # later (a done callback): an append queued in that step saw every drain running, and
    # waited forever. With one drain that was the first append after every batch.
    store._appends = AppendQueue(store._conn, drains=1)
    convs = [(await store.create_conversation("ana")).id for _ in range(10)]

    async def talk(conv_id):
        for k in range(5):
            await store.append("ana", conv_id, ("user", "assistant")[k % 2], f"m{k}")

    await asyncio.wait_for(asyncio.gather(*(talk(c) for c in convs)), timeout=60)
    counts = [(await store.get_conversation("ana", c)).message_count for c in convs]
    assert counts == [5] * 10


async def test_an_async_commit_append_is_local_to_its_own_transaction(store, pg_url):
    # The opt-in's statement turns synchronous_commit off for the transaction it runs in and
    # for no other: on a pooled (or pgbouncer-shared) connection nothing carries over. (The
    # store fixture made the schema.)
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "INSERT INTO conversations (id, owner, created_at, last_active_at) "
            "VALUES ('c1', 'ana', 0, 0)"
        )
        conn.commit()
        params = dict.fromkeys(
            ("incomplete", "speaker", "origin", "outcome", "outcome_note", "cjk_text"), None
        )
        params |= {"conv": "c1", "owner": "ana", "now": 1.0, "chars": 2, "title": "hi"}
        params |= {"role": "user", "content": "hi", "when": 1.0, "incomplete": False}
        params |= {"words": "'hi':1", "model": None, "vector": None}
        for async_commit, during in ((True, "off"), (False, "on")):
            assert conn.execute(sql.append_sql(False, async_commit), params).fetchone()
            assert conn.execute("SHOW synchronous_commit").fetchone() == (during,)
            conn.commit()
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
            conn.commit()


async def test_appends_with_async_commit_are_all_written(pg_url):
    store = await PostgresStore.open(pg_url, clock=FakeClock(), append_commit="async")
    try:
        convs = [(await store.create_conversation("ana")).id for _ in range(20)]
        lone = await store.append("ana", convs[0], "user", "alone")  # the single statement
        together = await asyncio.gather(*(store.append("ana", c, "user", f"in {c}") for c in convs))
        assert lone.id < min(t.id for t in together)
        counts = [(await store.get_conversation("ana", c)).message_count for c in convs]
        assert counts == [2] + [1] * 19
        async with store._conn() as conn:  # back in the pool: durable again
            cur = await conn.execute("SHOW synchronous_commit")
            assert await cur.fetchone() == ("on",)
    finally:
        await store.close()


async def test_an_unknown_append_commit_is_refused_before_connecting():
    with pytest.raises(ValueError, match="append_commit is 'sometimes'; use one of durable"):
        await PostgresStore.open("postgresql://nowhere.invalid/x", append_commit="sometimes")


async def test_a_closed_store_refuses_with_a_clear_error(pg_url):
    s = await PostgresStore.open(pg_url)
    await s.close()
    with pytest.raises(StorageUnavailable, match="closed"):
        await s.list_conversations("ana")


# -- search text ------------------------------------------------------------------------


def test_index_text_matches_the_sqlite_terms():
    assert index_words("Cats, cats and the CAFÉ in Reykjavík!") == (
        "'cats':1,2 'cafe':3 'reykjavik':4"
    )
    # CJK question words and particles ("我们") are left out, as in the SQLite index.
    assert index_cjk("我们在拉面店 and ramen") == " 们在 在拉 拉面 面店 "
    assert index_cjk("no cjk here") is None
    terms = query_terms("Reykjavik 拉面店 trip's")
    assert word_query(terms) == "'reykjavik' 'trip'"
    assert cjk_patterns(terms) == ["% 拉面 %", "% 面店 %"]
    assert word_query(query_terms("拉面")) is None


async def test_search_uses_the_indexes(store, pg_url):
    conv = await store.create_conversation("mei")
    await store.append("mei", conv.id, "user", "我们在台北的鼎泰豐吃了小籠包 with friends")
    with psycopg.connect(pg_url) as conn:
        conn.execute("SET enable_seqscan = off")  # tiny tables: show what a big one would use
        plan = conn.execute(
            "EXPLAIN SELECT id FROM turns WHERE cjk LIKE %s OR words @@ %s::tsquery",
            ("% 小籠 %", "'friends'"),
        ).fetchall()
    plan_text = "\n".join(r[0] for r in plan)
    assert "turns_cjk" in plan_text and "turns_words" in plan_text
    assert [h.turn_id for h in await store.search("mei", "小籠包")]
    assert [h.turn_id for h in await store.search("mei", "FRIENDS")]
    assert await store.search("mei", "籠小") == []  # not a bigram of the text


# -- several replicas on one database ----------------------------------------------------


SMALL = MemoryPolicy(
    keep_recent=2,
    summarize_at=6,
    summary_chars=400,
    recall_chars=400,
    message_chars=400,
    history_chars=2000,
)


class GatedSummarizer:
    """Waits at a gate, so two replicas can be made to summarize at the same moment."""

    def __init__(self):
        self.gate = asyncio.Event()
        self.called = asyncio.Event()
        self.calls = 0

    async def summarize(self, previous, turns, max_chars):
        self.calls += 1
        self.called.set()
        await self.gate.wait()
        return f"- User: folded {len(turns)}"


async def test_two_replicas_see_one_conversation(pg_url):
    one, two = [await PostgresStore.open(pg_url, clock=FakeClock()) for _ in range(2)]
    try:
        conv = await one.create_conversation("ana")
        await one.append("ana", conv.id, "user", "Written through replica one")
        await two.append("ana", conv.id, "assistant", "and answered through replica two")
        for s in (one, two):
            assert [t.content for t in await s.transcript("ana", conv.id)] == [
                "Written through replica one",
                "and answered through replica two",
            ]
        assert [c.id for c in await two.list_conversations("ana")] == [conv.id]
    finally:
        await one.close()
        await two.close()


async def test_a_summarization_triggered_on_two_replicas_folds_once(pg_url):
    summarizers = [GatedSummarizer(), GatedSummarizer()]
    one, two = [
        await PostgresStore.open(pg_url, policy=SMALL, summarizer=s, clock=FakeClock())
        for s in summarizers
    ]
    try:
        conv = await one.create_conversation("ana")
        for i in range(8):
            await one.append("ana", conv.id, "user" if i % 2 == 0 else "assistant", f"m{i}")
        first = asyncio.create_task(one.summarize_if_needed("ana", conv.id))
        await summarizers[0].called.wait()
        # Replica two sees the fold running and does not start its own.
        assert (await two.status("ana", conv.id)).summarizing
        assert not await two.summarize_if_needed("ana", conv.id)
        summarizers[0].gate.set()
        summarizers[1].gate.set()
        assert await first
        assert [s.calls for s in summarizers] == [1, 0]
        st = await two.status("ana", conv.id)
        assert (st.summaries, st.compacted, st.active, st.summarizing) == (1, 6, 2, False)
    finally:
        await one.close()
        await two.close()


async def test_the_commit_folds_once_even_when_both_called_the_model(pg_url):
    # Worst case: the lease ran out (a replica stalled past it) and both summarized; the
    # advisory lock and the re-check let only one commit.
    clock = FakeClock()
    summarizers = [GatedSummarizer(), GatedSummarizer()]
    one, two = [
        await PostgresStore.open(pg_url, policy=SMALL, summarizer=s, clock=clock)
        for s in summarizers
    ]
    try:
        conv = await one.create_conversation("ana")
        for i in range(8):
            await one.append("ana", conv.id, "user" if i % 2 == 0 else "assistant", f"m{i}")
        first = asyncio.create_task(one.summarize_if_needed("ana", conv.id))
        await summarizers[0].called.wait()
        clock.now += 3600  # replica one's lease has run out
        second = asyncio.create_task(two.summarize_if_needed("ana", conv.id))
        await summarizers[1].called.wait()
        summarizers[0].gate.set()
        summarizers[1].gate.set()
        assert sorted(await asyncio.gather(first, second)) == [False, True]
        st = await one.status("ana", conv.id)
        assert (st.summaries, st.compacted, st.total) == (1, 6, 8)
        summaries = rows(pg_url, "SELECT count(*) FROM turns WHERE is_summary")
        assert summaries == [(1,)]
    finally:
        await one.close()
        await two.close()


async def test_fifty_writers_on_two_replicas_lose_and_duplicate_nothing(pg_url):
    one, two = [await PostgresStore.open(pg_url, pool_max=5) for _ in range(2)]
    try:
        conv = await one.create_conversation("ana")

        async def writer(n):
            replica = (one, two)[n % 2]
            for j in range(10):
                await replica.append("ana", conv.id, "user", f"w{n}-{j}")

        await asyncio.gather(*(writer(n) for n in range(50)))
        got = [t.content for t in await two.transcript("ana", conv.id)]
        assert sorted(got) == sorted(f"w{n}-{j}" for n in range(50) for j in range(10))
        for n in range(50):  # each writer's messages in its own order
            assert [c for c in got if c.startswith(f"w{n}-")] == [f"w{n}-{j}" for j in range(10)]
        assert (await one.get_conversation("ana", conv.id)).message_count == 500
    finally:
        await one.close()
        await two.close()


async def test_an_import_keeps_its_dates_and_is_all_or_nothing(store, pg_url):
    day = 86_400.0
    start = 1_700_000_000.0
    messages = [
        ("user", "We moved to Porto last spring.", start),
        ("assistant", "How do you like it?", start + 60),
        ("user", "A lot, the light is lovely.", start + day),
    ]
    conv = await store.import_conversation("ana", messages)
    assert conv.title == "We moved to Porto last spring."
    assert (conv.message_count, conv.active_count) == (3, 3)
    turns = await store.transcript("ana", conv.id)
    assert [(t.role, t.content, t.created_at) for t in turns] == messages
    assert [h.turn_id for h in await store.search("ana", "porto")] == [turns[0].id]
    with pytest.raises(InvalidInput):
        await store.import_conversation("ana", [*messages, ("user", "", start + 2 * day)])
    assert rows(pg_url, "SELECT count(*) FROM conversations") == [(1,)]
    dated = await store.append(
        "ana", conv.id, "user", "Written elsewhere", created_at=start + 2 * day
    )
    assert dated.created_at == start + 2 * day
