"""Recall by meaning: turn vectors written with each message, fused with keywords; the
wordllama embedder loaded offline from its wheel; Gemini's embedder against the fake server.
Tests taking `memory_backend` run on SQLite and PostgreSQL (tests/memory_backends.py)."""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import replace

import numpy as np
import pytest
from memory_backends import FakeClock, conversation_with_fact, vector_rows

from assistant.embedding import EmbedderUnavailable, GeminiEmbedder, WordLlamaEmbedder
from memory import MemoryPolicy, open_store, render_memory
from memory.packing import RecallWeights
from memory.vectors import Embedder, query_embedding_text

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
    return await conversation_with_fact(
        store, PLANTED, "That sounds like a lovely afternoon.", FILLER, owner=owner, turns=turns
    )


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


async def test_a_paraphrase_is_recalled_by_meaning_not_by_words(memory_backend, wordllama):
    question = "Who did I go cycling with?"  # no word in common with the planted turn
    for embedder, expected in ((None, False), (wordllama, True)):
        store = await memory_backend.open(embedder=embedder)
        conv = await planted_conversation(store)
        ctx = await store.context("ana", conv.id, query=question)
        assert (PLANTED in [r.turn.content for r in ctx.recalled]) is expected


async def test_every_message_gets_one_compact_vector_and_loses_it_with_the_message(
    memory_backend, wordllama
):
    clock = FakeClock()
    store = await memory_backend.open(embedder=wordllama, clock=clock)
    conv = await planted_conversation(store, turns=5)
    assert vector_rows(store) == [(wordllama.name, 256)] * 12
    await store.undo("ana", conv.id)
    assert len(vector_rows(store)) == 10
    await store.reset("ana", conv.id)
    assert vector_rows(store) == []
    await planted_conversation(store, turns=1)
    await store.delete_conversation("ana", (await store.list_conversations("ana"))[0].id)
    assert vector_rows(store) == []
    # Retention's purge takes the vectors with the turns.
    conv = await planted_conversation(store, turns=1)
    await store.set_retention("ana", conv.id, 30)
    clock.now += 31 * 60
    assert await store.purge_expired() == 1
    assert vector_rows(store) == []


@pytest.mark.parametrize("wrong_count", [False, True])
async def test_a_failing_embedder_never_loses_a_message(memory_backend, caplog, wrong_count):
    embedder = Failing(wrong_count)
    store = await memory_backend.open(embedder=embedder)
    with caplog.at_level(logging.WARNING, logger="memory"):
        conv = await planted_conversation(store, turns=15)
        imported = await store.import_conversation("ana", [("user", PLANTED, 1_000.0)])
        await store.flush_vectors()
        ctx = await store.context("ana", conv.id, query="the bicycle ride with Anna")
    assert embedder.calls > 0 and "saving without vectors" in caplog.text
    assert len(await store.transcript("ana", conv.id)) == 32
    assert len(await store.transcript("ana", imported.id)) == 1
    assert vector_rows(store) == []
    assert PLANTED in [r.turn.content for r in ctx.recalled]  # keywords still work


async def test_vectors_of_another_embedder_are_not_compared(memory_backend, wordllama):
    store = await memory_backend.open(embedder=wordllama)
    conv = await planted_conversation(store)

    question = "Who did I go cycling with?"

    class Other:
        """Embeds the question at once; the background filler (which would give every turn
        this model's vector on open) waits until the question has been asked."""

        name = "other-model"
        dims = 256

        def __init__(self) -> None:
            self.asked = asyncio.Event()

        async def embed(self, texts):
            if question not in texts:  # the question (with its content words) goes at once
                await self.asked.wait()
            return [np.ones(256)] * len(texts)

    other = Other()
    store = await memory_backend.open(embedder=other)
    ctx = await store.context("ana", conv.id, query=question)
    assert ctx.recalled == []  # nothing shares a word, and no vector is of this model
    other.asked.set()
    await store.flush_vectors()


