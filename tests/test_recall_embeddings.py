"""Recall by meaning: turn vectors written with each message, fused with keywords; the
wordllama embedder loaded offline from its wheel; Gemini's embedder against the fake server."""

from __future__ import annotations

import logging
import sqlite3
import sys

import numpy as np
import pytest

from assistant.embedding import EmbedderUnavailable, GeminiEmbedder, WordLlamaEmbedder
from memory import ConversationStore, MemoryPolicy
from memory.vectors import Embedder

FILLER = [
    ("What should we cook tonight?", "Maybe a vegetable soup with bread."),
    ("The weather has been grey all week.", "Rain is forecast until Sunday."),
    ("I need to call the bank tomorrow.", "I will remind you in the morning."),
    ("Any good films lately?", "A quiet drama about a lighthouse keeper."),
]
PLANTED = "Last Saturday I went on a long bicycle ride with Anna along the river."


@pytest.fixture(scope="module")
def wordllama():
    return WordLlamaEmbedder.load()


class Failing:
    name = "failing"
    dims = 4

    def __init__(self, wrong_count: bool = False):
        self.wrong_count = wrong_count
        self.calls = 0

    async def embed(self, texts):
        self.calls += 1
        if self.wrong_count:
            return [[1.0, 0, 0, 0]] * (len(texts) + 1)  # one vector too many
        raise RuntimeError("model crashed")


async def planted_conversation(store, owner="ana", turns=60):
    conv = await store.create_conversation(owner)
    await store.append(owner, conv.id, "user", PLANTED)
    await store.append(owner, conv.id, "assistant", "That sounds like a lovely afternoon.")
    for i in range(turns):
        user, reply = FILLER[i % len(FILLER)]
        await store.append(owner, conv.id, "user", user)
        await store.append(owner, conv.id, "assistant", reply)
    return conv


