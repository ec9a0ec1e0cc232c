"""memory/ recall and search, nothing mocked. Tests taking `store` or `memory_backend` run on
real SQLite (FTS5) and real PostgreSQL (tsvector + pg_trgm); the migration, FTS5-index and
bulk-loaded tests are SQLite's own."""

from __future__ import annotations

import random
import sqlite3

import aiosqlite
import pytest
from memory_backends import FakeClock, rows

from bench.datagen import Corpus, message_pool
from bench.mnemo_corpus import bulk_load, owner_of
from memory import ConversationStore, MemoryPolicy, migrations, recall, render_memory
from memory.recall import bigram_text, fts_query, query_terms, recall_key, recall_text

FILLER = [
    "What should we plan for dinner sometime this week?",
    "Maybe something simple, like soup or a salad.",
    "I was thinking about the weather again today.",
    "Rain all week, apparently. Take an umbrella.",
    "Can you remind me to call the bank tomorrow?",
    "Sure, I will keep that in mind for you.",
    "今天我们聊聊天气吧。",
    "明日は雨が降るそうです。",
]


@pytest.fixture
async def store(memory_backend):
    return await memory_backend.open(clock=FakeClock())


def fts_rows(path, conv_id=None):
    with sqlite3.connect(path) as db:
        if conv_id is None:
            return db.execute("SELECT count(*) FROM turns_fts").fetchone()[0]
        return db.execute(
            "SELECT count(*) FROM turns_fts f JOIN turns t ON t.id = f.rowid "
            "WHERE t.conversation_id = ?",
            (conv_id,),
        ).fetchone()[0]


def recall_docs(path):
    """Turns in the recall index (contentless: its docsize table has a row per turn), after
    checking the index is consistent."""
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO recall_fts (recall_fts) VALUES ('integrity-check')")
        return db.execute("SELECT count(*) FROM recall_fts_docsize").fetchone()[0]


async def chat(store, owner, conv_id, pairs):
    for user, assistant in pairs:
        await store.append(owner, conv_id, "user", user)
        await store.append(owner, conv_id, "assistant", assistant)


# -- recall in the context --------------------------------------------------------------


async def test_recall_finds_a_planted_detail_after_1000_messages(store):
    conv = await store.create_conversation("ana")
    await chat(store, "ana", conv.id, [("Hi!", "Hello, how can I help?")])
    await chat(
        store,
        "ana",
        conv.id,
        [
            (
                "We had dinner at Trattoria Lucca on Via Roma, the carbonara was perfect.",
                "That sounds lovely, I am glad you enjoyed it.",
            )
        ],
    )
    summaries = 0
    for i in range(1000):
        role = "user" if i % 2 == 0 else "assistant"
        await store.append("ana", conv.id, role, FILLER[i % len(FILLER)])
        summaries += await store.summarize_if_needed("ana", conv.id)
    assert summaries >= 5

    question = "What was the name of that trattoria with the carbonara?"
    ctx = await store.context("ana", conv.id, query=question)
    recalled = {r.turn.id: r for r in ctx.recalled}
    planted = next(t for t in await store.transcript("ana", conv.id) if "Lucca" in t.content)
    assert planted.compacted
    assert planted.id in recalled
    assert set(recalled[planted.id].matched) >= {"trattoria", "carbonara"}
    # Its neighbour (the reply) comes along for sense, labelled as such.
    reply = recalled.get(planted.id + 1)
    assert reply is not None and reply.neighbour_of == planted.id and reply.matched == ()
    # Ordered by time, never a turn of the recent window, all within the budgets.
    ids = [r.turn.id for r in ctx.recalled]
    assert ids == sorted(ids)
    assert not set(ids) & {t.id for t in ctx.turns}
    assert sum(len(r.turn.content) for r in ctx.recalled) <= store.policy.recall_chars
    assert len([r for r in ctx.recalled if r.neighbour_of is None]) <= store.policy.recall_k
    assert ctx.chars <= ctx.budget
    assert ctx.chars == (
        len(ctx.summary.content)
        + sum(len(r.turn.content) for r in ctx.recalled)
        + sum(len(t.content) for t in ctx.turns)
    )
    assert "Recalled older messages" in render_memory(ctx) and "Lucca" in render_memory(ctx)

    assert (await store.context("ana", conv.id)).recalled == []  # no query, no recall