async def test_an_import_gets_its_vectors_and_is_recalled_by_meaning(memory_backend, wordllama):
    store = await memory_backend.open(embedder=wordllama)
    messages = [("user", PLANTED, 1_000.0), ("assistant", "Lovely!", 1_001.0)]
    for i in range(40):
        user, reply = FILLER[i % len(FILLER)]
        messages += [("user", user, 2_000.0 + 2 * i), ("assistant", reply, 2_001.0 + 2 * i)]
    conv = await store.import_conversation("ana", messages)
    assert vector_rows(store) == [(wordllama.name, 256)] * len(messages)
    ctx = await store.context("ana", conv.id, query="Who did I go cycling with?")
    assert PLANTED in [r.turn.content for r in ctx.recalled]


async def test_a_rewritten_reply_is_recalled_by_its_new_meaning(memory_backend, wordllama):
    store = await memory_backend.open(embedder=wordllama)
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "What did you think of my weekend?")
    reply = await store.append("ana", conv.id, "assistant", "Let me", outcome="incomplete")
    await store.update_reply("ana", conv.id, reply.id, PLANTED.replace("I went", "you went"))
    for i in range(30):
        user, answer = FILLER[i % len(FILLER)]
        await store.append("ana", conv.id, "user", user)
        await store.append("ana", conv.id, "assistant", answer)
    await store.flush_vectors()
    assert len(vector_rows(store)) == 62  # replaced, not added
    ctx = await store.context("ana", conv.id, query="Who did I go cycling with?")
    assert reply.id in [r.turn.id for r in ctx.recalled]


async def test_gemini_embeddings_through_the_sdk_against_the_fake(fake):
    embedder = GeminiEmbedder("test-key", base_url=fake.url)
    vectors = await embedder.embed(["bicycle ride with Anna", "Anna and the bicycle", "taxes"])
    assert len(vectors) == 3 and all(len(v) == 256 for v in vectors)
    (request,) = fake.of("batchEmbedContents")
    assert [r["outputDimensionality"] for r in request.body["requests"]] == [256] * 3
    assert request.body["requests"][0]["content"]["parts"][0]["text"] == "bicycle ride with Anna"
    a, b, c = (np.array(v) / np.linalg.norm(v) for v in vectors)
    assert a @ b > a @ c


async def test_a_gemini_embedding_error_saves_the_message_without_a_vector(memory_backend, fake):
    embedder = GeminiEmbedder("test-key", base_url=fake.url)
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    fake.error(429, "Resource has been exhausted")
    turn = await store.append("ana", conv.id, "user", "Remember the blue bicycle.")
    await store.flush_vectors()
    assert turn.saved and vector_rows(store) == []
    await store.append("ana", conv.id, "assistant", "I will.")
    await store.flush_vectors()
    assert vector_rows(store) == [(embedder.name, 256)]


async def test_policy_without_recall_asks_no_vector(memory_backend):
    embedder = Failing()
    store = await memory_backend.open(embedder=embedder, policy=MemoryPolicy(recall_k=0))
    conv = await store.create_conversation("ana")
    await store.context("ana", conv.id, query="anything")
    assert embedder.calls == 0


async def test_a_chinese_question_is_recalled_by_characters_when_the_model_knows_no_chinese(
    memory_backend, wordllama
):
    class Counting:
        name, dims, knows_cjk = wordllama.name, 256, False

        def __init__(self):
            self.texts = []

        async def embed(self, texts):
            self.texts += list(texts)
            return wordllama.embed_now(texts)

    embedder = Counting()
    store = await memory_backend.open(embedder=embedder)
    conv = await store.create_conversation("ana")
    await store.append("ana", conv.id, "user", "我最近開始上大提琴課，手指痠得要命。")
    for i in range(30):
        await store.append("ana", conv.id, ("assistant", "user")[i % 2], f"閒聊 {i}")
    await store.flush_vectors()
    written = len(embedder.texts)
    ctx = await store.context("ana", conv.id, query="大提琴課上得怎樣？")
    assert len(embedder.texts) == written  # no vector asked for the Chinese question
    assert "我最近開始上大提琴課，手指痠得要命。" in [r.turn.content for r in ctx.recalled]
    await store.context("ana", conv.id, query="How are the cello lessons going?")
    assert embedder.texts[written:] == ["How are the cello lessons going?", "cello lessons going"]


