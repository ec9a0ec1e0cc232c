"""assistant.failopen: when storage fails the chat still answers, and says memory is degraded."""

from __future__ import annotations

import inspect
import sqlite3

import pytest

from assistant.failopen import FALLBACKS, FailOpenStore
from memory import (
    ConversationEdit,
    ConversationNotFound,
    ConversationStore,
    EmptyMessage,
    MessageTooLong,
    OwnerSettings,
    StorageUnavailable,
    TurnMetrics,
)


class Monotonic:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def write_garbage(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database, just bytes\n" * 500)


async def test_garbage_file_refuses_to_open_with_a_clear_error(tmp_path):
    write_garbage(tmp_path / "mnemo.db")
    with pytest.raises(StorageUnavailable, match="move the file aside") as err:
        await ConversationStore.open(tmp_path)
    assert str(tmp_path / "mnemo.db") in str(err.value)


async def test_garbage_file_fails_open_and_recovers(tmp_path):
    write_garbage(tmp_path / "mnemo.db")
    mono = Monotonic()
    store = FailOpenStore(lambda: ConversationStore.open(tmp_path), monotonic=mono)

    conv = await store.create_conversation("ana")  # an unsaved conversation to chat in
    assert conv.id.startswith("unsaved-")
    ctx = await store.context("ana", conv.id, query="hello")
    assert ctx.degraded and ctx.turns == [] and ctx.summary is None
    turn = await store.append("ana", conv.id, "user", "hello")
    assert not turn.saved and turn.id is None and turn.content == "hello"
    assert (await store.status("ana", conv.id)).degraded
    assert (await store.context("ana", "some-real-looking-id")).degraded
    assert not (await store.append("ana", "some-real-looking-id", "user", "hi")).saved
    assert await store.list_conversations("ana") == []
    assert await store.transcript("ana", conv.id) == []
    assert await store.search("ana", "hello") == []
    assert await store.purge_expired() == 0
    assert not await store.summarize_if_needed("ana", conv.id)
    await store.record_metrics("ana", conv.id, TurnMetrics(model="m"))  # logged, not raised
    # The memory panel shows nothing rather than an error; a tool note degrades like a turn.
    assert await store.pinned("ana", "some-real-looking-id") == []
    assert await store.about_me("ana") == []
    assert await store.settings("ana") == OwnerSettings()
    assert await store.conversation_metrics("ana", conv.id) == []
    note = await store.append("ana", conv.id, "user", "Tool note: today() → ok", origin="tool")
    assert not note.saved and note.is_tool_note
    assert store.degraded

    # Validation errors still raise; the quota fails closed.
    with pytest.raises(MessageTooLong):
        await store.append("ana", conv.id, "user", "x" * 10_001)
    with pytest.raises(EmptyMessage):
        await store.append("ana", conv.id, "user", "  ")
    with pytest.raises(StorageUnavailable):
        await store.count_turn_requests("ana", since=0)
    with pytest.raises(StorageUnavailable):
        await store.reset("ana", "some-real-looking-id")

    # Someone moves the garbage aside: after the back-off the store opens and works.
    (tmp_path / "mnemo.db").rename(tmp_path / "mnemo.db.broken")
    assert (await store.context("ana", "x")).degraded  # still backing off
    mono.now += 60
    conv = await store.create_conversation("ana")
    assert not conv.id.startswith("unsaved-")
    assert (await store.append("ana", conv.id, "user", "saved now")).saved
    assert [h.turn_id for h in await store.search("ana", "saved")]
    assert not (await store.status("ana", conv.id)).degraded
    await store.close()


# Verbs outside FALLBACKS: the user asked for a change that cannot be made, or (the quota) a
# check that must fail closed. With storage down each raises instead of pretending.
FAILS_CLOSED = {
    "count_turn_requests": ("ana", 0.0),
    "get_conversation": ("ana", "c"),
    "rename_conversation": ("ana", "c", "New name"),
    "set_persona": ("ana", "c", "finance"),
    "set_retention": ("ana", "c", 30),
    "update_conversation": ("ana", "c", ConversationEdit(title="New name")),
    "delete_conversation": ("ana", "c"),
    "reset": ("ana", "c"),
    "undo": ("ana", "c"),
    "drop_last_reply": ("ana", "c"),
    # API tokens: a token that cannot be checked must let nobody in.
    "add_token": ("ana", "my bot", "0" * 64, "abcd"),
    "list_tokens": ("ana",),
    "revoke_token": ("ana", "tok_x"),
    "token_by_hash": ("0" * 64,),
    # An import that cannot be stored must say so, not pretend.
    "import_conversation": ("ana", [("user", "hi", 1.0)]),
    # The memory panel's changes: the user asked for them, so they say they did not happen.
    "pin": ("ana", "c", "I'm vegetarian"),
    "unpin": ("ana", 1),
    "set_about_me": ("ana", True),
    "set_time_zone": ("ana", "Europe/Lisbon"),
    "write_summary": ("ana", "c", "edited"),
    "export": ("ana",),
    "import_archive": ("ana", "{}"),
    "delete_owner": ("ana",),
    # A streaming reply's rewrite: the chat turn catches it (the reply stays on screen, the
    # final save reports saved=False); never a silent success.
    "update_reply": ("ana", "c", 1, "partial reply"),
    # Waiting for the background vectors (tests, bench): no store, nothing to say it waited for.
    "flush_vectors": (),
}
# Verbs FailOpenStore answers itself, never failing: a head start that reads and writes nothing.
NEVER_FAIL = {"expect"}


@pytest.mark.parametrize("verb", sorted(FAILS_CLOSED))
async def test_verbs_outside_the_table_raise_when_storage_is_down(tmp_path, verb):
    write_garbage(tmp_path / "mnemo.db")
    store = await FailOpenStore.open(tmp_path)
    assert verb not in FALLBACKS
    with pytest.raises(StorageUnavailable, match="move the file aside"):
        await getattr(store, verb)(*FAILS_CLOSED[verb])


def test_the_table_names_real_store_verbs():
    store_verbs = {v for v in dir(ConversationStore) if not v.startswith("_")}
    assert set(FALLBACKS) <= store_verbs
    # Every other public async verb is in FAILS_CLOSED, so a new verb gets a conscious choice.
    async_verbs = {
        v
        for v in store_verbs
        if v not in ("open", "close")
        and callable(getattr(ConversationStore, v))
        and inspect.iscoroutinefunction(getattr(ConversationStore, v))
    }
    assert async_verbs - set(FALLBACKS) - NEVER_FAIL == set(FAILS_CLOSED)


async def test_a_head_start_while_storage_is_down_does_nothing_and_degrades_nothing(tmp_path):
    write_garbage(tmp_path / "mnemo.db")
    store = await FailOpenStore.open(tmp_path)
    failing = set(store._failing)
    assert await store.expect("ana", "c", "hello") is None
    assert store._failing == failing


async def test_only_store_verbs_are_forwarded(tmp_path):
    store = FailOpenStore(await ConversationStore.open(tmp_path))
    with pytest.raises(AttributeError, match="no verb"):
        store.not_a_verb  # noqa: B018
    with pytest.raises(AttributeError):
        store._write  # noqa: B018  (private helpers stay private)
    await store.close()


async def test_fail_open_classmethod_never_raises(tmp_path):
    write_garbage(tmp_path / "mnemo.db")
    store = await FailOpenStore.open(tmp_path)
    assert store.store is None and store.degraded
    assert (await store.context("ana", "x")).degraded
    await store.close()


def _read_only(store):
    # Running as root ignores file permissions, so make SQLite itself refuse writes: the
    # same SQLITE_READONLY error a read-only file or mount produces.
    return "PRAGMA query_only = ON", "PRAGMA query_only = OFF"


def _disk_full(store):
    pages = sqlite3.connect(store.path).execute("PRAGMA page_count").fetchone()[0]
    return f"PRAGMA max_page_count = {pages}", "PRAGMA max_page_count = 1073741823"


BREAKERS = {"read-only": _read_only, "disk-full": _disk_full}


@pytest.mark.parametrize("breaker", [*BREAKERS, "locked"])
async def test_storage_failure_keeps_the_chat_answering(tmp_path, breaker):
    inner = await ConversationStore.open(tmp_path)
    store = FailOpenStore(inner)
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "My name is Ana.")
    await store.append("ana", conv.id, "assistant", "Hello Ana!")

    other = None
    if breaker == "locked":
        await inner._db.writer.execute("PRAGMA busy_timeout = 50")
        other = sqlite3.connect(inner.path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    else:
        brk, fix = BREAKERS[breaker](inner)
        await inner._db.writer.execute(brk)

    if breaker == "disk-full":
        big = "x" * 9_000  # needs new pages
        turn = await store.append("ana", conv.id, "user", big)
    else:
        turn = await store.append("ana", conv.id, "user", "What is my name?")
    assert not turn.saved
    # Reads still work: the model sees the history it had, the badge says degraded.
    ctx = await store.context("ana", conv.id)
    assert [t.content for t in ctx.turns] == ["My name is Ana.", "Hello Ana!"]
    assert (await store.status("ana", conv.id)).degraded
    with pytest.raises(ConversationNotFound):  # not a storage error: still raised
        await store.context("bob", conv.id)

    if other is not None:
        other.execute("ROLLBACK")
        other.close()
    else:
        await inner._db.writer.execute(fix)
    assert (await store.append("ana", conv.id, "user", "back again")).saved
    assert not (await store.status("ana", conv.id)).degraded
    await store.close()
