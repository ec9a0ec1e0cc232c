"""API token verbs of the store: only hashes stored, per owner, revocable, limited. Every test
runs on SQLite and PostgreSQL (tests/memory_backends.py)."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from memory_backends import rows

from memory import (
    ConversationStore,
    InvalidInput,
    InvalidTokenName,
    StorageUnavailable,
    TokenNotFound,
    TooManyTokens,
)
from memory.store import MAX_TOKENS_PER_OWNER, TOKEN_TOUCH_EVERY_S


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
async def store(memory_backend, clock):
    return await memory_backend.open(clock=clock)


def sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def test_a_token_is_found_by_its_hash_and_only_the_hash_is_stored(store):
    token = await store.add_token("ana", "  my   script ", sha("s3cret-token-abcd"), "abcd")
    assert (token.owner, token.name, token.hint, token.active) == ("ana", "my script", "abcd", True)
    found = await store.token_by_hash(sha("s3cret-token-abcd"))
    assert found is not None and found.id == token.id and found.owner == "ana"
    assert await store.token_by_hash(sha("another")) is None
    if isinstance(store, ConversationStore):
        with sqlite3.connect(store.path) as db:
            dump = "\n".join(db.iterdump())
    else:
        dump = "\n".join(map(str, rows(store, "SELECT * FROM api_tokens")))
    assert "s3cret-token" not in dump
    assert sha("s3cret-token-abcd") in dump


async def test_revoked_tokens_stop_working_at_once_and_stay_listed(store, clock):
    first = await store.add_token("ana", "one", sha("one"), "aaaa")
    clock.now += 1
    second = await store.add_token("ana", "two", sha("two"), "bbbb")
    clock.now += 1
    revoked = await store.revoke_token("ana", first.id)
    assert revoked.revoked_at == clock.now and not revoked.active
    assert await store.token_by_hash(sha("one")) is None
    assert (await store.token_by_hash(sha("two"))).id == second.id
    clock.now += 5
    again = await store.revoke_token("ana", first.id)
    assert again.revoked_at == revoked.revoked_at  # the first revocation time is kept
    assert [(t.name, t.active) for t in await store.list_tokens("ana")] == [
        ("two", True),
        ("one", False),
    ]


async def test_tokens_are_per_owner(store):
    token = await store.add_token("ana", "one", sha("one"), "aaaa")
    assert await store.list_tokens("bob") == []
    with pytest.raises(TokenNotFound):
        await store.revoke_token("bob", token.id)
    assert (await store.token_by_hash(sha("one"))).active


async def test_last_used_is_written_at_most_once_a_minute(store, clock):
    await store.add_token("ana", "one", sha("one"), "aaaa")
    used = await store.token_by_hash(sha("one"))
    assert used.last_used_at == clock.now
    clock.now += TOKEN_TOUCH_EVERY_S / 2
    assert (await store.token_by_hash(sha("one"))).last_used_at == used.last_used_at
    clock.now += TOKEN_TOUCH_EVERY_S
    assert (await store.token_by_hash(sha("one"))).last_used_at == clock.now
    assert (await store.list_tokens("ana"))[0].last_used_at == clock.now


@pytest.mark.parametrize(
    ("name", "token_hash", "error"),
    [
        ("", sha("x"), InvalidTokenName),
        ("   ", sha("x"), InvalidTokenName),
        ("n" * 61, sha("x"), InvalidTokenName),
        ("ok", "not-a-hash", InvalidInput),
        ("ok", sha("x").upper(), InvalidInput),
    ],
)
async def test_bad_token_input_is_refused_and_nothing_stored(store, name, token_hash, error):
    with pytest.raises(error):
        await store.add_token("ana", name, token_hash, "xxxx")
    assert await store.list_tokens("ana") == []


async def test_active_tokens_per_owner_are_limited(store):
    tokens = [
        await store.add_token("ana", f"t{i}", sha(f"t{i}"), "xxxx")
        for i in range(MAX_TOKENS_PER_OWNER)
    ]
    with pytest.raises(TooManyTokens, match="Revoke one"):
        await store.add_token("ana", "one more", sha("one more"), "xxxx")
    await store.revoke_token("ana", tokens[0].id)
    await store.add_token("ana", "one more", sha("one more"), "xxxx")
    await store.add_token("bob", "bob's", sha("bob"), "xxxx")  # others are not limited by ana


async def test_the_same_token_cannot_be_recorded_twice(store):
    await store.add_token("ana", "one", sha("one"), "aaaa")
    # UNIQUE: a hash names one token (a 256-bit random token never collides in practice).
    with pytest.raises(StorageUnavailable):
        await store.add_token("bob", "one", sha("one"), "aaaa")
    assert await store.list_tokens("bob") == []
