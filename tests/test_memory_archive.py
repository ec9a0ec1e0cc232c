"""Export, import (same context for the next message, timestamps kept, bad files refused
saving nothing) and deleting all of an owner's data: the memory contract, on both backends
(SQLite in a tmp dir, PostgreSQL; tests/memory_backends.py)."""

from __future__ import annotations

import json

import pytest
from memory_backends import rows

from memory import ArchiveRefused, TurnMetrics, render_memory
from memory.archive import MAX_ARCHIVE_BYTES


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        self.now += 1.0
        return self.now


@pytest.fixture
async def store(memory_backend):
    return await memory_backend.open(clock=Clock())


async def rich_conversation(store, owner="ana"):
    """Summarized, a user-edited summary, recallable old turns, a tool note, a roundtable
    reply with its speaker and a veto line, replies that ended otherwise (with their
    outcomes), a pin."""
    conv = await store.create_conversation(owner, persona_id="finance")
    await store.append(owner, conv.id, "user", "The Kestrel invoice is due on 3 May.")
    for i in range(1, 101):
        await store.append(owner, conv.id, "assistant" if i % 2 else "user", f"message {i}")
    assert await store.summarize_if_needed(owner, conv.id)
    await store.write_summary(owner, conv.id, "Kestrel owes 12,400 EUR.")
    await store.append(owner, conv.id, "user", 'search_memory(query="Kestrel") → ok', origin="tool")
    await store.append(owner, conv.id, "assistant", "Found it.", incomplete=True)
    veto = '{"code":null,"text":"","veto":{"code":"veto_member","params":{},"text":"⛔ VETO"}}'
    await store.append(  # a normal reply with a line the chat wrote on it (no outcome)
        owner, conv.id, "assistant", "Margin holds.", speaker="finance", outcome_note=veto
    )
    await store.append(
        owner, conv.id, "assistant", "The marg", outcome="stopped", outcome_note="Stopped"
    )
    question = await store.append(owner, conv.id, "user", "And the Q3 figure?")
    await store.set_outcome(owner, conv.id, question.id, "failed", "The model is unavailable.")
    await store.pin(owner, conv.id, "Gross-margin red line is 15%")
    return conv


def rows_of(context):
    """What the model receives, without ids (which are this database's)."""
    return (
        render_memory(context),
        context.messages(),
        [(r.turn.role, r.turn.content) for r in context.recalled],
        context.chars,
    )


async def test_export_then_import_gives_the_same_context_and_keeps_timestamps(store):
    conv = await rich_conversation(store)
    await store.pin("ana", None, "I live in Porto")
    await store.set_about_me("ana", True)
    doc = await store.export("ana")
    raw = json.dumps(doc)

    (copy,) = await store.import_archive("bob", raw)
    await store.set_about_me("bob", True)
    assert copy.id != conv.id and copy.owner == "bob" and copy.persona_id == "finance"
    for query in (None, "when is the Kestrel invoice due"):
        mine = await store.context("ana", conv.id, query=query)
        theirs = await store.context("bob", copy.id, query=query)
        assert rows_of(theirs) == rows_of(mine)
    assert "Kestrel invoice" in str(rows_of(mine))  # recall really brought it back
    original = await store.transcript("ana", conv.id)
    imported = await store.transcript("bob", copy.id)
    keep = ("role", "content", "created_at", "compacted", "incomplete", "origin", "speaker")
    keep += ("covers_count", "outcome", "outcome_note", "is_summary", "edited", "is_tool_note")
    assert [[getattr(t, k) for k in keep] for t in imported] == [
        [getattr(t, k) for k in keep] for t in original
    ]
    source = await store.get_conversation("ana", conv.id)
    assert (copy.created_at, copy.message_count, copy.active_count, copy.chars) == (
        source.created_at,
        source.message_count,
        source.active_count,
        source.chars,
    )
    assert (await store.status("bob", copy.id)).summaries == (
        await store.status("ana", conv.id)
    ).summaries
    assert [p.content for p in await store.about_me("bob")] == ["I live in Porto"]
    assert await store.search("bob", "Kestrel")  # indexed like any turn
    assert {t.outcome for t in imported} == {None, "stopped", "failed"}

    # Summaries cover the same messages, by position (ids are each database's own).
    def covered(turns):
        ids = [t.id for t in turns]
        return [
            (ids.index(t.covers_from_id), ids.index(t.covers_to_id)) for t in turns if t.is_summary
        ]

    assert covered(imported) == covered(original)


async def test_exporting_one_conversation_leaves_about_me_out(store):
    conv = await rich_conversation(store)
    await store.pin("ana", None, "I live in Porto")
    doc = await store.export("ana", [conv.id])
    assert len(doc["conversations"]) == 1 and doc["about_me"] == []
    assert doc["conversations"][0]["pinned"][0]["content"] == "Gross-margin red line is 15%"


