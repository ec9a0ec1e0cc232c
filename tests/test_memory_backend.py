"""memory/backend.py: the MemoryBackend protocol matches both stores verb for verb, and
open_store() opens SQLite from a path or URL, PostgreSQL from a postgresql:// URL, and refuses,
clearly, what it cannot open."""

from __future__ import annotations

import inspect

import pytest

from memory import (
    ConversationStore,
    MemoryBackend,
    MemoryPolicy,
    StorageUnavailable,
    UnsupportedStore,
    open_store,
)
from memory.backend import sqlite_path
from memory.postgres import PostgresStore

STORES = [ConversationStore, PostgresStore]

VERBS = [
    name
    for name, member in inspect.getmembers(MemoryBackend)
    if inspect.isfunction(member) and not name.startswith("_")
]


@pytest.mark.parametrize("store_class", STORES)
def test_the_protocol_lists_every_public_verb_of_the_store(store_class):
    public = {
        name
        for name, member in inspect.getmembers(store_class)
        if inspect.isfunction(member) and not name.startswith("_") and name != "open"
    }
    assert set(VERBS) == public
    assert {"append", "context", "summarize_if_needed", "purge_expired"} <= public


@pytest.mark.parametrize("store_class", STORES)
@pytest.mark.parametrize("name", VERBS)
def test_the_store_matches_each_verbs_signature(store_class, name):
    declared = getattr(MemoryBackend, name)
    actual = getattr(store_class, name)
    assert inspect.iscoroutinefunction(declared) == inspect.iscoroutinefunction(actual)
    want = inspect.signature(declared).parameters
    have = inspect.signature(actual).parameters
    assert [(p.name, p.kind, p.default) for p in want.values()] == [
        (p.name, p.kind, p.default) for p in have.values()
    ]


@pytest.mark.parametrize(
    "make_target,expected",
    [
        (lambda tmp: tmp / "d", "d/mnemo.db"),
        (lambda tmp: str(tmp / "d"), "d/mnemo.db"),
        (lambda tmp: str(tmp / "chat.db"), "chat.db"),
        (lambda tmp: "sqlite:///" + str(tmp / "u.db"), "u.db"),  # absolute: sqlite:////...
        (lambda tmp: "SQLite:///" + str(tmp / "dir"), "dir/mnemo.db"),
        (lambda tmp: "sqlite:///" + str(tmp / "with%20space.db"), "with space.db"),
    ],
)
async def test_open_store_opens_sqlite(tmp_path, make_target, expected):
    store = await open_store(make_target(tmp_path), policy=MemoryPolicy(keep_recent=5))
    try:
        assert isinstance(store, ConversationStore) and isinstance(store, MemoryBackend)
        assert store.path == tmp_path / expected and store.path.exists()
        assert store.policy.keep_recent == 5  # keyword arguments reach the backend
        conv = await store.create_conversation("ana")
        await store.append("ana", conv.id, "user", "hello")
        assert (await store.get_conversation("ana", conv.id)).message_count == 1
    finally:
        await store.close()


async def test_a_relative_sqlite_url_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = await open_store("sqlite:///rel/m.db")
    try:
        assert store.path.resolve() == tmp_path / "rel" / "m.db"
    finally:
        await store.close()


def test_sqlite_path_follows_sqlalchemys_convention():
    assert str(sqlite_path("sqlite:///data/m.db")) == "data/m.db"
    assert str(sqlite_path("sqlite:////srv/m.db")) == "/srv/m.db"


@pytest.mark.parametrize(
    "target,message",
    [
        ("mysql://db/mnemo", "scheme 'mysql' is not supported"),
        ("sqlite://", "has no path"),
        ("sqlite:///", "does not name a file"),
        ("sqlite:///:memory:", "no in-memory database"),
        ("sqlite:///m.db?mode=ro", "no query string"),
        ("", "pass a directory, a .db file"),
        ("   ", "pass a directory, a .db file"),
    ],
)
async def test_open_store_refuses_what_it_cannot_open(tmp_path, monkeypatch, target, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsupportedStore, match=message) as err:
        await open_store(target)
    assert isinstance(err.value, ValueError)
    assert "sqlite:///" in str(err.value)  # every refusal says what would work
    assert list(tmp_path.iterdir()) == []  # nothing was created


async def test_conversation_store_open_still_takes_a_directory(tmp_path):
    store = await ConversationStore.open(tmp_path)
    try:
        assert store.path == tmp_path / "mnemo.db"
    finally:
        await store.close()


@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "PostgreSQL"])
async def test_open_store_opens_postgresql_from_a_url(pg_url, scheme):
    store = await open_store(
        scheme + pg_url[len("postgresql") :], policy=MemoryPolicy(keep_recent=5)
    )
    try:
        assert isinstance(store, PostgresStore) and isinstance(store, MemoryBackend)
        assert store.policy.keep_recent == 5  # keyword arguments reach the backend
        conv = await store.create_conversation("ana")
        await store.append("ana", conv.id, "user", "hello")
        assert (await store.get_conversation("ana", conv.id)).message_count == 1
    finally:
        await store.close()


async def test_an_unreachable_postgresql_url_says_what_to_check(unused_tcp_port):
    with pytest.raises(StorageUnavailable, match="MNEMO_DATABASE_URL"):
        await open_store(f"postgresql://mnemo@127.0.0.1:{unused_tcp_port}/mnemo")
