"""Numbered schema migrations for PostgreSQL, applied in order and recorded in `mnemo_migrations`.

The same tables, columns and CHECK constraints as the SQLite schema (memory/migrations.py), in
PostgreSQL's types; full-text search is a `tsvector` column and a pg_trgm index instead of FTS5
tables (see memory/postgres/text.py). Never edit a migration that has shipped: add a new one.

Replicas that start together must not both apply a migration: each one runs in its own
transaction that first takes a transaction-level advisory lock (keyed by the schema), then
checks the record, applies and records it. A transaction-level lock rather than a session lock:
behind a transaction pooler (pgbouncer, Supabase) consecutive transactions of one client may run
on different server connections, so a session lock could be taken on one and never released.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from psycopg import AsyncConnection
from psycopg.sql import SQL, Identifier, Literal

log = logging.getLogger(__name__)

Migration = Callable[[AsyncConnection], Awaitable[None]]
MIGRATIONS: list[Migration] = []
# One lock per schema, so test schemas (and several Mnemo instances in one database) do not
# wait for each other.
LOCK_KEY_SQL = "hashtextextended('mnemo.migrate:' || current_schema(), 0)"
# Turn ids per statement when m010 re-stems the search text (a progress line after each).
RESTEM_BATCH = 50_000


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


async def _run(conn: AsyncConnection, *statements: str) -> None:
    for sql in statements:
        await conn.execute(sql)


@migration
async def m001_conversations(conn: AsyncConnection) -> None:
    await _run(
        conn,
        """
        CREATE TABLE conversations (
            id text PRIMARY KEY,
            owner text NOT NULL CHECK (char_length(owner) BETWEEN 1 AND 200),
            title text CHECK (title IS NULL OR char_length(title) BETWEEN 1 AND 100),
            persona_id text NOT NULL DEFAULT 'assistant',
            persona_version integer,
            retention_minutes integer CHECK (retention_minutes IS NULL OR retention_minutes > 0),
            created_at double precision NOT NULL,
            last_active_at double precision NOT NULL,
            expires_at double precision,
            message_count integer NOT NULL DEFAULT 0 CHECK (message_count >= 0),
            active_count integer NOT NULL DEFAULT 0 CHECK (active_count >= 0),
            chars bigint NOT NULL DEFAULT 0 CHECK (chars >= 0),
            summary_count integer NOT NULL DEFAULT 0 CHECK (summary_count >= 0),
            summarizing_until double precision,
            -- Insertion order, the tie-break of "newest activity first" (SQLite's rowid).
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            CHECK (active_count <= message_count)
        )
        """,
        "CREATE INDEX conversations_owner_active ON conversations "
        "(owner, last_active_at DESC, seq DESC)",
        "CREATE INDEX conversations_expires ON conversations (expires_at) "
        "WHERE expires_at IS NOT NULL",
    )


@migration
async def m002_turns(conn: AsyncConnection) -> None:
    # An identity column: ids are never reused, so a summary's covered id range stays
    # meaningful after turns are deleted. `words` and `cjk` are the search text (text.py).
    await _run(
        conn,
        """
        CREATE TABLE turns (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            role text NOT NULL CHECK (role IN ('user', 'assistant', 'summary')),
            content text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 10000),
            created_at double precision NOT NULL,
            is_summary boolean NOT NULL DEFAULT false CHECK (is_summary = (role = 'summary')),
            compacted boolean NOT NULL DEFAULT false,
            incomplete boolean NOT NULL DEFAULT false,
            covers_from_id bigint,
            covers_to_id bigint,
            covers_count integer,
            words tsvector NOT NULL DEFAULT ''::tsvector,
            cjk text,
            CHECK ((role = 'summary') = (covers_to_id IS NOT NULL)),
            CHECK (covers_from_id IS NULL OR covers_from_id <= covers_to_id)
        )
        """,
        # Serves every per-conversation read: recent active turns, latest summary, transcript.
        "CREATE INDEX turns_conversation ON turns (conversation_id, compacted, is_summary, id)",
        "CREATE INDEX turns_conversation_id ON turns (conversation_id, id)",
    )


@migration
async def m003_turn_metrics(conn: AsyncConnection) -> None:
    # No foreign key: quota counts must survive deleting a conversation. Never message text.
    await _run(
        conn,
        """
        CREATE TABLE turn_metrics (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            owner text NOT NULL,
            conversation_id text,
            model text NOT NULL,
            input_tokens integer CHECK (input_tokens IS NULL OR input_tokens >= 0),
            output_tokens integer CHECK (output_tokens IS NULL OR output_tokens >= 0),
            latency_ms integer CHECK (latency_ms IS NULL OR latency_ms >= 0),
            first_token_ms integer CHECK (first_token_ms IS NULL OR first_token_ms >= 0),
            status text NOT NULL CHECK (status IN ('ok', 'error', 'stopped', 'refused')),
            error_kind text,
            created_at double precision NOT NULL
        )
        """,
        "CREATE INDEX turn_metrics_owner_time ON turn_metrics (owner, created_at)",
    )


@migration
async def m004_search(conn: AsyncConnection) -> None:
    # Words: a GIN index over the tsvector. CJK: a pg_trgm GIN index over the space-separated
    # bigrams in `cjk`, so `cjk LIKE '% 拉面 %'` has whole padded trigrams to look up; only
    # turns with CJK text have a `cjk` value, so the index costs nothing for the others.
    # pg_trgm ships in postgresql-contrib and on managed servers (Supabase, Neon, RDS).
    await _run(
        conn,
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        "CREATE INDEX turns_words ON turns USING gin (words)",
        "CREATE INDEX turns_cjk ON turns USING gin (cjk gin_trgm_ops) WHERE cjk IS NOT NULL",
    )


@migration
async def m005_api_tokens(conn: AsyncConnection) -> None:
    # Per-owner tokens for the HTTP API. Only the SHA-256 of a token is kept: a copy of the
    # database does not let anyone call the API. `seq` orders tokens created in one instant.
    await _run(
        conn,
        """
        CREATE TABLE api_tokens (
            id text PRIMARY KEY,
            owner text NOT NULL CHECK (char_length(owner) BETWEEN 1 AND 200),
            name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 60),
            token_hash text NOT NULL UNIQUE CHECK (char_length(token_hash) = 64),
            hint text NOT NULL CHECK (char_length(hint) <= 8),
            created_at double precision NOT NULL,
            last_used_at double precision,
            revoked_at double precision,
            seq bigint GENERATED ALWAYS AS IDENTITY
        )
        """,
        "CREATE INDEX api_tokens_owner ON api_tokens (owner, created_at DESC)",
    )


@migration
async def m006_speakers(conn: AsyncConnection) -> None:
    # A roundtable turn is answered by several personas: each reply row names its speaker (the
    # persona id; NULL for a plain turn, answered by the conversation's persona), and metrics
    # are kept per speaker. SQLite's m010_speakers, the same columns and check.
    await _run(
        conn,
        "ALTER TABLE turns ADD COLUMN speaker text "
        "CHECK (speaker IS NULL OR char_length(speaker) BETWEEN 1 AND 80)",
        "ALTER TABLE turn_metrics ADD COLUMN persona_id text",
    )


@migration
async def m007_turn_outcomes(conn: AsyncConnection) -> None:
    # How a turn ended when not as planned, and why in the words the chat showed (SQLite's
    # m011_turn_outcomes, the same columns and checks).
    await _run(
        conn,
        "ALTER TABLE turns ADD COLUMN outcome text "
        "CHECK (outcome IS NULL OR outcome IN ('failed', 'stopped', 'incomplete'))",
        "ALTER TABLE turns ADD COLUMN outcome_note text "
        "CHECK (outcome_note IS NULL OR char_length(outcome_note) <= 1000)",
        # Replies saved incomplete before this migration: stopped or broken off, reason unknown.
        "UPDATE turns SET outcome = 'incomplete' WHERE incomplete",
    )


@migration
async def m008_turn_vectors(conn: AsyncConnection) -> None:
    # One small embedding per message (memory/vectors.py: int8 bytes, 256 for 256 dims),
    # written with the turn when an Embedder is configured: SQLite's m008_turn_vectors in a
    # bytea (pgvector is not required). `model` names the embedder: vectors of different
    # models are never compared. Keyed by the turn, so deleting a turn (undo, reset, delete,
    # purge) deletes its vector through the cascade; context() reads one conversation's
    # vectors through the second index. Cosines are computed in Python, as on SQLite.
    await _run(
        conn,
        """
        CREATE TABLE turn_vectors (
            turn_id bigint PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
            conversation_id text NOT NULL,
            model text NOT NULL,
            vector bytea NOT NULL CHECK (octet_length(vector) > 0)
        )
        """,
        "CREATE INDEX turn_vectors_conversation ON turn_vectors (conversation_id, turn_id)",
    )


@migration
async def m009_memory_steering(conn: AsyncConnection) -> None:
    # Memory the user sees and steers (SQLite's m009_memory_steering, the same tables, columns
    # and checks): `origin` marks a summary the user edited and the tool notes on the user's
    # side; pinned facts live beside the turns, so summarization never folds them (a NULL
    # conversation is an "about me" fact); owner settings; metrics gain each part's size.
    await _run(
        conn,
        "ALTER TABLE turns ADD COLUMN origin text CHECK (origin IS NULL "
        "OR (origin = 'edited' AND role = 'summary') OR (origin = 'tool' AND role = 'user'))",
        """
        CREATE TABLE pinned_facts (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            owner text NOT NULL CHECK (char_length(owner) BETWEEN 1 AND 200),
            conversation_id text REFERENCES conversations (id) ON DELETE CASCADE,
            content text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 500),
            created_at double precision NOT NULL,
            source_turn_id bigint
        )
        """,
        "CREATE INDEX pinned_facts_scope ON pinned_facts (owner, conversation_id, id)",
        "CREATE INDEX pinned_facts_conversation ON pinned_facts (conversation_id)",
        """
        CREATE TABLE owner_settings (
            owner text PRIMARY KEY CHECK (char_length(owner) BETWEEN 1 AND 200),
            about_me boolean NOT NULL DEFAULT false,
            time_zone text CHECK (time_zone IS NULL OR char_length(time_zone) BETWEEN 1 AND 64)
        )
        """,
        *(
            f"ALTER TABLE turn_metrics ADD COLUMN {name} integer CHECK ({name} IS NULL "
            f"OR {name} >= 0)"
            for name in (
                "persona_chars",
                "pinned_chars",
                "summary_chars",
                "recalled_chars",
                "recent_chars",
                "budget_chars",
            )
        ),
        "CREATE INDEX turn_metrics_conversation ON turn_metrics (conversation_id, id) "
        "WHERE conversation_id IS NOT NULL",
    )


# SQLite's FTS5 `porter` tokenizer stems a token of 3 to 64 bytes and passes the others
# through; the same bounds here, so both backends index the same words under the same stems.
_STEM = (
    "CASE WHEN octet_length({w}) BETWEEN 3 AND 64 "
    "THEN coalesce((ts_lexize({dictionary}::regdictionary, {w}))[1], {w}) ELSE {w} END"
)
# A lexeme as a quoted tsvector or tsquery literal (backslash and quote escaped).
_QUOTED = r"'''' || replace(replace(stem, '\', '\\'), '''', '''''') || ''''"
# Positions of words that share a stem merge (tsvector keeps at most 256 per lexeme).
_STEM_FUNCTION = (
    "CREATE FUNCTION {name}(words tsvector) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT "
    f"PARALLEL SAFE BEGIN ATOMIC SELECT coalesce(string_agg({_QUOTED} "
    "|| coalesce(':' || positions, ''), ' '), '')::tsvector FROM (SELECT stem, "
    "string_agg(p::text, ',' ORDER BY p) AS positions FROM (SELECT {stem} AS stem, "
    "w.positions FROM unnest(words) w) s LEFT JOIN LATERAL unnest(s.positions) p ON true "
    "GROUP BY stem) g; END"
)
# The OR of a query's stemmed words; NULL without words (a CJK-only query), as before.
_QUERY_FUNCTION = (
    "CREATE FUNCTION {name}(words tsvector) RETURNS tsquery LANGUAGE sql IMMUTABLE STRICT "
    f"PARALLEL SAFE BEGIN ATOMIC SELECT string_agg(DISTINCT {_QUOTED}, ' | ')::tsquery "
    "FROM (SELECT {stem} AS stem FROM unnest(words) w) s; END"
)


@migration
async def m010_stemmed_words(conn: AsyncConnection) -> None:
    # English words are stemmed as SQLite's index stems them (FTS5's Porter), so "hiking"
    # finds "hike" on both backends. The stemmer is PostgreSQL's own Snowball `porter` in a
    # dictionary without a stop-word list (recall must not lose words); creating it needs
    # only CREATE on the schema, as on Supabase and Neon. Python still builds the unstemmed
    # tsvector literal (memory/postgres/text.py): `mnemo_stem()` stems it in the statement
    # that writes it, `mnemo_query()` turns a query's words into the OR of their stems. The
    # functions name the dictionary with its schema, so any search_path finds the same one.
    cur = await conn.execute("SELECT current_schema()")
    (schema,) = await cur.fetchone()
    dictionary = Identifier(schema, "mnemo_porter")
    await conn.execute(
        SQL(
            "CREATE TEXT SEARCH DICTIONARY {} (TEMPLATE = pg_catalog.snowball, LANGUAGE = porter)"
        ).format(dictionary)
    )
    stem = SQL(_STEM).format(w=SQL("w.lexeme"), dictionary=Literal(dictionary.as_string(conn)))
    for name, function in (("mnemo_stem", _STEM_FUNCTION), ("mnemo_query", _QUERY_FUNCTION)):
        await conn.execute(SQL(function).format(name=Identifier(schema, name), stem=stem))
    await restem_words(conn, RESTEM_BATCH)


async def restem_words(conn: AsyncConnection, batch: int) -> None:
    """Stem every turn's words (indexed unstemmed before m010), `batch` ids at a time, with
    progress in the log. The GIN index is dropped first and built once at the end: updating
    each of its entries in place would cost more than building it whole."""
    cur = await conn.execute("SELECT count(*), min(id), max(id) FROM turns")
    total, low, high = await cur.fetchone()
    if not total:
        return
    log.info("Stemming the search index over %d messages", total)
    started, done = time.perf_counter(), 0
    await conn.execute("DROP INDEX turns_words")
    for start in range(low, high + 1, batch):
        cur = await conn.execute(
            "UPDATE turns SET words = mnemo_stem(words) WHERE id >= %s AND id < %s",
            (start, start + batch),
        )
        done += cur.rowcount
        log.info("Search index: %d of %d messages stemmed", done, total)
    await conn.execute("CREATE INDEX turns_words ON turns USING gin (words)")
    log.info("Search index stemmed: %d messages in %.1f s", done, time.perf_counter() - started)


@migration
async def m011_context_function(conn: AsyncConnection) -> None:
    # context() without recall, the call a memory badge or a status makes, as a function whose
    # plan the server keeps: without prepared statements (off for pgbouncer and Supabase's
    # transaction pooler) every statement is parsed and planned afresh, and for this one that
    # was most of its time (1,281 bytes of SQL; measured 0.87 -> 0.36 ms p50 per call at 50,000
    # messages). PL/pgSQL caches the plan per server connection, which is no session state a
    # pooler could lose. The body is the statement memory/postgres/sql.py's context_sql(None,
    # False) builds, frozen here; a test checks both return the same rows, so a change to one
    # needs a new migration replacing the other. Tables resolve through the caller's
    # search_path, as every other statement's do.
    await conn.execute(
        """
        CREATE FUNCTION mnemo_context(conv text, owner_id text, now_s float8, keep integer)
        RETURNS TABLE (message_count integer, active_count integer, kind integer, id bigint,
            conversation_id text, role text, content text, created_at double precision,
            is_summary boolean, compacted boolean, covers_from_id bigint, covers_to_id bigint,
            covers_count integer, incomplete boolean, speaker text, origin text, outcome text,
            outcome_note text, rank double precision, neighbour_of bigint, vector bytea)
        LANGUAGE plpgsql STABLE AS $body$
        #variable_conflict use_column
        BEGIN
        RETURN QUERY
        WITH recent AS (SELECT t.id, t.conversation_id, t.role, t.content, t.created_at,
            t.is_summary, t.compacted, t.covers_from_id, t.covers_to_id, t.covers_count,
            t.incomplete, t.speaker, t.origin, t.outcome, t.outcome_note FROM turns t
            WHERE t.conversation_id = $1 AND NOT t.compacted AND NOT t.is_summary
            ORDER BY t.id DESC LIMIT $4)
        SELECT c.message_count, c.active_count, r.* FROM conversations c
        LEFT JOIN LATERAL (
            SELECT * FROM (SELECT 1 AS kind, t.id, t.conversation_id, t.role, t.content,
                t.created_at, t.is_summary, t.compacted, t.covers_from_id, t.covers_to_id,
                t.covers_count, t.incomplete, t.speaker, t.origin, t.outcome, t.outcome_note,
                NULL::float8 AS rank, NULL::bigint AS neighbour_of, NULL::bytea AS vector
                FROM turns t WHERE t.conversation_id = c.id AND NOT t.compacted
                AND t.is_summary ORDER BY t.id DESC LIMIT 1) s
            UNION ALL SELECT 2, recent.*, NULL, NULL, NULL FROM recent
            UNION ALL SELECT 7, p.id, p.owner, p.conversation_id, p.content, p.created_at,
                NULL, NULL, p.source_turn_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                NULL, NULL FROM pinned_facts p WHERE p.owner = c.owner
                AND (p.conversation_id = c.id OR (p.conversation_id IS NULL AND EXISTS
                (SELECT 1 FROM owner_settings o WHERE o.owner = c.owner AND o.about_me)))
        ) r ON true
        WHERE c.id = $1 AND c.owner = $2 AND (c.expires_at IS NULL OR c.expires_at > $3);
        END
        $body$
        """
    )


@migration
async def m012_vector_backfill(conn: AsyncConnection) -> None:
    # How far the background filler got (SQLite's m013_vector_backfill): every message up to
    # turn `done_upto` was given a vector of `model`, so an open scans only the turns written
    # since the last complete pass, not all of them.
    await _run(
        conn,
        "CREATE TABLE vector_backfill (one integer PRIMARY KEY CHECK (one = 1), "
        "model text NOT NULL, done_upto bigint NOT NULL)",
    )


async def applied_migrations(conn: AsyncConnection) -> list[str]:
    cur = await conn.execute("SELECT to_regclass('mnemo_migrations') IS NOT NULL")
    if not (await cur.fetchone())[0]:
        return []
    cur = await conn.execute("SELECT name FROM mnemo_migrations ORDER BY name")
    return [r[0] for r in await cur.fetchall()]


async def migrate(conn: AsyncConnection, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply pending migrations (of `migrations`: all of them unless a test stops at an earlier
    schema); return the names applied now. Safe to run concurrently from several processes.
    `conn` must be in autocommit mode (each migration is a transaction)."""
    applied_now = []
    for fn in migrations:
        async with conn.transaction():
            await conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY_SQL})")
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS mnemo_migrations "
                "(name text PRIMARY KEY, applied_at double precision NOT NULL)"
            )
            cur = await conn.execute(
                "SELECT 1 FROM mnemo_migrations WHERE name = %s", (fn.__name__,)
            )
            if await cur.fetchone() is None:
                await fn(conn)
                await conn.execute(
                    "INSERT INTO mnemo_migrations (name, applied_at) VALUES (%s, %s)",
                    (fn.__name__, time.time()),
                )
                applied_now.append(fn.__name__)
    return applied_now
