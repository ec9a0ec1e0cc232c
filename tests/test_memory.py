"""memory/: the store contract, on real SQLite in a tmp dir and real PostgreSQL (one schema per
test): every test taking `store` or `memory_backend` runs on both (tests/memory_backends.py).
The schema, pragma and path tests at the top are SQLite's own. Nothing of memory is mocked."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from memory_backends import FakeClock, integrity_error, rows

from memory import (
    Conversation,
    ConversationNotFound,
    ConversationStore,
    EmptyMessage,
    ExtractiveSummarizer,
    InvalidRetention,
    InvalidRole,
    InvalidTitle,
    MemoryPolicy,
    MessageTooLong,
    TurnMetrics,
    compaction,
    database_path,
    retention,
)
from memory.migrations import MIGRATIONS


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
async def store(memory_backend, clock):
    return await memory_backend.open(clock=clock)


@pytest.fixture
async def sqlite_store(tmp_path, clock):
    s = await ConversationStore.open(tmp_path, clock=clock)
    yield s
    await s.close()


def recount(store, conv_id):
    """Counters recomputed from the turns, straight from the database."""
    return rows(
        store,
        "SELECT count(*) FILTER (WHERE NOT is_summary), "
        "count(*) FILTER (WHERE NOT is_summary AND NOT compacted), "
        "coalesce(sum(length(content)) FILTER (WHERE NOT is_summary), 0), "
        "count(*) FILTER (WHERE is_summary) FROM turns WHERE conversation_id = ?",
        (conv_id,),
    )[0]


async def assert_counters_in_step(store, owner, conv_id):
    conv = await store.get_conversation(owner, conv_id)
    total, active, chars, summaries = recount(store, conv_id)
    assert (conv.message_count, conv.active_count, conv.chars) == (total, active, chars)
    assert (await store.status(owner, conv_id)).summaries == summaries


# -- schema -----------------------------------------------------------------------------

EXPECTED_SCHEMA = [
    (
        "table",
        "_mnemo_migrations",
        "CREATE TABLE _mnemo_migrations (name TEXT PRIMARY KEY, applied_at REAL)",
    ),
    (
        "table",
        "api_tokens",
        "CREATE TABLE api_tokens ( id TEXT PRIMARY KEY, owner TEXT NOT NULL CHECK (length(owner) "
        "BETWEEN 1 AND 200), name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 60), "
        "token_hash TEXT NOT NULL UNIQUE CHECK (length(token_hash) = 64), hint TEXT NOT NULL "
        "CHECK (length(hint) <= 8), created_at REAL NOT NULL, last_used_at REAL, revoked_at "
        "REAL )",
    ),
    (
        "index",
        "api_tokens_owner",
        "CREATE INDEX api_tokens_owner ON api_tokens (owner, created_at DESC)",
    ),
    (
        "table",
        "conversations",
        "CREATE TABLE conversations ( id TEXT PRIMARY KEY, owner TEXT NOT NULL CHECK "
        "(length(owner) BETWEEN 1 AND 200), title TEXT CHECK (title IS NULL OR length(title) "
        "BETWEEN 1 AND 100), persona_id TEXT NOT NULL DEFAULT 'assistant', persona_version "
        "INTEGER, retention_minutes INTEGER CHECK (retention_minutes IS NULL OR "
        "retention_minutes > 0), created_at REAL NOT NULL, last_active_at REAL NOT NULL, "
        "expires_at REAL, message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0), "
        "active_count INTEGER NOT NULL DEFAULT 0 CHECK (active_count >= 0), chars INTEGER NOT "
        "NULL DEFAULT 0 CHECK (chars >= 0), summary_count INTEGER NOT NULL DEFAULT 0 CHECK "
        "(summary_count >= 0), CHECK (active_count <= message_count) )",
    ),
    (
        "index",
        "conversations_expires",
        "CREATE INDEX conversations_expires ON conversations (expires_at) WHERE expires_at IS "
        "NOT NULL",
    ),
    (
        "index",
        "conversations_owner_active",
        "CREATE INDEX conversations_owner_active ON conversations (owner, last_active_at DESC)",
    ),
    (
        "table",
        "owner_settings",
        "CREATE TABLE owner_settings ( owner TEXT PRIMARY KEY CHECK (length(owner) BETWEEN 1 "
        "AND 200), about_me INTEGER NOT NULL DEFAULT 0 CHECK (about_me IN (0, 1)), time_zone "
        "TEXT CHECK (time_zone IS NULL OR length(time_zone) BETWEEN 1 AND 64) )",
    ),
    (
        "table",
        "pinned_facts",
        "CREATE TABLE pinned_facts ( id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL "
        "CHECK (length(owner) BETWEEN 1 AND 200), conversation_id TEXT REFERENCES conversations "
        "(id) ON DELETE CASCADE, content TEXT NOT NULL CHECK (length(content) BETWEEN 1 AND "
        "500), created_at REAL NOT NULL, source_turn_id INTEGER )",
    ),
    (
        "index",
        "pinned_facts_conversation",
        "CREATE INDEX pinned_facts_conversation ON pinned_facts (conversation_id)",
    ),
    (
        "index",
        "pinned_facts_scope",
        "CREATE INDEX pinned_facts_scope ON pinned_facts (owner, conversation_id, id)",
    ),
    (
        "table",
        "recall_fts",
        "CREATE VIRTUAL TABLE recall_fts USING fts5(body, content = '', "
        "tokenize = 'porter unicode61 remove_diacritics 2')",
    ),
    (
        "table",
        "recall_fts_config",
        "CREATE TABLE 'recall_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID",
    ),
    (
        "table",
        "recall_fts_data",
        "CREATE TABLE 'recall_fts_data'(id INTEGER PRIMARY KEY, block BLOB)",
    ),
    (
        "trigger",
        "recall_fts_delete",
        "CREATE TRIGGER recall_fts_delete AFTER DELETE ON turns BEGIN "
        "INSERT INTO recall_fts (recall_fts, rowid, body) VALUES ('delete', old.id, "
        "mnemo_recall_text(old.conversation_id, old.content)); END",
    ),
    (
        "table",
        "recall_fts_docsize",
        "CREATE TABLE 'recall_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB)",
    ),
    (
        "table",
        "recall_fts_idx",
        "CREATE TABLE 'recall_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID",
    ),
    (
        "table",
        "turn_metrics",
        "CREATE TABLE turn_metrics ( id INTEGER PRIMARY KEY, owner TEXT NOT NULL, "
        "conversation_id TEXT, model TEXT NOT NULL, input_tokens INTEGER CHECK (input_tokens IS "
        "NULL OR input_tokens >= 0), output_tokens INTEGER CHECK (output_tokens IS NULL OR "
        "output_tokens >= 0), latency_ms INTEGER CHECK (latency_ms IS NULL OR latency_ms >= 0), "
        "first_token_ms INTEGER CHECK (first_token_ms IS NULL OR first_token_ms >= 0), status "
        "TEXT NOT NULL CHECK (status IN ('ok', 'error', 'stopped', 'refused')), error_kind TEXT, "
        "created_at REAL NOT NULL , persona_id TEXT, persona_chars INTEGER CHECK (persona_chars "
        "IS NULL OR persona_chars >= 0), pinned_chars INTEGER CHECK (pinned_chars IS NULL OR "
        "pinned_chars >= 0), summary_chars INTEGER CHECK (summary_chars IS NULL OR summary_chars "
        ">= 0), recalled_chars INTEGER CHECK (recalled_chars IS NULL OR recalled_chars >= 0), "
        "recent_chars INTEGER CHECK (recent_chars IS NULL OR recent_chars >= 0), budget_chars "
        "INTEGER CHECK (budget_chars IS NULL OR budget_chars >= 0))",
    ),
    (
        "index",
        "turn_metrics_conversation",
        "CREATE INDEX turn_metrics_conversation ON turn_metrics (conversation_id, id) WHERE "
        "conversation_id IS NOT NULL",
    ),
    (
        "index",
        "turn_metrics_owner_time",
        "CREATE INDEX turn_metrics_owner_time ON turn_metrics (owner, created_at)",
    ),
    (
        "table",
        "turn_vectors",
        "CREATE TABLE turn_vectors ( conversation_id TEXT NOT NULL, turn_id INTEGER NOT NULL, "
        "model TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (conversation_id, turn_id) ) "
        "WITHOUT ROWID",
    ),
    (
        "trigger",
        "turn_vectors_delete",
        "CREATE TRIGGER turn_vectors_delete AFTER DELETE ON turns BEGIN DELETE FROM turn_vectors "
        "WHERE conversation_id = old.conversation_id AND turn_id = old.id; END",
    ),
    (
        "table",
        "turns",
        "CREATE TABLE turns ( id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT "
        "NULL REFERENCES conversations (id) ON DELETE CASCADE, role TEXT NOT NULL CHECK (role IN "
        "('user', 'assistant', 'summary')), content TEXT NOT NULL CHECK (length(content) BETWEEN "
        "1 AND 10000), created_at REAL NOT NULL, is_summary INTEGER NOT NULL DEFAULT 0 CHECK "
        "(is_summary = (role = 'summary')), compacted INTEGER NOT NULL DEFAULT 0 CHECK (compacted "
        "IN (0, 1)), incomplete INTEGER NOT NULL DEFAULT 0 CHECK (incomplete IN (0, 1)), "
        "covers_from_id INTEGER, covers_to_id INTEGER, covers_count INTEGER, speaker TEXT CHECK "
        "(speaker IS NULL OR length(speaker) BETWEEN 1 AND 80), origin TEXT CHECK (origin IS "
        "NULL OR (origin = 'edited' AND role = 'summary') OR (origin = 'tool' AND role = "
        "'user')), outcome TEXT "
        "CHECK (outcome IS NULL OR outcome IN ('failed', 'stopped', 'incomplete')), "
        "outcome_note TEXT CHECK (outcome_note IS NULL OR length(outcome_note) <= 1000), "
        "CHECK ((role = "
        "'summary') = (covers_to_id IS NOT NULL)), CHECK (covers_from_id IS NULL OR "
        "covers_from_id <= covers_to_id) )",
    ),
    (
        "index",
        "turns_conversation",
        "CREATE INDEX turns_conversation ON turns (conversation_id, compacted, is_summary, id)",
    ),
    (
        "index",
        "turns_conversation_id",
        "CREATE INDEX turns_conversation_id ON turns (conversation_id, id)",
    ),
    (
        "table",
        "turns_fts",
        "CREATE VIRTUAL TABLE turns_fts USING fts5(body, owner_key, conversation_key, "
        "tokenize = 'porter unicode61 remove_diacritics 2')",
    ),
    (
        "table",
        "turns_fts_config",
        "CREATE TABLE 'turns_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID",
    ),
    (
        "table",
        "turns_fts_content",
        "CREATE TABLE 'turns_fts_content'(id INTEGER PRIMARY KEY, c0, c1, c2)",
    ),
    (
        "table",
        "turns_fts_data",
        "CREATE TABLE 'turns_fts_data'(id INTEGER PRIMARY KEY, block BLOB)",
    ),
    (
        "trigger",
        "turns_fts_delete",
        "CREATE TRIGGER turns_fts_delete AFTER DELETE ON turns BEGIN "
        "DELETE FROM turns_fts WHERE rowid = old.id; END",
    ),
    (
        "table",
        "turns_fts_docsize",
        "CREATE TABLE 'turns_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB)",
    ),
    (
        "table",
        "turns_fts_idx",
        "CREATE TABLE 'turns_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID",
    ),
    (
        "table",
        "vector_backfill",
        "CREATE TABLE vector_backfill (one INTEGER PRIMARY KEY CHECK (one = 1), model TEXT NOT "
        "NULL, done_upto INTEGER NOT NULL)",
    ),
]


def schema_of(path):
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
    return [(t, n, " ".join(s.split())) for t, n, s in rows]


async def test_schema_is_pinned(sqlite_store):
    assert schema_of(sqlite_store.path) == EXPECTED_SCHEMA


async def test_migrations_recorded_once_and_reopen_applies_nothing(tmp_path):
    (await ConversationStore.open(tmp_path)).path  # noqa: B018 - open creates and migrates
    store = await ConversationStore.open(tmp_path / "mnemo.db")
    await store.close()
    with sqlite3.connect(tmp_path / "mnemo.db") as db:
        names = [r[0] for r in db.execute("SELECT name FROM _mnemo_migrations ORDER BY rowid")]
    assert names == [fn.__name__ for fn in MIGRATIONS]
    assert names[0] == "m001_conversations"


async def test_connection_pragmas(sqlite_store):
    db = sqlite_store._db.writer
    assert (await db.execute_fetchall("PRAGMA journal_mode"))[0][0] == "wal"
    assert (await db.execute_fetchall("PRAGMA foreign_keys"))[0][0] == 1
    assert (await db.execute_fetchall("PRAGMA busy_timeout"))[0][0] >= 1000


async def test_path_is_explicit_and_the_environment_is_ignored(tmp_path, monkeypatch):
    # One resolver (assistant.config.data_dir) reads MNEMO_DATA_DIR; memory takes the path.
    monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path / "elsewhere"))
    store = await ConversationStore.open(tmp_path / "here")
    try:
        assert store.path == tmp_path / "here" / "mnemo.db"
        assert store.path.exists()
        assert not (tmp_path / "elsewhere").exists()
    finally:
        await store.close()
    with pytest.raises(TypeError, match="pass the data directory"):
        await ConversationStore.open(None)


@pytest.mark.parametrize(
    "given,expected",
    [
        ("data", "data/mnemo.db"),
        ("data/chat.db", "data/chat.db"),
        ("data/chat.sqlite", "data/chat.sqlite"),
        ("data/chat.sqlite3", "data/chat.sqlite3"),
        ("data.d", "data.d/mnemo.db"),
    ],
)
def test_database_path_is_a_pure_join(given, expected):
    assert database_path(given) == Path(expected)


# -- basics -----------------------------------------------------------------------------


async def test_create_append_context_transcript_reset(store):
    conv = await store.create_conversation("ana")
    assert len(conv.id) >= 20 and conv.title is None and conv.persona_id == "assistant"
    await store.append("ana", conv.id, "user", "  Hello,   I am Ana from Porto.  ")
    await store.append("ana", conv.id, "assistant", "Nice to meet you, Ana!")
    ctx = await store.context("ana", conv.id)
    assert ctx.messages() == [
        {"role": "user", "content": "  Hello,   I am Ana from Porto.  "},
        {"role": "assistant", "content": "Nice to meet you, Ana!"},
    ]
    assert ctx.summary is None and ctx.recalled == [] and not ctx.degraded
    assert ctx.chars == sum(len(t.content) for t in ctx.turns)
    assert [t.role for t in await store.transcript("ana", conv.id)] == ["user", "assistant"]
    conv = await store.get_conversation("ana", conv.id)
    assert conv.title == "Hello, I am Ana from Porto."
    assert (conv.message_count, conv.active_count, conv.chars) == (2, 2, 55)

    gone = await store.reset("ana", conv.id)
    assert (gone.turns, gone.summaries, gone.chars) == (2, 0, 55)
    assert await store.transcript("ana", conv.id) == []
    assert (await store.context("ana", conv.id)).turns == []
    conv = await store.get_conversation("ana", conv.id)  # the conversation stays, empty
    assert (conv.message_count, conv.active_count, conv.chars) == (0, 0, 0)
    await assert_counters_in_step(store, "ana", conv.id)


async def test_ids_are_random_and_unguessable(store):
    ids = {(await store.create_conversation("ana")).id for _ in range(20)}
    assert len(ids) == 20
    assert all(len(i) >= 20 and not i.isdigit() for i in ids)


@pytest.mark.parametrize(
    "first_message,expected",
    [
        ("What's a good name for a cat?", "What's a good name for a cat?"),
        ("  spaces \n and\tnewlines  ", "spaces and newlines"),
        ("word " * 30, "word word word word word word word word word word word word…"),
        ("x" * 100, "x" * 59 + "…"),
        ("東京でおすすめのラーメン屋を教えてください。" * 4, None),
    ],
)
async def test_title_is_first_user_message_trimmed(store, first_message, expected):
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "assistant", "Hi! How can I help?")
    await store.append("ana", conv.id, "user", first_message)
    await store.append("ana", conv.id, "user", "second message")
    title = (await store.get_conversation("ana", conv.id)).title
    assert len(title) <= 60
    if expected is not None:
        assert title == expected
    else:
        assert title.endswith("…") and title.startswith("東京")


async def test_explicit_title_is_kept_and_rename_validates(store):
    conv = await store.create_conversation("ana", title="Trip planning")
    await store.append("ana", conv.id, "user", "Where should I go?")
    assert (await store.get_conversation("ana", conv.id)).title == "Trip planning"
    renamed = await store.rename_conversation("ana", conv.id, "  Lisbon   trip ")
    assert renamed.title == "Lisbon trip"
    with pytest.raises(InvalidTitle, match="empty"):
        await store.rename_conversation("ana", conv.id, "   ")
    with pytest.raises(InvalidTitle, match="101 characters; the limit is 100"):
        await store.rename_conversation("ana", conv.id, "t" * 101)


async def test_list_conversations_newest_activity_first(store, clock):
    a = await store.create_conversation("ana", title="a")
    clock.advance(1)
    b = await store.create_conversation("ana", title="b")
    clock.advance(1)
    c = await store.create_conversation("ana", title="c")
    clock.advance(1)
    await store.append("ana", a.id, "user", "bump a")
    assert [x.id for x in await store.list_conversations("ana")] == [a.id, c.id, b.id]
    assert [x.id for x in await store.list_conversations("ana", limit=2)] == [a.id, c.id]
    assert await store.list_conversations("bob") == []


async def test_set_persona_and_delete(store):
    conv = await store.create_conversation("ana", persona_id="assistant")
    conv = await store.set_persona("ana", conv.id, "tutor", 3)
    assert (conv.persona_id, conv.persona_version) == ("tutor", 3)
    await store.append("ana", conv.id, "user", "hello")
    await store.delete_conversation("ana", conv.id)
    with pytest.raises(ConversationNotFound):
        await store.get_conversation("ana", conv.id)
    # The turns went with it (foreign key cascade).
    assert rows(store, "SELECT count(*) FROM turns") == [(0,)]


# -- owner isolation --------------------------------------------------------------------

OWNER_CALLS = [
    ("get_conversation", ()),
    ("rename_conversation", ("stolen",)),
    ("delete_conversation", ()),
    ("set_persona", ("pirate",)),
    ("set_retention", (5,)),
    ("append", ("user", "hi")),
    ("context", ()),
    ("summarize_if_needed", ()),
    ("status", ()),
    ("reset", ()),
    ("transcript", ()),
    ("undo", ()),
    ("drop_last_reply", ()),
]


@pytest.mark.parametrize("method,args", OWNER_CALLS, ids=[m for m, _ in OWNER_CALLS])
async def test_another_owners_conversation_behaves_like_a_missing_one(store, method, args):
    conv = await store.create_conversation("ana", title="private")
    await store.append("ana", conv.id, "user", "my secret")
    await store.append("ana", conv.id, "assistant", "kept")

    with pytest.raises(ConversationNotFound) as theirs:
        await getattr(store, method)("mallory", conv.id, *args)
    with pytest.raises(ConversationNotFound) as missing:
        await getattr(store, method)("mallory", "no-such-id", *args)
    assert str(theirs.value) == str(missing.value)

    # Nothing of ana's changed.
    assert [t.content for t in await store.transcript("ana", conv.id)] == ["my secret", "kept"]
    assert (await store.get_conversation("ana", conv.id)).title == "private"
    assert await store.list_conversations("mallory") == []


# -- limits -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content,ok",
    [
        ("a" * 10_000, True),
        ("a" * 10_001, False),
        ("界" * 10_000, True),
        ("界" * 10_001, False),
        ("😀" * 10_000, True),
        ("😀" * 10_001, False),
        ("a" * 9_999 + "😀", True),
    ],
    ids=[
        "ascii-10000",
        "ascii-10001",
        "cjk-10000",
        "cjk-10001",
        "emoji-10000",
        "emoji-10001",
        "mix",
    ],
)
async def test_message_length_limit(store, content, ok):
    conv = await store.create_conversation("ana")
    if ok:
        turn = await store.append("ana", conv.id, "user", content)
        assert (await store.transcript("ana", conv.id))[0].content == content
        assert turn.saved
    else:
        with pytest.raises(MessageTooLong) as err:
            await store.append("ana", conv.id, "user", content)
        assert str(err.value) == (
            "Your message is 10,001 characters; the limit is 10,000 (1 too many). "
            "Shorten it or split it into several messages."
        )
        assert await store.transcript("ana", conv.id) == []
        assert (await store.get_conversation("ana", conv.id)).message_count == 0


@pytest.mark.parametrize(
    "role,content,error",
    [
        ("user", "", EmptyMessage),
        ("user", "   \n\t ", EmptyMessage),
        ("assistant", "\u3000", EmptyMessage),  # ideographic space
        ("system", "hello", InvalidRole),
        ("summary", "hello", InvalidRole),
    ],
)
async def test_refused_messages_store_nothing(store, role, content, error):
    conv = await store.create_conversation("ana")
    with pytest.raises(error):
        await store.append("ana", conv.id, role, content)
    assert await store.transcript("ana", conv.id) == []


async def test_schema_check_refuses_long_content_even_without_the_store(store):
    conv = await store.create_conversation("ana")
    insert = "INSERT INTO turns (conversation_id, role, content, created_at) VALUES (?,?,?,0)"
    with pytest.raises(integrity_error(store)):
        rows(store, insert, (conv.id, "user", "界" * 10_001))
    with pytest.raises(integrity_error(store)):
        rows(store, insert, (conv.id, "system", "hi"))
    assert rows(store, "SELECT count(*) FROM turns") == [(0,)]


# -- context ----------------------------------------------------------------------------

SMALL = MemoryPolicy(
    keep_recent=6,
    message_chars=200,
    history_chars=600,
    summary_chars=200,
    recall_chars=200,
    summarize_at=10,
)


@pytest.mark.parametrize(
    "messages,kept,evicted,clipped",
    [
        # (role, length) per message; kept/evicted/clipped are 0-based message indexes.
        ([("user", 100), ("assistant", 100)], [0, 1], [], []),
        # 6 x 150 = 900 > 600: the newest four fit (600), the two oldest are evicted.
        ([("user", 150), ("assistant", 150)] * 3, [2, 3, 4, 5], [0, 1], []),
        # Would start on an assistant turn: that one is evicted too.
        (
            [("user", 100), ("assistant", 150), ("user", 150), ("assistant", 150), ("user", 150)],
            [2, 3, 4],
            [0, 1],
            [],
        ),
        # Older than keep_recent (6): not in the window, not "evicted" either.
        ([("user", 10), ("assistant", 10)] * 5, [4, 5, 6, 7, 8, 9], [], []),
        # A 1,000-char message is clipped to 200 for the prompt only.
        ([("user", 1000), ("assistant", 50)], [0, 1], [], [0]),
        # Clipped to 200, it still does not fit after the newest ones: evicted.
        (
            [("user", 1000)] + [("assistant", 100), ("user", 100)] * 2 + [("assistant", 150)],
            [2, 3, 4, 5],
            [0, 1],
            [],
        ),
    ],
)
async def test_context_budget_and_eviction_order(memory_backend, messages, kept, evicted, clipped):
    store = await memory_backend.open(policy=SMALL)
    try:
        conv = await store.create_conversation("ana")
        turns = []
        for i, (role, n) in enumerate(messages):
            turns.append(await store.append("ana", conv.id, role, f"{i:03d}" + "x" * (n - 3)))
        ctx = await store.context("ana", conv.id)
        assert [t.id for t in ctx.turns] == [turns[i].id for i in kept]
        assert ctx.evicted_ids == [turns[i].id for i in evicted]
        assert ctx.clipped_ids == [turns[i].id for i in clipped]
        assert ctx.chars <= ctx.budget == 600
        assert ctx.chars == sum(len(t.content) for t in ctx.turns)
        assert all(len(t.content) <= 200 for t in ctx.turns)
        assert ctx.turns[0].role == "user"
        # The transcript keeps every message whole.
        full = await store.transcript("ana", conv.id)
        assert [len(t.content) for t in full] == [n for _, n in messages]
    finally:
        await store.close()


async def test_clipped_message_keeps_start_and_end(store):
    conv = await store.create_conversation("ana")
    text = "START " + "m" * 5000 + " END"
    await store.append("ana", conv.id, "user", text)
    (turn,) = (await store.context("ana", conv.id)).turns
    assert len(turn.content) == 2000
    assert turn.content.startswith("START ") and turn.content.endswith(" END")
    assert "[…]" in turn.content


# -- undo / retry -----------------------------------------------------------------------


async def test_undo_and_drop_last_reply(store):
    conv = await store.create_conversation("ana")
    for role, text in [("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")]:
        await store.append("ana", conv.id, role, text)
    await store.append("ana", conv.id, "assistant", "a2 part two", incomplete=True)

    reply = await store.drop_last_reply("ana", conv.id)
    assert reply.content == "a2 part two" and reply.incomplete
    assert [t.content for t in await store.transcript("ana", conv.id)] == ["q1", "a1", "q2"]
    assert await store.drop_last_reply("ana", conv.id) is None  # ends on a user message

    await store.append("ana", conv.id, "assistant", "a2 again")
    dropped = await store.undo("ana", conv.id)
    assert [t.content for t in dropped] == ["q2", "a2 again"]
    assert [t.content for t in await store.transcript("ana", conv.id)] == ["q1", "a1"]
    await assert_counters_in_step(store, "ana", conv.id)
    assert [t.content for t in await store.undo("ana", conv.id)] == ["q1", "a1"]
    assert await store.undo("ana", conv.id) == []


# -- summarization ----------------------------------------------------------------------


async def fill(store, owner, conv_id, n, start=0, parity=0):
    """n alternating messages; message i is from the user when i % 2 == parity."""
    for i in range(start, start + n):
        role = "user" if i % 2 == parity else "assistant"
        text = f"message {i} about nothing much"
        await store.append(owner, conv_id, role, text.format(i=i))


async def test_101st_message_triggers_one_summary_and_twenty_turns(store):
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "assistant", "Hi, I am Mnemo. What should I call you?")
    await store.append("ana", conv.id, "user", "My name is Ana Lima and I live in Porto.")
    await fill(store, "ana", conv.id, 98, start=2, parity=1)
    assert not await store.summarize_if_needed("ana", conv.id)  # 100 active: not yet
    await store.append("ana", conv.id, "user", "message 100")
    assert await store.summarize_if_needed("ana", conv.id)

    ctx = await store.context("ana", conv.id)
    assert ctx.summary is not None and len(ctx.turns) == 20
    assert "Ana Lima" in ctx.summary.content and "Porto" in ctx.summary.content
    assert ctx.summary.covers_count == 81
    assert ctx.chars <= ctx.budget
    st = await store.status("ana", conv.id)
    assert (st.total, st.active, st.compacted, st.summaries, st.summary_covers) == (
        101,
        20,
        81,
        1,
        81,
    )
    full = await store.transcript("ana", conv.id)
    assert len(full) == 102  # every message stays scrollable, plus the summary
    assert sum(t.compacted for t in full) == 81
    assert not await store.summarize_if_needed("ana", conv.id)  # nothing more to do
    await assert_counters_in_step(store, "ana", conv.id)


PLANTED = "My name is Ilsa Varga, I live in Tromsø and my daughter Mira was born on 14 March 2019."
FILLER = [
    "What do you think about {topic}?",
    "Honestly {topic} is fine, I suppose.",
    "I like {topic} on weekends number {i}.",
    "Can you tell me more about {topic}?",
    "Sure, {topic} has a long history.",
]
TOPICS = ["tea", "rain", "trains", "chess", "soup", "jazz", "bikes", "clouds"]


async def test_facts_from_message_one_survive_many_summaries(memory_backend):
    store = await memory_backend.open()
    try:
        conv = await store.create_conversation("ilsa")
        await store.append("ilsa", conv.id, "user", PLANTED)
        summaries = 0
        for i in range(1, 1000):
            text = FILLER[i % len(FILLER)].format(topic=TOPICS[i % len(TOPICS)], i=i)
            await store.append("ilsa", conv.id, "user" if i % 2 == 0 else "assistant", text)
            summaries += await store.summarize_if_needed("ilsa", conv.id)
        ctx = await store.context("ilsa", conv.id)
        assert summaries >= 10
        assert len(ctx.summary.content) <= store.policy.summary_chars
        for fact in ("Ilsa Varga", "Tromsø", "Mira", "14 March 2019"):
            assert fact in ctx.summary.content
        st = await store.status("ilsa", conv.id)
        assert st.total == 1000 and st.summary_covers == st.compacted
        await assert_counters_in_step(store, "ilsa", conv.id)
    finally:
        await store.close()


class FailingSummarizer:
    async def summarize(self, previous, turns, max_chars):
        raise RuntimeError("model exploded")


async def test_summarizer_that_raises_leaves_everything_unchanged(memory_backend):
    store = await memory_backend.open(policy=SMALL, summarizer=FailingSummarizer())
    try:
        conv = await store.create_conversation("ana")
        await fill(store, "ana", conv.id, 12)
        before = (await store.transcript("ana", conv.id), await store.status("ana", conv.id))
        assert not await store.summarize_if_needed("ana", conv.id)
        after = (await store.transcript("ana", conv.id), await store.status("ana", conv.id))
        assert after == before
        assert not after[1].summarizing
        store.summarizer = ExtractiveSummarizer()
        assert await store.summarize_if_needed("ana", conv.id)  # a later call succeeds
    finally:
        await store.close()


class MeddlingSummarizer:
    """Changes the conversation while "the model" is summarizing."""

    def __init__(self, meddle):
        self.store = None
        self.meddle = meddle

    async def summarize(self, previous, turns, max_chars):
        await self.meddle(self.store)
        return f"- User: summary of {len(turns)} turns"


async def _append_more(store):
    await store.append("ana", CONV["id"], "user", "written during summarization")


async def _reset(store):
    await store.reset("ana", CONV["id"])


async def _undo(store):
    await store.undo("ana", CONV["id"])


async def _delete(store):
    await store.delete_conversation("ana", CONV["id"])


CONV: dict[str, str] = {}


@pytest.mark.parametrize(
    "meddle,compacts",
    [(_append_more, True), (_undo, True), (_reset, False), (_delete, False)],
    ids=["append", "undo", "reset", "delete"],
)
async def test_conversation_changed_during_summarization(memory_backend, meddle, compacts):
    summarizer = MeddlingSummarizer(meddle)
    store = await memory_backend.open(policy=SMALL, summarizer=summarizer)
    summarizer.store = store
    try:
        conv = await store.create_conversation("ana")
        CONV["id"] = conv.id
        await fill(store, "ana", conv.id, 10)
        assert await store.summarize_if_needed("ana", conv.id) is compacts
        if meddle is _delete:
            with pytest.raises(ConversationNotFound):
                await store.get_conversation("ana", conv.id)
            return
        await assert_counters_in_step(store, "ana", conv.id)
        full = await store.transcript("ana", conv.id)
        if meddle is _reset:
            assert full == []  # the reset wins: no summary of cleared turns appears
        if meddle is _append_more:
            assert full[-2].content == "written during summarization" and not full[-2].compacted
            assert full[-1].is_summary and full[-1].covers_count == 4
        ctx = await store.context("ana", conv.id)
        assert all(not t.compacted for t in ctx.turns)
    finally:
        await store.close()


async def test_one_summarization_per_conversation_at_a_time(memory_backend):
    gate = asyncio.Event()
    started = asyncio.Event()
    calls = []

    class SlowSummarizer:
        async def summarize(self, previous, turns, max_chars):
            calls.append(len(turns))
            started.set()
            await gate.wait()
            return "- User: slow summary"

    store = await memory_backend.open(policy=SMALL, summarizer=SlowSummarizer())
    try:
        conv = await store.create_conversation("ana")
        await fill(store, "ana", conv.id, 10)
        first = asyncio.create_task(store.summarize_if_needed("ana", conv.id))
        await started.wait()
        assert (await store.status("ana", conv.id)).summarizing
        assert not await store.summarize_if_needed("ana", conv.id)  # already running
        await store.append("ana", conv.id, "user", "the chat goes on meanwhile")
        gate.set()
        assert await first
        assert calls == [4]
        assert not (await store.status("ana", conv.id)).summarizing
        await assert_counters_in_step(store, "ana", conv.id)
    finally:
        await store.close()


async def test_summary_is_capped(memory_backend):
    class Verbose:
        async def summarize(self, previous, turns, max_chars):
            return "blah " * 10_000

    store = await memory_backend.open(policy=SMALL, summarizer=Verbose())
    try:
        conv = await store.create_conversation("ana")
        await fill(store, "ana", conv.id, 10)
        assert await store.summarize_if_needed("ana", conv.id)
        assert len((await store.context("ana", conv.id)).summary.content) <= 200
    finally:
        await store.close()


# -- concurrency ------------------------------------------------------------------------


async def test_fifty_concurrent_conversations_lose_nothing(store):
    convs = [await store.create_conversation(f"owner{i % 5}") for i in range(50)]

    async def chat(conv):
        for j in range(20):
            await store.append(
                conv.owner, conv.id, "user" if j % 2 == 0 else "assistant", f"{conv.id} #{j}"
            )

    await asyncio.gather(*(chat(c) for c in convs))
    for conv in convs:
        full = await store.transcript(conv.owner, conv.id)
        assert [t.content for t in full] == [f"{conv.id} #{j}" for j in range(20)]
        assert (await store.get_conversation(conv.owner, conv.id)).message_count == 20
    assert rows(store, "SELECT count(*) FROM turns") == [(1000,)]
    if isinstance(store, ConversationStore):
        assert rows(store, "PRAGMA integrity_check") == [("ok",)]


# -- retention --------------------------------------------------------------------------


async def test_retention_expires_idle_conversations(store, clock):
    conv = await store.create_conversation("ana", retention_minutes=10)
    keep = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "forget me")
    assert (await store.get_conversation("ana", conv.id)).expires_at == clock.now + 600

    clock.advance(9 * 60)
    await store.append("ana", conv.id, "assistant", "sliding: this write refreshes it")
    clock.advance(9 * 60)
    assert (await store.get_conversation("ana", conv.id)).title == "forget me"

    clock.advance(2 * 60)  # 11 minutes idle
    for call in (store.get_conversation, store.context, store.transcript, store.status):
        with pytest.raises(ConversationNotFound):
            await call("ana", conv.id)
    with pytest.raises(ConversationNotFound):
        await store.append("ana", conv.id, "user", "too late")
    assert [c.id for c in await store.list_conversations("ana")] == [keep.id]

    assert await store.purge_expired(chunk=1) == 1  # one row per delete: still purges all
    assert rows(store, "SELECT count(*) FROM turns") == [(0,)]
    assert rows(store, "SELECT count(*) FROM conversations") == [(1,)]


async def test_set_retention_counts_from_now_and_can_be_removed(store, clock):
    conv = await store.create_conversation("ana")
    assert conv.expires_at is None
    clock.advance(3600)
    conv = await store.set_retention("ana", conv.id, 5)
    assert conv.expires_at == clock.now + 300 and conv.retention_minutes == 5
    conv = await store.set_retention("ana", conv.id, None)
    assert conv.expires_at is None
    clock.advance(10**6)
    assert (await store.get_conversation("ana", conv.id)).id == conv.id
    for bad in (0, -5, 1.5, True):
        with pytest.raises(InvalidRetention):
            await store.set_retention("ana", conv.id, bad)


async def test_expired_conversations_are_purged_opportunistically(store, clock):
    old = await store.create_conversation("ana", retention_minutes=1)
    await store.append("ana", old.id, "user", "bye")
    clock.advance(3600)
    await store.create_conversation("bob")  # any write may purge a small batch
    assert rows(store, "SELECT count(*) FROM conversations WHERE id = ?", (old.id,)) == [(0,)]


@pytest.mark.parametrize(
    "minutes,now,expected", [(None, 100.0, None), (1, 100.0, 160.0), (90, 0.0, 5_400.0)]
)
def test_expiry_is_minutes_idle_from_now(minutes, now, expected):
    assert retention.expires_at(minutes, now) == expected


def test_purges_run_at_most_once_a_minute():
    assert retention.purge_due(float("-inf"), 0.0)
    assert not retention.purge_due(100.0, 159.9)
    assert retention.purge_due(100.0, 160.0)


async def test_a_purge_cut_short_continues_next_time(store, clock):
    conv = await store.create_conversation("ana", retention_minutes=1)
    for i in range(7):
        await store.append("ana", conv.id, "user", f"message {i}")
    clock.advance(3600)
    # Three turns per delete statement: three transactions for seven turns, then the row.
    assert await store.purge_expired(max_conversations=1, chunk=3) == 1
    assert await store.purge_expired() == 0
    assert rows(store, "SELECT count(*) FROM turns") == [(0,)]


@pytest.mark.parametrize(
    "active,expected",
    [
        (0, 0),
        (100, 0),  # below summarize_at (101)
        (101, 81),  # all but the newest keep_recent (20)
        (5_000, 1_000),  # a backlog: at most fold_max per pass
    ],
)
def test_fold_size(active, expected):
    conv = Conversation(
        "c", "ana", None, "assistant", None, None, 0.0, 0.0, active, active, 0, None
    )
    assert compaction.fold_size(conv, MemoryPolicy()) == expected


# -- metrics ----------------------------------------------------------------------------


async def test_metrics_count_toward_the_quota_and_hold_no_text(store, clock):
    conv = await store.create_conversation("ana")
    for status in ("ok", "error", "stopped", "refused"):
        await store.record_metrics(
            "ana",
            conv.id,
            TurnMetrics(
                model="Gemini 2.5 Flash",
                input_tokens=10,
                output_tokens=5,
                latency_ms=300,
                first_token_ms=90,
                status=status,
            ),
        )
        clock.advance(60)
    await store.record_metrics(
        "bob", None, TurnMetrics(model="x", status="error", error_kind="Quota")
    )
    assert await store.count_turn_requests("ana", since=0) == 4
    assert await store.count_turn_requests("ana", since=clock.now - 150) == 2
    assert await store.count_turn_requests("bob", since=0) == 1
    await store.delete_conversation("ana", conv.id)  # deleting does not reset the quota
    assert await store.count_turn_requests("ana", since=0) == 4
    with pytest.raises(ValueError, match="use one of ok, error, stopped, refused"):
        TurnMetrics(model="x", status="weird")
    with pytest.raises(ValueError, match="output_tokens is -1; use a whole number >= 0"):
        TurnMetrics(model="x", output_tokens=-1)


async def test_transcript_pages_back_from_the_newest(store):
    conv = await store.create_conversation("ana")
    await fill(store, "ana", conv.id, 7)
    page = await store.transcript("ana", conv.id, limit=3)
    assert [t.content for t in page] == [f"message {i} about nothing much" for i in (4, 5, 6)]
    page = await store.transcript("ana", conv.id, limit=3, before_id=page[0].id)
    assert [t.content[:9] for t in page] == ["message 1", "message 2", "message 3"]
    page = await store.transcript("ana", conv.id, before_id=page[0].id)
    assert [t.content[:9] for t in page] == ["message 0"]
    assert len(await store.transcript("ana", conv.id)) == 7


async def test_a_backlog_is_summarized_over_several_passes(memory_backend):
    policy = MemoryPolicy(
        keep_recent=4,
        summarize_at=10,
        fold_max=5,
        summary_chars=400,
        recall_chars=400,
        message_chars=400,
        history_chars=2000,
    )
    store = await memory_backend.open(policy=policy)
    try:
        conv = await store.create_conversation("ana")
        await fill(store, "ana", conv.id, 30)  # summarization was never called meanwhile
        passes = 0
        while await store.summarize_if_needed("ana", conv.id):
            passes += 1
        st = await store.status("ana", conv.id)
        # Each pass folds 5 and the reply after them, so the window opens on a user turn:
        # 30 -> 24 -> 18 -> 12 -> 6.
        assert passes == 4 and st.active == 6 and st.summaries == 4
        await assert_counters_in_step(store, "ana", conv.id)
    finally:
        await store.close()