@pytest.mark.parametrize(
    "fact,question",
    [
        ("我上个月在京都吃了一家很好吃的拉面店，叫一兰。", "那家拉面店叫什么名字？"),
        ("我对花生过敏。", "我对什么过敏？"),
        ("私の猫の名前はモモです。", "猫の名前は何でしたっけ？"),
        ("제 동생은 부산에 살아요.", "동생은 어디에 살아요?"),
        ("My flight to Reykjavík leaves on 3 February at 07:40.", "flight to Reykjavik?"),
    ],
)
async def test_cjk_and_accented_recall(memory_backend, fact, question):
    policy = MemoryPolicy(
        keep_recent=4,
        summarize_at=12,
        message_chars=400,
        summary_chars=400,
        recall_chars=400,
        history_chars=2000,
    )
    store = await memory_backend.open(policy=policy)
    try:
        conv = await store.create_conversation("mei")
        await chat(store, "mei", conv.id, [(fact, "好的，我记住了。")])
        for i in range(40):
            await store.append("mei", conv.id, "user" if i % 2 == 0 else "assistant", FILLER[i % 8])
            await store.summarize_if_needed("mei", conv.id)
        ctx = await store.context("mei", conv.id, query=question)
        assert fact in [r.turn.content for r in ctx.recalled if r.neighbour_of is None]
    finally:
        await store.close()


async def test_recall_never_duplicates_the_recent_window(store):
    conv = await store.create_conversation("ana")
    await chat(store, "ana", conv.id, [("My cat is called Miso.", "Miso is a great name.")])
    ctx = await store.context("ana", conv.id, query="what is my cat called, Miso?")
    assert ctx.recalled == []
    assert ctx.turns[0].content == "My cat is called Miso."


async def test_recall_respects_k_and_the_budget(memory_backend):
    policy = MemoryPolicy(keep_recent=4, summarize_at=30, recall_k=3, recall_chars=1200)
    store = await memory_backend.open(policy=policy)
    try:
        conv = await store.create_conversation("ana")
        for i in range(40):
            text = f"Note {i}: the lighthouse keeper logbook entry. " + "padding " * 60
            await store.append("ana", conv.id, "user" if i % 2 == 0 else "assistant", text)
        assert await store.summarize_if_needed("ana", conv.id)
        ctx = await store.context("ana", conv.id, query="lighthouse keeper logbook")
        hits = [r for r in ctx.recalled if r.neighbour_of is None]
        assert 1 <= len(hits) <= 3
        assert sum(len(r.turn.content) for r in ctx.recalled) <= 1200
        assert all(len(r.turn.content) <= 300 for r in ctx.recalled)  # recall_chars // 4
        assert ctx.chars <= ctx.budget
    finally:
        await store.close()


# -- search -----------------------------------------------------------------------------


async def test_search_is_owner_isolated_newest_first_with_snippets(store):
    mine = await store.create_conversation("ana", title="Trip")
    older = await store.create_conversation("ana", title="Food")
    theirs = await store.create_conversation("bob")
    await store.append("ana", older.id, "user", "The ramen place in Kyoto was called Ichiran.")
    await store.append("ana", mine.id, "user", "Book a table at the ramen bar near the station.")
    await store.append("bob", theirs.id, "user", "Bob's secret ramen recipe uses miso.")
    await store.append("ana", mine.id, "assistant", "Done, nothing else to note.")

    hits = await store.search("ana", "ramen")
    assert [h.conversation_id for h in hits] == [mine.id, older.id]
    assert hits[0].conversation_title == "Trip" and hits[0].role == "user"
    assert "**ramen**" in hits[0].snippet
    assert all("secret" not in h.snippet for h in hits)
    assert [h.conversation_id for h in await store.search("bob", "ramen")] == [theirs.id]
    assert await store.search("mallory", "ramen") == []
    assert await store.search("ana", "ramen", limit=1) == hits[:1]
    assert (await store.search("ana", "ramen", mark=("<", ">")))[0].snippet.count("<ramen>") == 1


