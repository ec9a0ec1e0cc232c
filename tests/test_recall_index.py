"""Recall's per-conversation index does not depend on the conversation id (issue 11, bug 1a),
and the migration that fixed it rebuilds an old index on first open."""

from __future__ import annotations

import logging
import random
import secrets
import sqlite3

import aiosqlite

from memory import ConversationStore, migrations
from memory.recall import recall_text

# Words whose Porter stem changed with a letter key in front ("events" -> "ev", "hiking" ->
# "hik", "sing" -> "s"), and a spread of ordinary ones.
WORDS_TEXT = """
events hiking sing singing city closed code create dated denver dinner answer bring call fall
feed yesterday yellow young yoga rating running tournaments tourney bicycle neighbor flies
happily agreed generous relational conditional hopeful national
"""
WORDS = WORDS_TEXT.split()

FACTS = [
    ("I signed up for two hiking events in Denver next spring.", "Great, enjoy the trails!"),
    ("My sister loves singing in the city choir.", "That sounds like fun."),
    ("The yoga studio closed, so I go running by the river.", "Running is a good swap."),
    ("We rated the tournaments: the tourney in May was the best.", "Noted."),
]
FILLER = [
    ("What should we plan for dinner this week?", "Maybe soup or a salad."),
    ("Rain all week, apparently.", "Take an umbrella then."),
]
QUESTIONS = [
    "Which hiking event did I sign up for?",
    "Who sings in a choir?",
    "Why did I stop doing yoga?",
    "Which tournament was the best?",
]


def stems_under(key_ids: list[str]) -> dict[str, set[str]]:
    """For each word, the set of index terms (key stripped) it became under each id."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'row')")
    out: dict[str, set[str]] = {w: set() for w in WORDS}
    for conv_id in key_ids:
        for word in WORDS:
            db.execute("DELETE FROM f")
            text = recall_text(conv_id, word)
            key = text[: len(text) - len(word)]
            db.execute("INSERT INTO f (rowid, body) VALUES (1, ?)", (text,))
            (term,) = db.execute("SELECT term FROM v").fetchone()
            assert term.startswith(key)
            out[word].add(term[len(key) :])
    return out


def test_every_conversation_key_stems_a_word_the_same_way():
    rng = random.Random(11)
    ids = [secrets.token_urlsafe(16) for _ in range(150)] + [
        "".join(rng.choice("aeiouy") for _ in range(12)) for _ in range(20)
    ]
    stems = stems_under(ids)
    assert {w: s for w, s in stems.items() if len(s) != 1} == {}
    assert stems["events"] == {"event"} and stems["hiking"] == {"hike"}


async def test_recall_results_do_not_depend_on_the_conversation_id(tmp_path):
    store = await ConversationStore.open(tmp_path)
    try:
        convs = []
        for _ in range(40):  # 40 random ids, the same conversation in each
            conv = await store.create_conversation("ana")
            convs.append(conv.id)
            for user, assistant in FACTS + FILLER * 15:  # the facts end up outside the window
                await store.append("ana", conv.id, "user", user)
                await store.append("ana", conv.id, "assistant", assistant)
        # Queried once all are written: bm25 counts documents across the whole index.
        results = []
        for conv_id in convs:
            per_question = []
            for question in QUESTIONS:
                ctx = await store.context("ana", conv_id, query=question)
                per_question.append(
                    [(r.turn.content, r.matched, round(r.score, 9)) for r in ctx.recalled]
                )
            results.append(per_question)
    finally:
        await store.close()
    assert all(r == results[0] for r in results)
    found = [{c for c, _, _ in hits} for hits in results[0]]
    for (fact, _), contents in zip(FACTS, found, strict=True):
        assert fact in contents


async def test_opening_an_old_database_rebuilds_the_recall_index(tmp_path, caplog):
    # A database as m005 left it: recall terms keyed with letters ("events" indexed as the
    # stem of "<letters>events"), which the new key cannot find or delete.
    path = tmp_path / "mnemo.db"
    async with aiosqlite.connect(path) as db:
        await db.execute("CREATE TABLE _mnemo_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        for fn in migrations.MIGRATIONS[:5]:
            await fn(db)
            await db.execute("INSERT INTO _mnemo_migrations VALUES (?, 0)", (fn.__name__,))
        await db.execute(
            "INSERT INTO conversations (id, owner, created_at, last_active_at, message_count, "
            "active_count, chars) VALUES ('c1', 'ana', 0, 0, 40, 40, 800)"
        )
        contents = [FACTS[0][0], FACTS[0][1]] + [FILLER[i // 2 % 2][i % 2] for i in range(38)]
        for i, content in enumerate(contents):
            cursor = await db.execute(
                "INSERT INTO turns (conversation_id, role, content, created_at) "
                "VALUES (?, ?, ?, 0)",
                ("c1", ("user", "assistant")[i % 2], content),
            )
            old_text = " ".join("bqqv36z" + w.lower().strip(".,!?") for w in content.split())
            await db.execute(
                "INSERT INTO recall_fts (rowid, body) VALUES (?, ?)", (cursor.lastrowid, old_text)
            )
        await db.commit()

    with caplog.at_level(logging.INFO, logger="memory.migrations"):
        store = await ConversationStore.open(tmp_path)
    try:
        assert "Rebuilding the recall index over 40 messages" in caplog.text
        assert "Recall index rebuilt: 40 messages" in caplog.text
        ctx = await store.context("ana", "c1", query="which hiking events?")
        assert [r.turn.content for r in ctx.recalled if r.neighbour_of is None] == [FACTS[0][0]]
        await store.reset("ana", "c1")  # the delete trigger removes exactly what was rebuilt
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO recall_fts (recall_fts) VALUES ('integrity-check')")
        assert db.execute("SELECT count(*) FROM recall_fts_docsize").fetchone()[0] == 0
        names = [r[0] for r in db.execute("SELECT name FROM _mnemo_migrations ORDER BY rowid")]
    assert names[5] == "m006_recall_digit_keys"
