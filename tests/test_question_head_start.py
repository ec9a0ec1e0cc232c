"""The question's embedding gets a head start (issue #14): a chat turn starts embedding the
new message as soon as it is known and valid, while it looks up the conversation and its
persona, and the context then waits for that embedding instead of making its own. Over real
SQLite and personas, the real google-genai client against the fake Gemini server."""

from __future__ import annotations

import asyncio

import pytest

from assistant import ChatService, Conversations, Delta, Done, InvalidMessage, QuotaExceeded
from assistant.gemini import GeminiModel
from memory import ConversationStore
from personas import PersonaRegistry

OWNER = "owner-a"
TEXT = "I took the ferry to Bergen on Saturday."
WAIT_S = 10.0  # a bound on waiting for the other side, never a measurement


class Counting:
    """A small deterministic embedder counting its calls (`called` is set at the first)."""

    name, dims = "counting-4", 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.called = asyncio.Event()

    async def embed(self, texts):
        self.calls.append(list(texts))
        self.called.set()
        return [[1.0, float(len(t)), 0.0, 0.5] for t in texts]


@pytest.fixture
async def make(tmp_path, fake):
    """`await make(quota=...)`: a facade over a store with the counting embedder."""
    built = []

    async def build(quota=None):
        embedder = Counting()
        store = await ConversationStore.open(tmp_path, embedder=embedder)
        model = GeminiModel("test-key", base_url=fake.url)
        service = ChatService(store, PersonaRegistry(data_dir=tmp_path), model, quota)
        built.append((service, store, model))
        return Conversations(service), store, embedder

    yield build
    for service, store, model in built:
        await service.wait_background()
        await store.close()
        await model.aclose()


async def events_of(stream):
    return [event async for event in stream]


async def test_the_embedding_starts_before_the_conversation_is_looked_up(make, fake):
    facade, store, embedder = await make()
    conv = (await facade.create(OWNER)).id
    embedding_during_lookup = []
    real = store.get_conversation

    async def get_conversation(*args, **kwargs):
        # The lookup waits for the embedder: only an embedding already started can come.
        try:
            await asyncio.wait_for(embedder.called.wait(), WAIT_S)
        except TimeoutError:
            embedding_during_lookup.append(False)
        else:
            embedding_during_lookup.append(True)
        return await real(*args, **kwargs)

    store.get_conversation = get_conversation
    fake.reply("Bergen is lovely.")
    events = await events_of(facade.send(OWNER, conv, TEXT))
    assert isinstance(events[-1], Done) and events[-1].saved
    assert embedding_during_lookup == [True]
    assert len(embedder.calls) == 1  # the context used that embedding: none of its own
    turns = await store.transcript(OWNER, conv)
    assert [(t.role, t.content) for t in turns] == [("user", TEXT), ("assistant", events[-1].reply)]


async def test_a_message_that_will_not_be_answered_costs_no_embedding(make, fake):
    facade, store, embedder = await make(quota=1)
    conv = (await facade.create(OWNER)).id
    fake.reply("Noted.")
    assert any(isinstance(e, Delta) for e in await events_of(facade.send(OWNER, conv, TEXT)))
    await facade.service.wait_background()
    embedded = len(embedder.calls)
    with pytest.raises(QuotaExceeded):  # over the quota: refused before any embedding
        await events_of(facade.send(OWNER, conv, "And on Sunday?"))
    with pytest.raises(InvalidMessage):  # too long: refused, and not embedded either
        await events_of(facade.send(OWNER, conv, "x" * 10_001))
    assert len(embedder.calls) == embedded
    contents = [t.content for t in await store.transcript(OWNER, conv)]
    assert contents == [TEXT, "Noted."]  # the refused messages were not saved