async def test_find_conversations_by_title_or_message(store):
    trip = await store.create_conversation("ana", title="Lisbon trip")
    food = await store.create_conversation("ana")
    other = await store.create_conversation("ana")
    await store.append("ana", food.id, "user", "Best pastel de nata in Lisbon?")
    await store.append("ana", other.id, "user", "Nothing to see here.")
    await store.append(
        "bob", (await store.create_conversation("bob", title="Lisbon")).id, "user", "Lisbon again"
    )
    found = await store.find_conversations("ana", "lisbon")
    assert [c.id for c in found] == [food.id, trip.id]  # newest activity first
    assert await store.find_conversations("ana", "!!!") == []
    assert await store.find_conversations("mallory", "lisbon") == []


async def test_search_cjk(store):
    conv = await store.create_conversation("mei")
    await store.append("mei", conv.id, "user", "我们在台北的鼎泰豐吃了小籠包。")
    hits = await store.search("mei", "小籠包")
    assert [h.turn_id for h in hits] and "**小籠**" in hits[0].snippet


HOSTILE = [
    '"',
    '""',
    "*",
    "NEAR(",
    "NEAR(a b, 3)",
    "OR",
    "AND NOT",
    "a OR",
    '"unterminated phrase',
    "body: secret",
    "owner_key : x",
    "^start",
    "(((",
    "{body conversation_key}: x",
    "'; DROP TABLE turns; --",
    "!!!???...",
    "🙂🙂🙂",
    "",
    "   ",
    "ramen" * 5000,
    "word " * 3000,
    "\x00",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_queries_never_raise(store, query):
    conv = await store.create_conversation("ana")
    await chat(store, "ana", conv.id, [("NEAR the OR station, body: ramen", "ok")])
    hits = await store.search("ana", query)
    ctx = await store.context("ana", conv.id, query=query)
    assert ctx.turns and isinstance(hits, list)
    if not any(ch.isalnum() for ch in query):
        assert hits == []  # punctuation only: nothing, not an error
    assert rows(store, "SELECT count(*) FROM turns") == [(2,)]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Hello, World!", ['"hello"', '"world"']),
        ("What was the name of that restaurant?", ['"restaurant"']),
        ('say "hi" NEAR(x) OR *', ['"hi"', '"near"']),
        ("拉面店", ['"拉面"', '"面店"']),
        ("Kyoto 拉面", ['"kyoto"', '"拉面"']),
        ("!!! ??? ...", None),
        ("the of and", None),
    ],
)
def test_fts_query_quotes_every_term(text, expected):
    q = fts_query(text)
    assert (q.split(" OR ") if q else None) == expected


def test_query_is_bounded_and_bigrams_cover_cjk():
    assert len(query_terms(" ".join(f"w{i}" for i in range(1000)))) == 32
    assert bigram_text("我去京都") == " 我去 去京 京都 "
    assert bigram_text("Kyoto") == "Kyoto"


# -- the index follows every removal -----------------------------------------------------


