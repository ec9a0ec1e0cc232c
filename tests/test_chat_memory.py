"""The chat turn and memory the user steers: pinned facts reach the model (and leave it when
deleted), an edited summary is what the next request carries, and the per-part sizes in the
metrics match what the fake Gemini server received."""

from __future__ import annotations

import pytest

from assistant import ChatService
from assistant.gemini import GeminiModel
from memory import ConversationStore, MemoryPolicy
from personas import PersonaRegistry, build_system_prompt

OWNER = "ana"


@pytest.fixture
async def env(tmp_path, fake):
    model = GeminiModel("test-key", base_url=fake.url)
    store = await ConversationStore.open(tmp_path, policy=MemoryPolicy())
    registry = PersonaRegistry(data_dir=tmp_path)
    service = ChatService(store, registry, model)
    yield service, store, registry
    await service.wait_background()
    await store.close()
    await model.aclose()


async def send(service, conv_id, text):
    return [e async for e in service.send(OWNER, conv_id, text)]


async def test_a_pin_reaches_the_model_past_summarization_and_leaves_when_deleted(env, fake):
    service, store, _ = env
    conv = await store.create_conversation(OWNER)
    fact = await store.pin(OWNER, conv.id, "Our gross-margin red line is 15%")
    for i in range(101):
        await store.append(OWNER, conv.id, "user" if i % 2 == 0 else "assistant", f"turn {i}")
    assert await store.summarize_if_needed(OWNER, conv.id)
    await send(service, conv.id, "What is our red line?")
    assert "- Our gross-margin red line is 15%" in fake.last.system_text
    await store.unpin(OWNER, fact.id)
    await send(service, conv.id, "And now?")
    assert "red line is 15%" not in fake.last.system_text


async def test_an_edited_summary_is_what_the_next_request_carries(env, fake):
    service, store, _ = env
    conv = await store.create_conversation(OWNER)
    for i in range(101):
        await store.append(OWNER, conv.id, "user" if i % 2 == 0 else "assistant", f"turn {i}")
    assert await store.summarize_if_needed(OWNER, conv.id)
    await store.write_summary(OWNER, conv.id, "The client is Kestrel; they pay late.")
    await send(service, conv.id, "Who is the client?")
    system = fake.last.system_text
    assert "(written by the user):\nThe client is Kestrel; they pay late." in system
    assert "turn 0" not in system


async def test_metrics_sizes_match_what_the_model_received(env, fake):
    service, store, registry = env
    conv = await store.create_conversation(OWNER)
    await store.pin(OWNER, conv.id, "I'm vegetarian")
    for text in ("Hello", "What should I cook tonight?", "Something with lentils?"):
        await send(service, conv.id, text)
    await service.wait_background()
    rows = await store.conversation_metrics(OWNER, conv.id)
    prompt = build_system_prompt(registry.get(OWNER, "assistant").persona)
    requests = fake.of("streamGenerateContent")
    assert len(rows) == len(requests) == 3
    for row, request in zip(rows, requests, strict=True):
        m = row.metrics
        assert m.persona_chars == len(prompt)
        assert m.pinned_chars == len("I'm vegetarian")
        # Roles alternate here, so the client joined nothing: the contents are the turns.
        assert m.recent_chars == sum(len(text) for _, text in request.turns)
        assert m.budget_chars == MemoryPolicy().history_chars
        assert request.system_text.startswith(prompt) and m.summary_chars == 0
