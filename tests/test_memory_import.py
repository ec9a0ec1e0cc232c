"""A conversation from elsewhere keeps its dates: import_conversation, append(created_at=),
and the dates the model then reads (issue 11, item 5)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from assistant.failopen import FailOpenStore
from memory import (
    ConversationStore,
    InvalidInput,
    MemoryPolicy,
    render_memory,
)
from memory.context import render_messages

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
DAY = 86_400.0


class Clock:
    def __call__(self) -> float:
        return NOW


def history(n_filler: int = 60) -> list[tuple[str, str, float]]:
    """A camping trip told "yesterday" on 10 October, then weeks of other talk."""
    start = datetime(2026, 10, 10, 9, tzinfo=UTC).timestamp()
    rows = [
        ("user", "I went camping at Lake Tahoe yesterday with my brother.", start),
        ("assistant", "How was the weather up there?", start + 60),
    ]
    for i in range(n_filler):
        when = start + DAY * (1 + i // 4) + i * 60
        rows.append(("user" if i % 2 == 0 else "assistant", f"Other talk, item {i}.", when))
    return rows


@pytest.fixture
async def store(tmp_path):
    s = await ConversationStore.open(tmp_path, clock=Clock(), policy=MemoryPolicy(keep_recent=10))
    yield s
    await s.close()


async def test_an_import_keeps_every_date_and_the_model_reads_them(store):
    rows = history()
    conv = await store.import_conversation("ana", rows)
    assert conv.message_count == len(rows) and conv.active_count == len(rows)
    assert conv.title == "I went camping at Lake Tahoe yesterday with my brother."
    assert conv.chars == sum(len(c) for _, c, _ in rows)
    stored = await store.transcript("ana", conv.id)
    assert [(t.role, t.content, t.created_at) for t in stored] == rows

    ctx = await store.context("ana", conv.id, query="When did I go camping?")
    note = render_memory(ctx)
    assert "Today is Tuesday, 1 December 2026." in note
    assert "[Saturday, 10 October 2026]\nUser: I went camping at Lake Tahoe yesterday " in note
    assert "yesterday [= Friday, 9 October 2026]" in note
    # What was typed is stored as typed.
    assert stored[0].content == rows[0][1]
    messages = render_messages(ctx)
    first_day = datetime.fromtimestamp(ctx.turns[0].created_at, UTC)
    assert messages[0]["content"].startswith(
        f"[{first_day:%A}, {first_day.day} {first_day:%B %Y}]\n"
    )


async def test_a_long_import_folds_into_summaries_like_any_conversation(store):
    conv = await store.import_conversation("ana", history(200))
    folds = 0
    while await store.summarize_if_needed("ana", conv.id):
        folds += 1
    status = await store.status("ana", conv.id)
    assert folds >= 1 and status.active <= store.policy.keep_recent


# Each bad list follows one good message, so the first bad one is message 2.
@pytest.mark.parametrize(
    "bad,message",
    [
        ([("user", "hi", NOW), ("robot", "beep", NOW)], "Message 3 of the import: Role is 'robot'"),
        ([("user", "   ", NOW)], "Message 2 of the import: The message is empty"),
        ([("user", "x" * 10_001, NOW)], "Message 2 of the import: Your message is 10,001"),
        ([("user", "b", NOW), ("user", "a", NOW - 5)], "Message 3 of the import is dated before"),
        ([("user", "later", NOW + 2 * DAY)], "Message 2 of the import: created_at is"),
        ([("user", "nan", math.nan)], "not between 1970 and now"),
        ([("user", "text", "yesterday")], "give seconds since 1970"),
        ([("user", "no date")], "Message 2 of the import is ('user', 'no date'); give (role,"),
    ],
)
async def test_a_bad_import_names_the_message_and_stores_nothing(store, bad, message):
    with pytest.raises(InvalidInput) as err:
        await store.import_conversation("ana", [("user", "fine", NOW - DAY), *bad])
    assert message in str(err.value)
    assert await store.list_conversations("ana") == []


async def test_append_with_created_at_dates_the_message(store):
    conv = await store.create_conversation("ana")
    when = NOW - 3 * DAY
    turn = await store.append("ana", conv.id, "user", "Hello from the past", created_at=when)
    assert turn.created_at == when
    assert (await store.transcript("ana", conv.id))[0].created_at == when
    assert (await store.get_conversation("ana", conv.id)).last_active_at == NOW
    for bad in (NOW + DAY, -1.0, math.inf, "monday", True):
        with pytest.raises(InvalidInput, match="created_at"):
            await store.append("ana", conv.id, "user", "x", created_at=bad)
    assert len(await store.transcript("ana", conv.id)) == 1


async def test_the_fail_open_store_passes_imports_and_dates_through(tmp_path):
    wrapper = await FailOpenStore.open(tmp_path, clock=Clock())
    try:
        conv = await wrapper.import_conversation("ana", history(2))
        turn = await wrapper.append("ana", conv.id, "user", "late", created_at=NOW - 10)
        assert turn.saved and turn.created_at == NOW - 10
    finally:
        await wrapper.close()


async def test_dates_follow_the_policy_timezone(tmp_path):
    late = datetime(2026, 11, 30, 23, 30, tzinfo=UTC).timestamp()  # already 1 Dec in Taipei
    policy = MemoryPolicy(keep_recent=2, timezone="Asia/Taipei")
    store = await ConversationStore.open(tmp_path, clock=Clock(), policy=policy)
    try:
        rows = [("user", "I moved to Tainan yesterday.", late), ("assistant", "Nice!", late + 1)]
        rows += [("user", f"filler {i}", late + 100 + i) for i in range(4)]
        conv = await store.import_conversation("ana", rows)
        note = render_memory(await store.context("ana", conv.id, query="moved to Tainan"))
        assert "[Tuesday, 1 December 2026]\nUser: I moved to Tainan yesterday " in note
        assert "yesterday [= Monday, 30 November 2026]" in note
    finally:
        await store.close()


def test_an_unknown_timezone_is_refused_with_an_example():
    with pytest.raises(ValueError, match="not an IANA zone"):
        MemoryPolicy(timezone="Mars/Olympus")