async def test_reset_delete_undo_and_purge_remove_indexed_text(memory_backend):
    clock = FakeClock()
    store = await memory_backend.open(
        clock=clock,
        policy=MemoryPolicy(
            keep_recent=2,
            summarize_at=4,
            summary_chars=400,
            recall_chars=400,
            message_chars=400,
            history_chars=2000,
        ),
    )
    # SQLite keeps separate FTS5 indexes to check; PostgreSQL's search text is in the row.
    fts5 = isinstance(store, ConversationStore)
    try:
        a = await store.create_conversation("ana")
        await chat(store, "ana", a.id, [("zebra one", "ok"), ("zebra two", "ok")])
        assert await store.summarize_if_needed("ana", a.id)  # the summary is indexed too
        assert not fts5 or fts_rows(store.path, a.id) == 5
        assert not fts5 or recall_docs(store.path) == 5
        assert await store.search("ana", "zebra")
        await store.reset("ana", a.id)
        assert await store.search("ana", "zebra") == []
        assert (await store.context("ana", a.id, query="zebra")).recalled == []
        assert not fts5 or fts_rows(store.path, a.id) == 0
        assert not fts5 or recall_docs(store.path) == 0

        b = await store.create_conversation("ana")
        await chat(store, "ana", b.id, [("yak one", "ok"), ("yak two", "ok")])
        await store.undo("ana", b.id)
        assert [h.snippet for h in await store.search("ana", "yak")] == ["**yak** one"]
        assert not fts5 or recall_docs(store.path) == 2
        await store.append("ana", b.id, "user", "yak two")
        await store.append("ana", b.id, "assistant", "yak reply")
        assert await store.drop_last_reply("ana", b.id)
        assert not fts5 or recall_docs(store.path) == 3
        await store.delete_conversation("ana", b.id)
        assert await store.search("ana", "yak") == []

        c = await store.create_conversation("ana", retention_minutes=1)
        await chat(store, "ana", c.id, [("okapi", "ok")])
        clock.now += 3600
        assert await store.search("ana", "okapi") == []  # expired: invisible at once
        assert await store.purge_expired() == 1
        assert not fts5 or fts_rows(store.path) == 0  # and purged from the index
        assert not fts5 or recall_docs(store.path) == 0
    finally:
        await store.close()


async def test_migration_adds_and_backfills_the_index(tmp_path):
    # A database from before the index: only m001..m003 applied.
    path = tmp_path / "mnemo.db"
    async with aiosqlite.connect(path) as db:
        await db.execute("CREATE TABLE _mnemo_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        for fn in migrations.MIGRATIONS[:3]:
            await fn(db)
            await db.execute("INSERT INTO _mnemo_migrations VALUES (?, 0)", (fn.__name__,))
        await db.execute(
            "INSERT INTO conversations (id, owner, created_at, last_active_at, message_count, "
            "active_count, chars) VALUES ('c1', 'ana', 0, 0, 2, 2, 40)"
        )
        await db.executemany(
            "INSERT INTO turns (conversation_id, role, content, created_at) VALUES (?, ?, ?, 0)",
            [("c1", "user", "My passport is in the left drawer."), ("c1", "assistant", "Noted.")],
        )
        await db.commit()

    store = await ConversationStore.open(tmp_path)
    try:
        hits = await store.search("ana", "where is my passport")
        assert [h.snippet for h in hits] == ["My **passport** is in the left drawer."]
        assert fts_rows(store.path) == 2
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute("SELECT name FROM _mnemo_migrations ORDER BY rowid")]
    assert names[3:5] == ["m004_turns_fts", "m005_recall_fts"]