def test_a_question_is_embedded_by_its_content_words_under_a_static_model():
    assert query_embedding_text("What's my hometown?") == "hometown"
    assert query_embedding_text("Who is my manager now?") == "manager now"  # "now" says when
    assert query_embedding_text("What do I do for a living?") == "living"
    assert query_embedding_text("Is it?") == "Is it?"  # nothing left: the question as it is
    # Chinese has no spaces: its question words, pronouns and particles go from the run.
    assert query_embedding_text("我平常做哪些運動？") == "平常做運動"
    assert query_embedding_text("我的配偶是誰？") == "配偶"
    assert query_embedding_text("誰？") == "誰？"


async def test_only_a_token_averaging_embedder_gets_the_question_without_function_words(
    memory_backend, wordllama
):
    class Recording:
        name, dims = wordllama.name, 256

        def __init__(self, averages_tokens):
            self.averages_tokens = averages_tokens
            self.calls = []

        async def embed(self, texts):
            self.calls.append(list(texts))
            return wordllama.embed_now(texts)

    # A sentence model gets the question and its content words, in one call.
    for averages, expected in ((True, ["hometown"]), (False, ["What's my hometown?", "hometown"])):
        embedder = Recording(averages)
        store = await memory_backend.open(embedder=embedder)
        conv = await store.create_conversation("ana")
        await store.append("ana", conv.id, "user", "I grew up in a fishing village.")
        await store.flush_vectors()
        await store.context("ana", conv.id, query="What's my hometown?")
        assert embedder.calls == [["I grew up in a fishing village."], expected]
        await store.close()


async def test_a_static_model_ranks_a_paraphrase_higher_without_the_function_words(wordllama):
    # The mean vector of a short question is mostly "what", "do", "I": without them the
    # question's own word decides which turn it is nearest.
    from memory.vectors import centred_cosines, pack

    turns = [
        "I got hired as a nurse at the regional hospital.",
        *[t for pair in FILLER for t in pair],
    ]
    blobs = [pack(v) for v in wordllama.embed_now(turns)]
    question = "What do I do for a living?"
    ranks = []
    for text in (question, query_embedding_text(question)):
        cos = centred_cosines(pack(wordllama.embed_now([text])[0]), blobs)
        ranks.append(int((cos > cos[0]).sum()))
    assert ranks[1] <= ranks[0]
    assert ranks[1] == 0


async def test_hits_on_common_words_alone_do_not_bury_the_turn_that_means_the_question(
    memory_backend, wordllama
):
    # "play" is said all the time and "instrument" never: the turn about the lessons shares
    # no word with the question and must still beat forty games played.
    store = await memory_backend.open(embedder=wordllama, policy=MemoryPolicy(recall_chars=700))
    conv = await store.create_conversation("ana")
    games = ["chess", "cards", "football", "darts", "tennis", "pool", "bridge", "poker"]
    for i in range(40):
        await store.append("ana", conv.id, "user", f"We play {games[i % 8]} on round {i}.")
        await store.append("ana", conv.id, "assistant", "Sounds like fun.")
        if i == 12:
            await store.append("ana", conv.id, "user", "I've started taking cello lessons.")
            await store.append("ana", conv.id, "assistant", "Lovely.")
    for i in range(12):
        await store.append("ana", conv.id, ("user", "assistant")[i % 2], f"Filler {i}.")
    # Vectors are written in the background (memory/vector_fill.py): under load the cello
    # turn had none yet and was recalled by its words only, which the question does not share.
    await store.flush_vectors()
    ctx = await store.context("ana", conv.id, query="Which instrument am I learning to play?")
    assert "I've started taking cello lessons." in [r.turn.content for r in ctx.recalled]


MEANING_QUERIES = [
    "Who did I go cycling with?",  # shares no word with the conversation: meaning alone
    "Remind me about that lighthouse drama",  # words of identical turns: keyword + meaning
    "What dinner plans did we make?",
    "Is it going to rain this weekend?",
]