def vector_rows(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT model, length(vector) FROM turn_vectors").fetchall()


def test_wordllama_loads_from_its_wheel_without_importing_the_package(wordllama):
    # Importing wordllama runs logging.basicConfig and its load() may try to download.
    assert "wordllama" not in sys.modules
    assert isinstance(wordllama, Embedder)
    vectors = wordllama.embed_now(["a bicycle ride", "biking with my neighbour", "tax forms"])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert vectors.shape == (3, 256)
    assert unit[0] @ unit[1] > unit[0] @ unit[2]  # it knows bikes go with bicycles
    assert not wordllama.embed_now([""]).any()  # no tokens, no direction


def test_a_broken_wordllama_install_says_what_to_do(tmp_path):
    with pytest.raises(EmbedderUnavailable, match="reinstall"):
        WordLlamaEmbedder.load(tmp_path)


async def test_a_paraphrase_is_recalled_by_meaning_not_by_words(tmp_path, wordllama):
    question = "Who did I go cycling with?"  # no word in common with the planted turn
    for embedder, expected in ((None, False), (wordllama, True)):
        store = await ConversationStore.open(tmp_path / str(expected), embedder=embedder)
        try:
            conv = await planted_conversation(store)
            ctx = await store.context("ana", conv.id, query=question)
            assert (PLANTED in [r.turn.content for r in ctx.recalled]) is expected
        finally:
            await store.close()


async def test_every_message_gets_one_compact_vector_and_loses_it_with_the_message(
    tmp_path, wordllama
):
    store = await ConversationStore.open(tmp_path, embedder=wordllama)
    try:
        conv = await planted_conversation(store, turns=5)
        assert vector_rows(store.path) == [(wordllama.name, 256)] * 12
        await store.undo("ana", conv.id)
        assert len(vector_rows(store.path)) == 10
        await store.reset("ana", conv.id)
        assert vector_rows(store.path) == []
        await planted_conversation(store, turns=1)
        await store.delete_conversation("ana", (await store.list_conversations("ana"))[0].id)
        assert vector_rows(store.path) == []
    finally:
        await store.close()


@pytest.mark.parametrize("embedder", [Failing(), Failing(wrong_count=True)])
async def test_a_failing_embedder_never_loses_a_message(tmp_path, caplog, embedder):
    store = await ConversationStore.open(tmp_path, embedder=embedder)
    try:
        with caplog.at_level(logging.WARNING, logger="memory"):
            conv = await planted_conversation(store, turns=15)
            ctx = await store.context("ana", conv.id, query="the bicycle ride with Anna")
        assert embedder.calls > 0 and "saving without vectors" in caplog.text
        assert len(await store.transcript("ana", conv.id)) == 32
        assert vector_rows(store.path) == []
        assert PLANTED in [r.turn.content for r in ctx.recalled]  # keywords still work
    finally:
        await store.close()


async def test_vectors_of_another_embedder_are_not_compared(tmp_path, wordllama):
    store = await ConversationStore.open(tmp_path, embedder=wordllama)
    conv = await planted_conversation(store)
    await store.close()

    class Other:
        name = "other-model"
        dims = 256

        async def embed(self, texts):
            return [np.ones(256)] * len(texts)

    store = await ConversationStore.open(tmp_path, embedder=Other())
    try:
        ctx = await store.context("ana", conv.id, query="Who did I go cycling with?")
        assert ctx.recalled == []  # nothing shares a word, and no vector is of this model
    finally:
        await store.close()


async def test_gemini_embeddings_through_the_sdk_against_the_fake(fake):
    embedder = GeminiEmbedder("test-key", base_url=fake.url)
    vectors = await embedder.embed(["bicycle ride with Anna", "Anna and the bicycle", "taxes"])
    assert len(vectors) == 3 and all(len(v) == 256 for v in vectors)
    (request,) = fake.of("batchEmbedContents")
    assert [r["outputDimensionality"] for r in request.body["requests"]] == [256] * 3
    assert request.body["requests"][0]["content"]["parts"][0]["text"] == "bicycle ride with Anna"
    a, b, c = (np.array(v) / np.linalg.norm(v) for v in vectors)
    assert a @ b > a @ c


async def test_a_gemini_embedding_error_saves_the_message_without_a_vector(tmp_path, fake):
    embedder = GeminiEmbedder("test-key", base_url=fake.url)
    store = await ConversationStore.open(tmp_path, embedder=embedder)
    try:
        conv = await store.create_conversation("ana")
        fake.error(429, "Resource has been exhausted")
        turn = await store.append("ana", conv.id, "user", "Remember the blue bicycle.")
        assert turn.saved and vector_rows(store.path) == []
        await store.append("ana", conv.id, "assistant", "I will.")
        assert vector_rows(store.path) == [(embedder.name, 256)]
    finally:
        await store.close()


async def test_policy_without_recall_asks_no_vector(tmp_path):
    embedder = Failing()
    store = await ConversationStore.open(
        tmp_path, embedder=embedder, policy=MemoryPolicy(recall_k=0)
    )
    try:
        conv = await store.create_conversation("ana")
        await store.context("ana", conv.id, query="anything")
        assert embedder.calls == 0
    finally:
        await store.close()


async def test_a_chinese_question_is_recalled_by_characters_when_the_model_knows_no_chinese(
    tmp_path, wordllama
):
    class Counting:
        name, dims, knows_cjk = wordllama.name, 256, False

        def __init__(self):
            self.texts = []

        async def embed(self, texts):
            self.texts += list(texts)
            return wordllama.embed_now(texts)

    embedder = Counting()
    store = await ConversationStore.open(tmp_path, embedder=embedder)
    try:
        conv = await store.create_conversation("ana")
        await store.append("ana", conv.id, "user", "我最近開始上大提琴課，手指痠得要命。")
        for i in range(30):
            await store.append("ana", conv.id, ("assistant", "user")[i % 2], f"閒聊 {i}")
        written = len(embedder.texts)
        ctx = await store.context("ana", conv.id, query="大提琴課上得怎樣？")
        assert len(embedder.texts) == written  # no vector asked for the Chinese question
        assert "我最近開始上大提琴課，手指痠得要命。" in [r.turn.content for r in ctx.recalled]
        await store.context("ana", conv.id, query="How are the cello lessons going?")
        assert len(embedder.texts) == written + 1
    finally:
        await store.close()