async def test_migration_backfills_the_recall_index(tmp_path):
    # A database from before recall_fts: m001..m004 applied, a conversation long enough
    # that its first turn is outside the recent window.
    path = tmp_path / "mnemo.db"
    async with aiosqlite.connect(path) as db:
        await db.execute("CREATE TABLE _mnemo_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        for fn in migrations.MIGRATIONS[:3]:
            await fn(db)
            await db.execute("INSERT INTO _mnemo_migrations VALUES (?, 0)", (fn.__name__,))
        await db.execute(
            "INSERT INTO conversations (id, owner, created_at, last_active_at, message_count, "
            "active_count, chars) VALUES ('c1', 'ana', 0, 0, 40, 40, 800)"
        )
        await db.executemany(
            "INSERT INTO turns (conversation_id, role, content, created_at) VALUES (?, ?, ?, 0)",
            [("c1", "user", "My passport is in the left drawer."), ("c1", "assistant", "Noted.")]
            + [("c1", ("user", "assistant")[i % 2], FILLER[i % 6]) for i in range(38)],
        )
        await migrations.m004_turns_fts(db)
        await db.execute("INSERT INTO _mnemo_migrations VALUES ('m004_turns_fts', 0)")
        await db.commit()

    store = await ConversationStore.open(tmp_path)
    try:
        assert recall_docs(store.path) == 40
        ctx = await store.context("ana", "c1", query="where did I put my passport?")
        assert [r.turn.content for r in ctx.recalled if r.neighbour_of is None] == [
            "My passport is in the left drawer."
        ]
        await store.reset("ana", "c1")  # the trigger deletes exactly what the backfill wrote
        assert recall_docs(store.path) == 0
    finally:
        await store.close()


def test_recall_text_is_stable():
    # recall_fts is contentless: deleting a turn re-derives the indexed text with
    # recall_text, so it must stay exactly what was indexed. Changing it needs a migration
    # that rebuilds recall_fts.
    key = recall_key("conversation-1")
    assert key == "1250189476" and len(key) == recall.RECALL_KEY_CHARS
    assert recall_text("conversation-1", "The Café in 京都: cats, I say, 拉面店!") == (
        "1250189476café 1250189476京都 1250189476cats 1250189476拉面 1250189476面店"
    )


# -- recall stays correct on a larger database ------------------------------------------


async def test_recall_in_a_larger_database_stays_within_the_conversation(tmp_path):
    # 300 conversations of 60 bench messages; then the same kind of fact, with a different
    # answer, planted early in 20 of them. Each must recall its own, never another's.
    corpus = Corpus(300, 60)
    ids = await bulk_load(tmp_path, 300, corpus.rows(message_pool()), start_ts=corpus.start_ts)
    store = await ConversationStore.open(tmp_path)
    try:
        planted = {}
        for k in range(20):
            owner, conv_id = owner_of(k), ids[k]
            turn = await store.append(
                owner, conv_id, "user", f"The gym locker code is zq{k}x, behind the sauna."
            )
            planted[conv_id] = turn.id
            await store.append(owner, conv_id, "assistant", "Noted, I will keep it in mind.")
            for message in message_pool(seed=k, size=30):
                await store.append(owner, conv_id, "user", message)
        for k in range(20):
            ctx = await store.context(owner_of(k), ids[k], query="what's my gym locker code?")
            assert all(r.turn.conversation_id == ids[k] for r in ctx.recalled)
            hits = {r.turn.id: r for r in ctx.recalled if r.neighbour_of is None}
            assert planted[ids[k]] in hits
            assert set(hits[planted[ids[k]]].matched) == {"gym", "locker", "code"}
            assert f"zq{k}x" in render_memory(ctx)
        ctx = await store.context(owner_of(25), ids[25], query="what's my gym locker code?")
        assert "locker code is" not in render_memory(ctx)  # planted elsewhere only
    finally:
        await store.close()


async def test_recall_keys_that_collide_never_leak(tmp_path, monkeypatch):
    monkeypatch.setattr(recall, "recall_key", lambda conv_id: "samekey")
    policy = MemoryPolicy(keep_recent=2, summarize_at=10)
    store = await ConversationStore.open(tmp_path, policy=policy)
    try:
        a = await store.create_conversation("ana")
        b = await store.create_conversation("ana")
        await chat(store, "ana", a.id, [("The wifi password is walrus.", "ok"), ("hi", "ok")])
        await chat(store, "ana", b.id, [("The wifi password is pelican.", "ok"), ("hi", "ok")])
        ctx = await store.context("ana", b.id, query="wifi password?")
        assert [r.turn.content for r in ctx.recalled if r.neighbour_of is None] == [
            "The wifi password is pelican."
        ]
        await store.delete_conversation("ana", a.id)
        assert recall_docs(store.path) == 4
    finally:
        await store.close()


async def test_recall_reads_at_most_max_recall_terms(store):
    conv = await store.create_conversation("ana")
    await chat(store, "ana", conv.id, [("zeta9 marks the spot", "ok")] + [("hi", "ok")] * 12)
    words = [f"w{i}" for i in range(recall.MAX_RECALL_TERMS)]
    ctx = await store.context("ana", conv.id, query=" ".join([*words, "zeta9"]))
    assert ctx.recalled == []  # the 17th term is not looked for
    ctx = await store.context("ana", conv.id, query=" ".join(["zeta9", *words]))
    assert [r.matched for r in ctx.recalled if r.neighbour_of is None] == [("zeta9",)]


@pytest.mark.parametrize("seed", range(12))
async def test_context_invariants_hold_for_random_conversations(memory_backend, seed):

    rng = random.Random(seed)
    policy = MemoryPolicy(
        keep_recent=rng.randint(2, 8),
        summarize_at=rng.randint(10, 20),
        message_chars=rng.choice([200, 500]),
        summary_chars=rng.choice([200, 600]),
        recall_k=rng.randint(0, 4),
        recall_chars=rng.choice([0, 300, 900]),
        history_chars=2500,
    )
    words = ["ramen", "kyoto", "train", "ticket", "umbrella", "rain", "拉面", "京都", "wedding"]
    store = await memory_backend.open(policy=policy)
    try:
        conv = await store.create_conversation("ana")
        for _ in range(rng.randint(5, 60)):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 400)))
            await store.append("ana", conv.id, rng.choice(["user", "assistant"]), text)
            await store.summarize_if_needed("ana", conv.id)
        query = " ".join(rng.choice(words) for _ in range(3))
        ctx = await store.context("ana", conv.id, query=query)
        recent = [t.id for t in ctx.turns]
        recalled = [r.turn.id for r in ctx.recalled]
        assert ctx.chars <= ctx.budget
        assert ctx.chars == (
            (len(ctx.summary.content) if ctx.summary else 0)
            + sum(len(r.turn.content) for r in ctx.recalled)
            + sum(len(t.content) for t in ctx.turns)
        )
        assert not ctx.turns or ctx.turns[0].role == "user"
        assert recent == sorted(recent) and recalled == sorted(recalled)
        assert not set(recent) & set(recalled) and len(set(recalled)) == len(recalled)
        assert sum(len(r.turn.content) for r in ctx.recalled) <= policy.recall_chars
        assert len([r for r in ctx.recalled if r.neighbour_of is None]) <= policy.recall_k
        assert all(r.turn.id < min(recent, default=1 << 62) for r in ctx.recalled)
        st = await store.status("ana", conv.id)
        assert st.total == st.active + st.compacted and st.summary_covers == st.compacted
    finally:
        await store.close()


@pytest.mark.parametrize(
    "text,characters",
    [
        ("高", ["高"]),
        ("高雄", []),
        ("高 雄 高", ["高", "雄"]),
        ("去 高雄 吃", ["去", "吃"]),
        ("ramen", []),
    ],
)
def test_lone_cjk_characters(text, characters):
    assert recall.lone_cjk(text) == characters


async def test_search_finds_a_single_cjk_character_anywhere_in_a_run(store):
    conv = await store.create_conversation("ana")
    first = await store.append("ana", conv.id, "user", "我們去高雄")
    second = await store.append("ana", conv.id, "assistant", "好，明天見")
    other = await store.create_conversation("bob")
    await store.append("bob", other.id, "user", "高雄很熱")
    assert [h.turn_id for h in await store.search("ana", "高")] == [first.id]
    assert [h.turn_id for h in await store.search("ana", "雄", mark=("[", "]"))] == [first.id]
    assert (await store.search("ana", "雄", mark=("[", "]")))[0].snippet == "我們去高[雄]"
    assert [h.turn_id for h in await store.search("ana", "見 高")] == [second.id, first.id]
    assert await store.search("ana", "熱") == []  # bob's
