"""FTS5 merges its b-trees in the background, never inside a commit (issue 15, item 13).

A commit that merged (automerge every 64 leaf pages, crisismerge at 16 b-trees a level) took
24-119 ms instead of a few. m012 turns both off for the commits; memory/connection.py merges
after them, a few pages a step. These tests look at the index itself (`%_idx` has a row per
leaf-page range of each b-tree, so its distinct segids are the b-trees), never at a clock."""

from __future__ import annotations

import contextlib
import random
import sqlite3

from memory import ConversationStore
from memory.connection import FTS_TABLES

WORDS = [
    "harbor",
    "lantern",
    "quartz",
    "meadow",
    "falcon",
    "juniper",
    "copper",
    "violet",
    "saffron",
    "glacier",
]


def segments(db: sqlite3.Connection, table: str) -> int:
    return db.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()[0]


def raw(store: ConversationStore) -> contextlib.closing[sqlite3.Connection]:
    return contextlib.closing(sqlite3.connect(store.path))


def integrity_check(db: sqlite3.Connection, table: str) -> None:
    """FTS5's own check; raises sqlite3.DatabaseError ("malformed") when the index is bad."""
    db.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")


async def test_the_indexes_are_set_to_merge_only_when_asked(tmp_path):
    async with await ConversationStore.open(tmp_path) as store:
        with raw(store) as db:
            for table in FTS_TABLES:
                options = dict(db.execute(f"SELECT k, v FROM {table}_config"))
                assert options["automerge"] == 0, table
                assert options["usermerge"] == 4, table
                assert options["crisismerge"] == 32, table


async def test_commits_add_a_b_tree_each_and_merge_none(tmp_path):
    """30 commits of ~6 leaf pages each: with FTS5's defaults, automerge (past 64 pages) and
    crisismerge (16 b-trees on level 0) would both have merged inside some of them."""
    rng = random.Random(3)
    async with await ConversationStore.open(tmp_path) as store:
        pass
    with raw(store) as db:
        before = {table: segments(db, table) for table in FTS_TABLES}
        for i in range(30):
            body = " ".join(f"w{rng.randrange(10**9)}" for _ in range(3_000))
            with db:  # one transaction: one new b-tree per index
                db.execute(
                    "INSERT INTO turns_fts (rowid, body, owner_key, conversation_key) "
                    "VALUES (?, ?, 'o', 'c')",
                    (10**9 + i, body),
                )
                db.execute("INSERT INTO recall_fts (rowid, body) VALUES (?, ?)", (10**9 + i, body))
        for table in FTS_TABLES:
            assert segments(db, table) == before[table] + 30, table
            assert db.execute(f"SELECT count(*) FROM {table}_data").fetchone()[0] > 30 * 6


async def test_background_merges_fold_the_b_trees_and_keep_search_and_recall(tmp_path):
    async with await ConversationStore.open(tmp_path) as store:
        conv = await store.create_conversation("ana")
        written: list[tuple[int, str]] = []
        for i in range(60):
            word = WORDS[i % len(WORDS)]
            role = "user" if i % 2 == 0 else "assistant"
            turn = await store.append("ana", conv.id, role, f"Note {i}: the {word} one.")
            written.append((turn.id, word))
        await store._db.merged()
        assert store._db.merge_steps > 0
        with raw(store) as db:
            for table in FTS_TABLES:
                # 60 commits made 60 b-trees per index; merged 4 at a time, a few are left.
                assert segments(db, table) < 12, table
                integrity_check(db, table)

        for word in WORDS:
            hits = await store.search("ana", word, limit=100)
            assert sorted(h.turn_id for h in hits) == [tid for tid, w in written if w == word]
        # Recall reads the other index: a word from the oldest turns, outside the recent 20.
        context = await store.context("ana", conv.id, query=f"What about the {WORDS[0]}?")
        recalled = {r.turn.id for r in context.recalled if r.matched}
        old = {tid for tid, w in written[:-20] if w == WORDS[0]}
        assert old and old <= recalled


async def test_closing_during_merges_leaves_a_sound_index(tmp_path):
    async with await ConversationStore.open(tmp_path) as store:
        conv = await store.create_conversation("ana")
        for i in range(40):
            await store.append("ana", conv.id, "user", f"Entry {i} about the {WORDS[i % 10]}.")
    # closed right after the last commit, whatever the background merge was doing
    async with await ConversationStore.open(tmp_path) as store:
        with raw(store) as db:
            for table in FTS_TABLES:
                integrity_check(db, table)
        hits = await store.search("ana", WORDS[3], limit=100)
        assert len(hits) == 4
        await store.append("ana", conv.id, "user", f"One more {WORDS[3]}.")
        await store._db.merged()
        assert len(await store.search("ana", WORDS[3], limit=100)) == 5