async def test_both_backends_recall_the_same_turns_in_the_same_order(tmp_path, pg_url, wordllama):
    # The same messages, dates and embedder on SQLite and PostgreSQL: the vectors are the
    # same bytes and their cosines come from the same code, so recall by meaning (alone, or
    # fused with a keyword score both backends normalise to 1) sends the model the same text.
    start = 1_790_000_000.0
    messages = [("user", PLANTED, start), ("assistant", "Sounds lovely.", start + 60)]
    for i in range(60):
        user, reply = FILLER[i % len(FILLER)]
        day = start + 86_400 * (1 + i // 8)
        messages += [("user", user, day + 2 * i), ("assistant", reply, day + 2 * i + 1)]
    clock = FakeClock(start + 30 * 86_400)
    sent = {}
    for target in (str(tmp_path), pg_url):
        store = await open_store(target, embedder=wordllama, clock=clock)
        try:
            conv = await store.import_conversation("ana", messages)
            sent[target] = [
                render_memory(await store.context("ana", conv.id, query=q)) for q in MEANING_QUERIES
            ]
        finally:
            await store.close()
    sqlite_sent, postgres_sent = sent.values()
    assert "a long bicycle ride with Anna" in sqlite_sent[0]
    pairs = zip(sqlite_sent, postgres_sent, strict=True)
    for query, (on_sqlite, on_postgres) in zip(MEANING_QUERIES, pairs, strict=True):
        assert on_postgres == on_sqlite, query


@pytest.mark.parametrize("question", [*MEANING_QUERIES, "the bicycle ride, and tax?"])
async def test_a_small_conversation_sent_whole_recalls_as_hits_and_neighbours_do(
    tmp_path, wordllama, monkeypatch, question
):
    # Up to sql.WHOLE_RECALL_MESSAGES the context statement sends every older turn; above it,
    # each keyword hit with its neighbours, and the turns found by meaning in a second
    # statement. Both must give the model the same thing.
    from dataclasses import replace

    from memory import sql

    store = await open_store(tmp_path, embedder=wordllama)
    try:
        conv = await planted_conversation(store)
        whole = await store.context("ana", conv.id, query=question)
        monkeypatch.setattr(sql, "WHOLE_RECALL_MESSAGES", 0)
        by_hits = await store.context("ana", conv.id, query=question)
        assert whole.recalled and whole == replace(by_hits, now=whole.now)
    finally:
        await store.close()


OLD_JOB = "I work at Brightfield as a data analyst."
NEW_JOB = "Left Brightfield last month, and the first week at Corvina went well."


WORK_TALK = [
    ("Work was hectic again, meetings back to back.", "That sounds draining."),
    ("I biked to work along the canal this morning.", "Lovely way to start the day."),
    ("My laptop for work keeps freezing.", "Try a restart and an update first."),
]


def job_conversation(start: float, filler_pairs: int) -> list[tuple[str, str, float]]:
    """A fact stated early, everyday chat (a little of it about work), then the fact changed
    in words the question lacks."""
    messages = [("user", OLD_JOB, start), ("assistant", "Noted.", start + 30)]
    talk = {filler_pairs // 4 * (k + 1): pair for k, pair in enumerate(WORK_TALK)}
    for i in range(filler_pairs):
        user, reply = talk.get(i, FILLER[i % len(FILLER)])
        at = start + 86_400 * (1 + i // 10) + 60 * i
        messages += [("user", user, at), ("assistant", reply, at + 1)]
        if i == filler_pairs // 2:
            messages += [("user", NEW_JOB, at + 5), ("assistant", "Congratulations!", at + 6)]
    return messages


@pytest.mark.parametrize("filler_pairs", [40, 200])  # sent whole, and by hits (> 300 messages)
async def test_what_later_changed_a_recalled_fact_comes_with_it(
    memory_backend, wordllama, filler_pairs
):
    # The question finds the old fact by its words; the newer one shares no word
    # with the question, only its subject (and the old name) with the old fact. With a
    # budget for a few snippets, the later turn most like a best hit comes along.
    clock = FakeClock(1_790_000_000.0 + 60 * 86_400)
    messages = job_conversation(1_790_000_000.0, filler_pairs)
    found = {}
    for follow_hits in (0, 5):
        weights = replace(RecallWeights(), follow_hits=follow_hits)
        policy = MemoryPolicy(recall_chars=400, recall_weights=weights)
        store = await memory_backend.open(embedder=wordllama, clock=clock, policy=policy)
        conv = await store.import_conversation("ana", messages)
        ctx = await store.context("ana", conv.id, query="Where do I work as a data analyst now?")
        found[follow_hits] = [r.turn.content for r in ctx.recalled]
        await store.close()
    assert OLD_JOB in found[0] and NEW_JOB not in found[0]
    assert OLD_JOB in found[5] and NEW_JOB in found[5]


# Turns that say the question's words more often than the old fact does, each about
# something else, so the old fact is not among recall's five best hits.
STRONGER_HITS = [
    "Data analyst jobs: where do data analysts work now? Analyst work is remote now.",
    "My cousin asked where a data analyst can work now; I said analyst work is everywhere.",
    "A data analyst podcast asked where analysts work now and how data work has changed.",
    "The data analyst meetup was about where analysts work now, data work and analyst pay.",
    "An article on data analyst work: where analysts work now, and data analyst salaries.",
]


async def recalled_for_job(memory_backend, wordllama, filler_pairs, weights):
    """What recall brings for the job question when five turns said before the old fact
    match the question better (what is most like the old fact later is still the newer one)."""
    clock = FakeClock(1_790_000_000.0 + 60 * 86_400)
    start = 1_790_000_000.0 - 86_400
    messages = []
    for k, text in enumerate(STRONGER_HITS):
        at = start + 60 * k
        messages += [("user", text, at), ("assistant", "Interesting.", at + 1)]
    messages += job_conversation(1_790_000_000.0, filler_pairs)
    policy = MemoryPolicy(recall_chars=3000, recall_weights=weights)
    store = await memory_backend.open(embedder=wordllama, clock=clock, policy=policy)
    try:
        conv = await store.import_conversation("ana", messages)
        ctx = await store.context("ana", conv.id, query="Where do I work as a data analyst now?")
    finally:
        await store.close()
    return [r.turn.content for r in ctx.recalled]


@pytest.mark.parametrize("filler_pairs", [40, 200])  # sent whole, and by hits (> 300 messages)
async def test_what_later_changed_a_fact_below_the_five_best_hits_comes_with_it(
    memory_backend, wordllama, filler_pairs
):
    # Recall follows the ten best hits, and a conversation sent whole fetches what they link
    # to as one sent by hits does (before, a small one lost the newer word).
    found = await recalled_for_job(memory_backend, wordllama, filler_pairs, RecallWeights())
    assert OLD_JOB in found and NEW_JOB in found


async def test_following_five_hits_misses_the_newer_word_of_the_sixth(memory_backend, wordllama):
    # The case above is one that five hits do not reach (the old fact is the sixth).
    weights = replace(RecallWeights(), follow_hits=5)
    found = await recalled_for_job(memory_backend, wordllama, 40, weights)
    assert OLD_JOB in found and NEW_JOB not in found


RENAMED_JOB = "First week at Corvina went well, the new team is friendly."


@pytest.mark.parametrize("filler_pairs", [40, 200])  # sent whole, and by hits (> 300 messages)
async def test_a_later_turn_naming_another_employer_in_the_same_slot_comes_with_the_fact(
    memory_backend, wordllama, filler_pairs
):
    # The newer fact shares no word with the question and little meaning with the old fact
    # ("at Corvina" where it said "at Brightfield"): only the renamed slot links them.
    clock = FakeClock(1_790_000_000.0 + 60 * 86_400)
    messages = [
        (role, RENAMED_JOB if text == NEW_JOB else text, at)
        for role, text, at in job_conversation(1_790_000_000.0, filler_pairs)
    ]
    found = {}
    for renames in (False, True):
        weights = replace(RecallWeights(), renames=renames)
        policy = MemoryPolicy(recall_chars=400, recall_weights=weights)
        store = await memory_backend.open(embedder=wordllama, clock=clock, policy=policy)
        try:
            conv = await store.import_conversation("ana", messages)
            ctx = await store.context(
                "ana", conv.id, query="Where do I work as a data analyst now?"
            )
        finally:
            await store.close()
        found[renames] = [r.turn.content for r in ctx.recalled]
    assert OLD_JOB in found[False] and RENAMED_JOB not in found[False]
    assert OLD_JOB in found[True] and RENAMED_JOB in found[True]


DINNER = "Dinner with Marta after work was lovely, we talked for hours."
TRIP = "I'm flying to Paris with Joel next month, so excited."
PARENTS = "My parents live in York, near the old walls."
OLD_CITY = "I live in Leeds with two roommates, the rent is brutal."
VISIT = "Spent the weekend in York, long walks and far too much cake."
NEW_CITY = "Moving day is done, the new flat in Cardiff is full of boxes."


def updated_conversation(start: float, filler_pairs: int, early, late):
    """`early` said first, everyday chat, `late` said halfway through it."""
    messages = []
    for k, text in enumerate(early):
        messages += [("user", text, start + 60 * k), ("assistant", "Noted.", start + 60 * k + 30)]
    for i in range(filler_pairs):
        user, reply = FILLER[i % len(FILLER)]
        at = start + 86_400 * (1 + i // 10) + 60 * i
        messages += [("user", user, at), ("assistant", reply, at + 1)]
        if i == filler_pairs // 2:
            for k, text in enumerate(late):
                messages += [("user", text, at + 5 + k), ("assistant", "Nice!", at + 5.5 + k)]
    return messages


# (said early, said later, the question, what it finds by its words, the update it should
# bring, a later turn with a name in a slot that it should not)
UPDATES = [
    # "with Joel" renames "with Marta", but the question asks about work, not dinner.
    pytest.param(
        [OLD_JOB, DINNER],
        [TRIP, RENAMED_JOB],
        "Where do I work now?",
        [OLD_JOB, DINNER],
        RENAMED_JOB,
        TRIP,
        id="another-slot",
    ),
    # "in York" after "in Leeds": York was in the talk before the fact, no new value of it.
    pytest.param(
        [PARENTS, OLD_CITY],
        [VISIT, NEW_CITY],
        "Which city do I live in now?",
        [PARENTS, OLD_CITY],
        NEW_CITY,
        VISIT,
        id="name-said-before",
    ),
]


@pytest.mark.parametrize("filler_pairs", [40, 200])  # sent whole, and by hits (> 300 messages)
@pytest.mark.parametrize("early,late,question,hits,update,other", UPDATES)
async def test_only_a_new_name_in_the_slot_asked_about_updates_a_fact(
    memory_backend, wordllama, filler_pairs, early, late, question, hits, update, other
):
    # Recall by meaning off (no cosine counts, no later turn most like a hit), so what comes
    # is what the question's words find and what renames those hits' slots.
    clock = FakeClock(1_790_000_000.0 + 60 * 86_400)
    messages = updated_conversation(1_790_000_000.0, filler_pairs, early, late)
    found = {}
    for renames in (False, True):
        weights = RecallWeights(min_semantic=1.0, follow_floor=1.0, renames=renames)
        policy = MemoryPolicy(recall_chars=800, recall_weights=weights)
        store = await memory_backend.open(embedder=wordllama, clock=clock, policy=policy)
        try:
            conv = await store.import_conversation("ana", messages)
            ctx = await store.context("ana", conv.id, query=question)
        finally:
            await store.close()
        found[renames] = [r.turn.content for r in ctx.recalled]
    assert set(hits) <= set(found[False]) and {update, other}.isdisjoint(found[False])
    assert set(hits) | {update} <= set(found[True])
    assert other not in found[True]
