"""update_conversation: title, persona and retention in one statement, on both backends
(tests/memory_backends.py): every change is made, or, when one is refused, none."""

from __future__ import annotations

import pytest
from memory_backends import rows

from memory import (
    ConversationEdit,
    ConversationNotFound,
    InvalidRetention,
    InvalidTitle,
)

NOW = 1_800_000_000.0


@pytest.fixture
async def store(memory_backend):
    return await memory_backend.open(clock=lambda: NOW)


async def kept(store):
    return await store.create_conversation("ana", "Kept", "assistant", None, 60)


def settings(conversation) -> tuple:
    c = conversation
    return (c.title, c.persona_id, c.persona_version, c.retention_minutes, c.expires_at)


async def test_every_change_is_made_at_once(store):
    conv = await kept(store)
    edit = ConversationEdit(
        title="  Budget   review ",
        persona_id="finance",
        persona_version=3,
        retention_minutes=None,
        change_retention=True,
    )
    changed = await store.update_conversation("ana", conv.id, edit)
    assert settings(changed) == ("Budget review", "finance", 3, None, None)
    assert settings(await store.get_conversation("ana", conv.id)) == settings(changed)
    again = ConversationEdit(retention_minutes=30, change_retention=True)
    changed = await store.update_conversation("ana", conv.id, again)
    assert settings(changed) == ("Budget review", "finance", 3, 30, NOW + 30 * 60)


def retention(minutes, **changes) -> ConversationEdit:
    return ConversationEdit(retention_minutes=minutes, change_retention=True, **changes)


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (ConversationEdit(title="   ", persona_id="finance"), InvalidTitle),
        (retention(5, title="t" * 101), InvalidTitle),
        (retention(0, title="Fine"), InvalidRetention),
        (retention(-5, persona_id="sales"), InvalidRetention),
    ],
)
async def test_one_refused_change_leaves_the_others_unmade(store, edit, error):
    conv = await kept(store)
    with pytest.raises(error):
        await store.update_conversation("ana", conv.id, edit)
    assert settings(await store.get_conversation("ana", conv.id)) == settings(conv)


async def test_nothing_to_change_returns_it_as_it_is(store):
    conv = await kept(store)
    same = await store.update_conversation("ana", conv.id, ConversationEdit())
    assert settings(same) == settings(conv)


async def test_a_missing_or_someone_elses_conversation_is_not_found(store):
    conv = await kept(store)
    for owner, conv_id in (("bob", conv.id), ("ana", "no-such-id")):
        with pytest.raises(ConversationNotFound):
            await store.update_conversation(owner, conv_id, ConversationEdit(title="Mine"))
    assert rows(store, "SELECT title FROM conversations") == [("Kept",)]
