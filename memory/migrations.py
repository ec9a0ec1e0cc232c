"""Numbered schema migrations, applied in order and recorded in `_mnemo_migrations`.

Never edit a migration that has shipped: add a new one. Each runs in its own transaction
together with the row that records it, so a crash leaves it either applied or not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import aiosqlite

from .recall import RECALL_TEXT_FUNCTION, bigram_text, conversation_key, owner_key, recall_text

log = logging.getLogger(__name__)

Migration = Callable[[aiosqlite.Connection], Awaitable[None]]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


async def _run(db: aiosqlite.Connection, *statements: str) -> None:
    for sql in statements:
        await db.execute(sql)


@migration
async def m001_conversations(db: aiosqlite.Connection) -> None:
    await _run(
        db,
        """
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
            title TEXT CHECK (title IS NULL OR length(title) BETWEEN 1 AND 100),
            persona_id TEXT NOT NULL DEFAULT 'assistant',
            persona_version INTEGER,
            retention_minutes INTEGER CHECK (retention_minutes IS NULL OR retention_minutes > 0),
            created_at REAL NOT NULL,
            last_active_at REAL NOT NULL,
            expires_at REAL,
            message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
            active_count INTEGER NOT NULL DEFAULT 0 CHECK (active_count >= 0),
            chars INTEGER NOT NULL DEFAULT 0 CHECK (chars >= 0),
            summary_count INTEGER NOT NULL DEFAULT 0 CHECK (summary_count >= 0),
            CHECK (active_count <= message_count)
        )
        """,
        "CREATE INDEX conversations_owner_active ON conversations (owner, last_active_at DESC)",
        "CREATE INDEX conversations_expires ON conversations (expires_at) "
        "WHERE expires_at IS NOT NULL",
    )


@migration
async def m002_turns(db: aiosqlite.Connection) -> None:
    # AUTOINCREMENT: ids are never reused, so a summary's covered id range stays meaningful
    # after turns are deleted.
    await _run(
        db,
        """
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'summary')),
            content TEXT NOT NULL CHECK (length(content) BETWEEN 1 AND 10000),
            created_at REAL NOT NULL,
            is_summary INTEGER NOT NULL DEFAULT 0 CHECK (is_summary = (role = 'summary')),
            compacted INTEGER NOT NULL DEFAULT 0 CHECK (compacted IN (0, 1)),
            incomplete INTEGER NOT NULL DEFAULT 0 CHECK (incomplete IN (0, 1)),
            covers_from_id INTEGER,
            covers_to_id INTEGER,
            covers_count INTEGER,
            CHECK ((role = 'summary') = (covers_to_id IS NOT NULL)),
            CHECK (covers_from_id IS NULL OR covers_from_id <= covers_to_id)
        )
        """,
        # Serves every per-conversation read: recent active turns, latest summary, transcript.
        "CREATE INDEX turns_conversation ON turns (conversation_id, compacted, is_summary, id)",
        "CREATE INDEX turns_conversation_id ON turns (conversation_id, id)",
    )


@migration
async def m003_turn_metrics(db: aiosqlite.Connection) -> None:
    # No foreign key: quota counts must survive deleting a conversation. Never message text.
    await _run(
        db,
        """
        CREATE TABLE turn_metrics (
            id INTEGER PRIMARY KEY,
            owner TEXT NOT NULL,
            conversation_id TEXT,
            model TEXT NOT NULL,
            input_tokens INTEGER CHECK (input_tokens IS NULL OR input_tokens >= 0),
            output_tokens INTEGER CHECK (output_tokens IS NULL OR output_tokens >= 0),
            latency_ms INTEGER CHECK (latency_ms IS NULL OR latency_ms >= 0),
            first_token_ms INTEGER CHECK (first_token_ms IS NULL OR first_token_ms >= 0),
            status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'stopped', 'refused')),
            error_kind TEXT,
            created_at REAL NOT NULL
        )
        """,
        "CREATE INDEX turn_metrics_owner_time ON turn_metrics (owner, created_at)",
    )


@migration
async def m004_turns_fts(db: aiosqlite.Connection) -> None:
    # Full-text index over turns and summaries for recall and search (see memory/recall.py).
    # The body holds CJK-bigrammed text, so the table keeps its own copy rather than pointing
    # at turns.content. Owner and conversation are hashed tokens, so a MATCH can narrow to
    # one owner or one conversation inside the index. Rows are added by the store in the
    # same transaction as the turn; deletes (undo, reset, delete, purge, cascades) follow
    # through the trigger.
    await _run(
        db,
        "CREATE VIRTUAL TABLE turns_fts USING fts5(body, owner_key, conversation_key, "
        "tokenize = 'porter unicode61 remove_diacritics 2')",
        "CREATE TRIGGER turns_fts_delete AFTER DELETE ON turns BEGIN "
        "DELETE FROM turns_fts WHERE rowid = old.id; END",
        # Rank by the text alone; the key columns only filter.
        "INSERT INTO turns_fts (turns_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0, 0.0)')",
    )
    last = 0
    while True:  # backfill existing turns, a batch at a time
        rows = await db.execute_fetchall(
            "SELECT t.id, t.content, c.owner, c.id FROM turns t "
            "JOIN conversations c ON c.id = t.conversation_id WHERE t.id > ? ORDER BY t.id "
            "LIMIT 1000",
            (last,),
        )
        if not rows:
            break
        await db.executemany(
            "INSERT INTO turns_fts (rowid, body, owner_key, conversation_key) VALUES (?, ?, ?, ?)",
            [
                (tid, bigram_text(content), owner_key(owner), conversation_key(cid))
                for tid, content, owner, cid in rows
            ],
        )
        last = rows[-1][0]


@migration
async def m005_recall_fts(db: aiosqlite.Connection) -> None:
    # Recall asks for the best turns of ONE conversation. Through turns_fts that costs a
    # conversation_key filter plus bm25's document counts for each term over the whole
    # table: at 1M messages context(query=) took p50 355 ms, p99 950 ms, on every chat turn.
    # Here each term is indexed as <conversation key><term> (memory/recall.py
    # `recall_text`), so each conversation has its own small doclists and bm25 counts within
    # the conversation, which is the rarity recall wants; a query reads only those doclists
    # whatever the database size (1M messages: p50 3 ms, p99 6 ms).
    # Contentless (content=''): a contentful copy of the key-prefixed text made the table
    # 3.5x larger (1M messages: 173 MB as it is). A contentless delete must repeat the indexed
    # text, so the trigger recomputes it with a function every store connection registers
    # (store.py `_connect`); a connection without it cannot delete turns, rather than leave
    # stale entries. Stopwords and one-letter words are not indexed: queries never ask for
    # them.
    await _run(
        db,
        "CREATE VIRTUAL TABLE recall_fts USING fts5(body, content = '', "
        "tokenize = 'porter unicode61 remove_diacritics 2')",
        "CREATE TRIGGER recall_fts_delete AFTER DELETE ON turns BEGIN "
        "INSERT INTO recall_fts (recall_fts, rowid, body) VALUES "
        f"('delete', old.id, {RECALL_TEXT_FUNCTION}(old.conversation_id, old.content)); END",
    )
    last = 0
    while True:  # backfill existing turns, a batch at a time
        rows = await db.execute_fetchall(
            "SELECT id, conversation_id, content FROM turns WHERE id > ? ORDER BY id LIMIT 5000",
            (last,),
        )
        if not rows:
            break
        await db.executemany(
            "INSERT INTO recall_fts (rowid, body) VALUES (?, ?)",
            [(tid, recall_text(cid, content)) for tid, cid, content in rows],
        )
        last = rows[-1][0]


@migration
async def m006_recall_digit_keys(db: aiosqlite.Connection) -> None:
    # m005's keys mixed letters into the token Porter stems, so a term's stem depended on the
    # conversation id (memory/recall.py). recall_text now keys with digits; the index is
    # rebuilt from the turns. The delete trigger already calls the new recall_text, so the
    # old entries cannot be deleted one by one: 'delete-all' drops them together.
    await db.execute("INSERT INTO recall_fts (recall_fts) VALUES ('delete-all')")
    await rebuild_recall_index(db)


@migration
async def m010_speakers(db: aiosqlite.Connection) -> None:
    # A roundtable turn is answered by several personas: each reply row names its speaker (the
    # persona id; NULL for a plain turn, answered by the conversation's persona), and metrics
    # are kept per speaker. Numbers only in turn_metrics, as before.
    await _run(
        db,
        "ALTER TABLE turns ADD COLUMN speaker TEXT "
        "CHECK (speaker IS NULL OR length(speaker) BETWEEN 1 AND 80)",
        "ALTER TABLE turn_metrics ADD COLUMN persona_id TEXT",
    )


async def rebuild_recall_index(db: aiosqlite.Connection, batch: int = 5_000) -> None:
    """Index every turn into an empty `recall_fts`, logging progress on large databases."""
    total = (await db.execute_fetchall("SELECT count(*) FROM turns"))[0][0]
    if total:
        log.info("Rebuilding the recall index over %d messages", total)
    started, done, last, next_log = time.perf_counter(), 0, 0, 100_000
    while True:
        rows = await db.execute_fetchall(
            "SELECT id, conversation_id, content FROM turns WHERE id > ? ORDER BY id LIMIT ?",
            (last, batch),
        )
        if not rows:
            break
        await db.executemany(
            "INSERT INTO recall_fts (rowid, body) VALUES (?, ?)",
            [(tid, recall_text(cid, content)) for tid, cid, content in rows],
        )
        done, last = done + len(rows), rows[-1][0]
        if done >= next_log:
            log.info("Recall index: %d of %d messages", done, total)
            next_log += 100_000
    if total:
        log.info("Recall index rebuilt: %d messages in %.1f s", done, time.perf_counter() - started)


@migration
async def m007_api_tokens(db: aiosqlite.Connection) -> None:
    # Per-owner tokens for the HTTP API. Only the SHA-256 of a token is kept: a copy of the
    # database does not let anyone call the API.
    await _run(
        db,
        """
        CREATE TABLE api_tokens (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
            name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 60),
            token_hash TEXT NOT NULL UNIQUE CHECK (length(token_hash) = 64),
            hint TEXT NOT NULL CHECK (length(hint) <= 8),
            created_at REAL NOT NULL,
            last_used_at REAL,
            revoked_at REAL
        )
        """,
        "CREATE INDEX api_tokens_owner ON api_tokens (owner, created_at DESC)",
    )


@migration
async def m008_turn_vectors(db: aiosqlite.Connection) -> None:
    # One small embedding per message (memory/vectors.py: int8, 256 bytes for 256 dims),
    # written with the turn when an Embedder is configured. Keyed by conversation first and
    # WITHOUT ROWID, so one conversation's vectors are one contiguous range to read. `model`
    # names the embedder: vectors of different models are never compared. Deleting a turn
    # (undo, reset, delete, purge, cascades) deletes its vector through the trigger.
    await _run(
        db,
        """
        CREATE TABLE turn_vectors (
            conversation_id TEXT NOT NULL,
            turn_id INTEGER NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (conversation_id, turn_id)
        ) WITHOUT ROWID
        """,
        "CREATE TRIGGER turn_vectors_delete AFTER DELETE ON turns BEGIN "
        "DELETE FROM turn_vectors WHERE conversation_id = old.conversation_id "
        "AND turn_id = old.id; END",
    )


@migration
async def m009_memory_steering(db: aiosqlite.Connection) -> None:
    # Issue 16, memory the user can see and steer. `origin` marks a summary the user edited
    # and the tool notes on the user's side of the history; ADD COLUMN keeps every turn row
    # (and both FTS indexes keyed by turn id) as it is.
    # Pinned facts live beside the turns, not in them: summarization never folds them, and a
    # conversation_id of NULL is an "about me" fact for all the owner's conversations.
    # Metrics gain the characters of each part the model received (numbers, never text).
    await _run(
        db,
        "ALTER TABLE turns ADD COLUMN origin TEXT CHECK (origin IS NULL "
        "OR (origin = 'edited' AND role = 'summary') OR (origin = 'tool' AND role = 'user'))",
        """
        CREATE TABLE pinned_facts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            owner TEXT NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
            conversation_id TEXT REFERENCES conversations (id) ON DELETE CASCADE,
            content TEXT NOT NULL CHECK (length(content) BETWEEN 1 AND 500),
            created_at REAL NOT NULL,
            source_turn_id INTEGER
        )
        """,
        "CREATE INDEX pinned_facts_scope ON pinned_facts (owner, conversation_id, id)",
        "CREATE INDEX pinned_facts_conversation ON pinned_facts (conversation_id)",
        """
        CREATE TABLE owner_settings (
            owner TEXT PRIMARY KEY CHECK (length(owner) BETWEEN 1 AND 200),
            about_me INTEGER NOT NULL DEFAULT 0 CHECK (about_me IN (0, 1)),
            time_zone TEXT CHECK (time_zone IS NULL OR length(time_zone) BETWEEN 1 AND 64)
        )
        """,
        *(
            f"ALTER TABLE turn_metrics ADD COLUMN {name} INTEGER CHECK ({name} IS NULL "
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


@migration
async def m011_turn_outcomes(db: aiosqlite.Connection) -> None:
    # How a turn ended when not as planned, and why in the words the chat showed, so a reload
    # shows the same note: "failed" (on a user message nobody answered, or a reply that broke
    # off), "stopped", "incomplete" (cut at a limit, or still streaming when the process died).
    # NULL: a normal message. (m009 and m010 are reserved for work in progress.)
    await _run(
        db,
        "ALTER TABLE turns ADD COLUMN outcome TEXT "
        "CHECK (outcome IS NULL OR outcome IN ('failed', 'stopped', 'incomplete'))",
        "ALTER TABLE turns ADD COLUMN outcome_note TEXT "
        "CHECK (outcome_note IS NULL OR length(outcome_note) <= 1000)",
        # Replies saved incomplete before this migration: stopped or broken off, reason unknown.
        "UPDATE turns SET outcome = 'incomplete' WHERE incomplete = 1",
    )


@migration
async def m012_fts_background_merges(db: aiosqlite.Connection) -> None:
    # FTS5 merged its b-trees inside the commits that wrote them: every 64 leaf pages, one
    # commit merged up to 64 pages per level (up to 29 ms of CPU in a summarization commit
    # that otherwise takes 2). automerge 0: no commit merges; the store merges in the
    # background in small steps (memory/connection.py). usermerge: a step merges a level once
    # it holds 4 segments (the default, said here so it cannot drift). crisismerge: the
    # backstop if the steps fall behind, a level with 32 segments is merged by the commit that
    # adds the last (raised from 16 to leave the steps room under a burst of commits). The
    # options live in each table's %_config: every connection, and a copy of the file, sees
    # them.
    for table in ("turns_fts", "recall_fts"):
        for option, value in (("automerge", 0), ("usermerge", 4), ("crisismerge", 32)):
            await db.execute(f"INSERT INTO {table} ({table}, rank) VALUES (?, ?)", (option, value))


@migration
async def m013_vector_backfill(db: aiosqlite.Connection) -> None:
    # How far the background filler (memory/vector_fill.py) got: every message up to turn
    # `done_upto` was given a vector of `model`. One row. Without it every open scanned all
    # turns for a missing vector (1M messages: 37 s in the background, under load), to find
    # none; with it an open scans only the turns written since the last complete pass. Another
    # model's mark means nothing for this one: its pass starts from the first turn.
    await _run(
        db,
        "CREATE TABLE vector_backfill (one INTEGER PRIMARY KEY CHECK (one = 1), "
        "model TEXT NOT NULL, done_upto INTEGER NOT NULL)",
    )


async def applied_migrations(db: aiosqlite.Connection) -> list[str]:
    rows = await db.execute_fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_mnemo_migrations'"
    )
    if not rows:
        return []
    return [r[0] for r in await db.execute_fetchall("SELECT name FROM _mnemo_migrations")]


async def migrate(db: aiosqlite.Connection) -> list[str]:
    """Apply pending migrations; return the names applied now. Safe to run concurrently."""
    await db.execute(
        "CREATE TABLE IF NOT EXISTS _mnemo_migrations (name TEXT PRIMARY KEY, applied_at REAL)"
    )
    applied_now = []
    for fn in MIGRATIONS:
        # BEGIN IMMEDIATE takes the write lock before checking, so two processes opening the
        # same new database cannot both apply a migration.
        await db.execute("BEGIN IMMEDIATE")
        try:
            done = await db.execute_fetchall(
                "SELECT 1 FROM _mnemo_migrations WHERE name = ?", (fn.__name__,)
            )
            if not done:
                await fn(db)
                await db.execute(
                    "INSERT INTO _mnemo_migrations (name, applied_at) VALUES (?, ?)",
                    (fn.__name__, time.time()),
                )
                applied_now.append(fn.__name__)
        except BaseException:
            await db.execute("ROLLBACK")
            raise
        await db.execute("COMMIT")
    return applied_now