def valid_doc():
    return {
        "format": "mnemo-export",
        "version": 1,
        "conversations": [
            {
                "title": "Hi",
                "persona": {"id": "assistant", "version": None},
                "created_at": 10,
                "turns": [
                    {"role": "user", "content": "hello", "created_at": 11},
                    {"role": "assistant", "content": "hi", "created_at": 12},
                ],
                "pinned": [],
            }
        ],
    }


def edited(change):
    doc = valid_doc()
    change(doc)
    return json.dumps(doc)


def _set(path, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


SUMMARY_PAST_THE_END = {
    "role": "summary",
    "content": "s",
    "created_at": 1,
    "covers": {"from": 0, "to": 7, "count": 2},
}
BAD_FILES = [
    ("{not json", r"not valid JSON \(line 1, column 2\)"),
    ("[]", "the document is not an object"),
    (edited(_set(["format"], "other")), "is not a mnemo-export version 1 file"),
    (edited(_set(["surprise"], 1)), "unknown field 'surprise'"),
    (edited(_set(["conversations", 0, "turns", 0, "role"], "bot")), r"turns\[0\].role is 'bot'"),
    (edited(_set(["conversations", 0, "turns", 1, "content"], "")), r"turns\[1\].content"),
    (edited(_set(["conversations", 0, "turns", 1, "content"], "x" * 10_001)), "limit is 10,000"),
    (edited(_set(["conversations", 0, "turns", 0, "created_at"], "soon")), "not a timestamp"),
    (edited(_set(["conversations", 0, "turns", 0, "origin"], "edited")), "user message cannot"),
    (edited(_set(["conversations", 0, "turns", 0, "speaker"], "finance")), "only a reply names"),
    (edited(_set(["conversations", 0, "turns", 1, "speaker"], "")), "not a persona id"),
    (
        edited(lambda doc: doc["conversations"][0]["turns"].append(SUMMARY_PAST_THE_END)),
        r"covers.to is not the position of an earlier message",
    ),
    (
        edited(lambda doc: doc["conversations"][0]["turns"].insert(0, SUMMARY_PAST_THE_END)),
        "summary before any message",
    ),
    (edited(_set(["conversations", 0, "pinned"], [{"content": " ", "created_at": 1}])), "empty"),
    (edited(_set(["conversations", 0, "retention_minutes"], -5)), "retention_minutes"),
    (edited(_set(["conversations", 0, "title"], "t" * 101)), r"title is refused"),
]


@pytest.mark.parametrize("raw,error", BAD_FILES)
async def test_a_bad_file_is_refused_saying_where_and_nothing_is_saved(store, raw, error):
    with pytest.raises(ArchiveRefused, match=error):
        await store.import_archive("ana", raw)
    assert await store.list_conversations("ana") == []


async def test_a_problem_late_in_the_file_saves_nothing_either(store):
    doc = valid_doc()
    doc["conversations"] = [valid_doc()["conversations"][0] for _ in range(3)]
    doc["conversations"][2]["pinned"] = [{"content": "p" * 400, "created_at": 1}] * 6  # > budget
    with pytest.raises(ArchiveRefused, match=r"conversations\[2\].pinned\[5\].*memory budget"):
        await store.import_archive("ana", json.dumps(doc))
    assert await store.list_conversations("ana") == []


async def test_an_oversized_file_is_refused_before_parsing(store):
    raw = b" " * (MAX_ARCHIVE_BYTES + 1)
    with pytest.raises(ArchiveRefused, match="at most 20 MB"):
        await store.import_archive("ana", raw)


async def test_delete_all_my_data_removes_everything_of_that_owner_only(store, memory_backend):
    await rich_conversation(store, "ana")
    await rich_conversation(store, "ana")
    kept = await rich_conversation(store, "bob")
    await store.pin("ana", None, "about ana")
    await store.set_about_me("ana", True)
    await store.record_metrics("ana", None, TurnMetrics(model="m"))
    assert await store.delete_owner("ana") == 2
    assert await store.list_conversations("ana") == []
    assert await store.about_me("ana") == [] and not (await store.settings("ana")).about_me
    assert await store.search("ana", "Kestrel") == []
    # What is left in the tables is bob's: turns, their search index (SQLite's FTS5 table;
    # PostgreSQL's lives in the turns' rows), pins and settings.
    index = "turns_fts" if memory_backend.name == "sqlite" else "turns"
    (left,) = rows(
        store,
        "SELECT (SELECT count(*) FROM pinned_facts WHERE owner = 'ana'), "
        f"(SELECT count(*) FROM {index}), (SELECT count(*) FROM turns), "
        "(SELECT count(*) FROM owner_settings WHERE owner = 'ana')",
    )
    bob_turns = len(await store.transcript("bob", kept.id))
    assert left == (0, bob_turns, bob_turns, 0)
    assert await store.count_turn_requests("ana", since=0) == 1  # the quota is not reset
    assert len(await store.list_conversations("bob")) == 1
