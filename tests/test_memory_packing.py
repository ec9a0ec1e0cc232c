"""memory/packing.py: fused scores, snippets around hits, packing by budget, diversity."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from memory.packing import (
    RUN_OVERHEAD,
    TURN_OVERHEAD,
    Conversation,
    RecallWeights,
    clip_around,
    fuse,
    is_list_question,
    is_question,
    keyword_coverage,
    normalise_bm25,
    pack,
)
from memory.records import Turn


def conversation(contents: list[str], excluded: tuple[int, ...] = ()) -> Conversation:
    """Turns 1..n alternating user/assistant, ids spaced like an interleaved database."""
    ids = [10 * (i + 1) for i in range(len(contents))]
    turns = {
        tid: Turn(tid, "c", ("user", "assistant")[i % 2], text, 1_800_000_000.0 + i)
        for i, (tid, text) in enumerate(zip(ids, contents, strict=True))
    }
    return Conversation(
        turns=turns,
        next_of=dict(pairwise(ids)),
        prev_of={b: a for a, b in pairwise(ids)},
        excluded=frozenset(excluded),
    )


def test_bm25_is_normalised_best_first():
    assert normalise_bm25({1: -4.0, 2: -2.0, 3: 0.5}) == {1: 1.0, 2: 0.5, 3: 0.0}
    assert normalise_bm25({}) == {}


def test_a_hit_on_common_words_alone_carries_little_of_the_question():
    # 100 turns; "play" is in 40 hits, "learning" in 10, "instrument" in none.
    matched = {i: ("play",) for i in range(40)} | {40 + i: ("learning",) for i in range(10)}
    matched[50] = ("play", "learning")
    coverage = keyword_coverage(matched, ["instrument", "learning", "play"], 100)
    # The word no turn says weighs most: no hit reaches half of the question.
    assert max(coverage.values()) < 0.5
    assert coverage[0] < coverage[40] < coverage[50]
    # Every term matched by one hit: all of the question.
    assert keyword_coverage({1: ("banjo", "lessons")}, ["banjo", "lessons"], 100) == {1: 1.0}


def test_a_hit_the_matcher_cannot_explain_counts_as_the_commonest_term():
    # FTS5 stems ("ran" for "running" is not a prefix): the hit matched something.
    matched = {1: (), 2: ("run",), 3: ("run",), 4: ("marathon",)}
    coverage = keyword_coverage(matched, ["run", "marathon"], 50)
    assert coverage[1] == pytest.approx(coverage[2])
    assert 0 < coverage[1] < coverage[4] < 1


def test_fused_score_adds_meaning_and_the_turn_before():
    w = RecallWeights(keyword=1.0, semantic=2.0, prior=0.5, min_semantic=0.1)
    scores = fuse({10: 1.0, 30: 0.4}, {20: 0.3, 30: 0.05}, {20: 10, 30: 20, 40: 30}, w)
    # 20: cosine 0.3 * 2 + the question before it (10) 1.0 * 0.5; 30: its own keyword only
    # (its cosine is under the noise floor); 40: the turn before it (30) matched.
    assert scores == pytest.approx({10: 1.0, 20: 1.1, 30: 0.4, 40: 0.2})


@pytest.mark.parametrize(
    "text,question",
    [("Where did you go?", True), ("你去哪裡了？", True), ("你去了嗎", True),
     ("I went home.", False), ("What? No. I stayed in.", True)],
)  # fmt: skip
def test_is_question(text, question):
    assert is_question(text) is question


@pytest.mark.parametrize(
    "text,listy",
    [("What activities does Anna do?", True), ("Which books has she read?", True),
     ("List the places I visited", True), ("她有哪些愛好？", True),
     ("What is my sister's name?", False), ("When did she go camping?", False)],
)  # fmt: skip
def test_is_list_question(text, listy):
    assert is_list_question(text) is listy


def test_a_question_hit_brings_its_answer_and_a_long_hit_comes_alone():
    conv = conversation(
        [
            "Where did you and Anna ride your bicycles last Sunday?",
            "Along the river to the old mill, about 30 km.",
            "x" * 50,
            "Bicycles are great. " + "I also enjoy long walks in the countryside. " * 4,
            "Indeed.",
        ]
    )
    out = pack(conv, {10: 1.0, 40: 0.9}, ["bicycles"], budget=5_000, per_turn=2_000)
    assert [(r.turn.id, r.neighbour_of) for r in out] == [(10, None), (20, 10), (40, None)]
    assert [r.continues for r in out] == [False, True, False]
    assert out[0].matched == ("bicycles",) and out[1].matched == ()


def test_a_hit_through_the_turn_before_shows_that_turn():
    conv = conversation(["What did Anna bring to the picnic?", "A lemon cake she baked. " * 6])
    keyword = {10: 1.0}
    scores = fuse(keyword, {}, conv.prev_of)
    scores.pop(10)  # say only the answer is a candidate: it matched through its question
    out = pack(conv, scores, ["picnic"], 5_000, 2_000, keyword=keyword)
    assert [(r.turn.id, r.neighbour_of) for r in out] == [(10, 20), (20, None)]


def test_overlapping_snippets_merge_and_a_context_turn_can_become_a_hit():
    conv = conversation(["Short one?", "Answer about tea.", "Tea again?", "Yes, green tea."])
    out = pack(conv, {10: 1.0, 20: 0.8, 30: 0.7}, ["tea"], 5_000, 2_000)
    assert [r.turn.id for r in out] == [10, 20, 30, 40]
    assert [r.neighbour_of for r in out] == [None, None, None, 30]
    assert out[1].matched == ("tea",)  # first brought as 10's answer, then a hit itself
    assert [r.continues for r in out] == [False, True, True, True]


def test_packing_fills_the_budget_best_first_and_never_exceeds_it():
    contents = [
        f"Fact number {i} about gardening and roses, told at length. " * 3 for i in range(40)
    ]
    conv = conversation(contents)
    scores = {10 * (i + 1): 1.0 - i / 100 for i in range(40)}
    budget = 2_000
    out = pack(conv, scores, ["gardening"], budget, 2_000)
    cost = sum(len(r.turn.content) + TURN_OVERHEAD for r in out)
    runs = sum(not r.continues for r in out)
    assert cost + runs * RUN_OVERHEAD <= budget
    one = len(contents[0]) + TURN_OVERHEAD + RUN_OVERHEAD
    assert budget - (cost + runs * RUN_OVERHEAD) < one  # nothing else would have fitted
    # The best are in: the top-scored turns, not a fixed count.
    assert {r.turn.id for r in out} == {10 * (i + 1) for i in range(len(out))}
    assert len(out) > 6


def test_the_recent_window_and_zero_scores_are_never_recalled():
    conv = conversation(["tea?", "green tea", "tea!", "more tea"], excluded=(30, 40))
    out = pack(conv, {10: 1.0, 20: 0.0, 30: 5.0}, ["tea"], 5_000, 2_000)
    assert [r.turn.id for r in out] == [10, 20]  # 20 only as 10's answer


def test_long_turns_are_clipped_around_the_match():
    text = (
        "filler words here. " * 100 + "The spare key is under the blue flowerpot. " + "more. " * 200
    )
    clipped = clip_around(text, ["flowerpot", "key"], 300)
    assert len(clipped) <= 300 and "flowerpot" in clipped and "spare key" in clipped
    assert clipped.startswith("…") and clipped.endswith("…")
    assert clip_around("short", ["x"], 300) == "short"
    unmatched = clip_around("a" * 1000, ["zzz"], 300)
    assert len(unmatched) <= 300 and unmatched.startswith("aaa") and unmatched.endswith("aaa")


def test_a_hit_too_long_for_what_is_left_is_clipped_to_fit():
    conv = conversation(["The tea ceremony. " * 200])
    out = pack(conv, {10: 1.0}, ["ceremony"], budget=500, per_turn=2_000)
    assert len(out) == 1 and len(out[0].turn.content) + TURN_OVERHEAD + RUN_OVERHEAD <= 500


def test_list_questions_spread_over_distinct_parts():
    # Five near-copies of one hobby score highest; two other hobbies score a little lower.
    rng = np.random.default_rng(3)
    base, other1, other2 = (v / np.linalg.norm(v) for v in rng.normal(size=(3, 32)))
    contents = [f"I love painting, session {i}, " + "with details. " * 8 for i in range(5)]
    contents += ["I took up rock climbing. " + "with details. " * 8]
    contents += ["I joined a choir. " + "with details. " * 8]
    conv = conversation(contents)
    ids = list(conv.turns)
    scores = {tid: 1.0 - i * 0.02 for i, tid in enumerate(ids[:5])} | {ids[5]: 0.8, ids[6]: 0.78}
    # Alike (cosine about 0.9), not repeats: plain packing keeps them all.
    near = [base + 0.35 * n / np.linalg.norm(n) for n in rng.normal(size=(5, 32))]
    near = [v / np.linalg.norm(v) for v in near]
    assert 0.8 < min(float(a @ b) for a, b in pairwise(near)) < RecallWeights().duplicate
    vectors = dict(zip(ids[:5], near, strict=True)) | {ids[5]: other1, ids[6]: other2}
    budget = 3 * (len(contents[0]) + TURN_OVERHEAD + RUN_OVERHEAD)
    plain = pack(conv, scores, [], budget, 2_000, vectors=vectors)
    diverse = pack(conv, scores, [], budget, 2_000, vectors=vectors, diverse=True)
    assert {r.turn.id for r in plain} == set(ids[:3])
    assert {r.turn.id for r in diverse} == {ids[0], ids[5], ids[6]}


def test_a_list_question_skips_a_near_twin_of_a_chosen_hit():
    # An everyday line said again with a remark added (cosine 0.75) outscores the list's other
    # items (0.6 and 0.55, far from it): MMR alone still picks the twin; a list question that
    # has a vector skips it, and the budget reaches both items.
    rng = np.random.default_rng(5)
    line, noise, item1, item2 = (v / np.linalg.norm(v) for v in rng.normal(size=(4, 32)))
    twin = 0.75 * line + np.sqrt(1 - 0.75**2) * (noise - (noise @ line) * line) / np.linalg.norm(
        noise - (noise @ line) * line
    )
    assert abs(float(twin @ line) - 0.75) < 1e-6
    contents = ["The office is freezing again. " * 5, "The office is freezing again, ugh. " * 5]
    contents += ["I play table tennis on Tuesdays. " * 5, "I started bouldering on Fridays. " * 5]
    conv = conversation(contents)
    ids = list(conv.turns)
    scores = {ids[0]: 1.0, ids[1]: 0.99, ids[2]: 0.6, ids[3]: 0.55}
    vectors = dict(zip(ids, [line, twin, item1, item2], strict=True))
    budget = 3 * (len(contents[1]) + TURN_OVERHEAD + RUN_OVERHEAD)
    assert RecallWeights().list_twin < 0.75 < RecallWeights().duplicate

    def picked(**kwargs):
        out = pack(conv, scores, [], budget, 2_000, vectors=vectors, diverse=True, **kwargs)
        return {r.turn.id for r in out}

    assert picked(twins=True) == {ids[0], ids[2], ids[3]}
    assert picked() == {ids[0], ids[1], ids[2]}  # no question vector: only repeats are skipped


def test_a_hit_that_repeats_a_chosen_one_is_skipped():
    # The same reply said again and again outscores what the budget should reach next.
    rng = np.random.default_rng(4)
    same, other = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 32)))
    contents = ["That sounds lovely, enjoy it! " * 4] * 4 + ["My sister lives in Bergen now."]
    conv = conversation(contents)
    ids = list(conv.turns)
    scores = {tid: 1.0 - i * 0.01 for i, tid in enumerate(ids[:4])} | {ids[4]: 0.5}
    vectors = {tid: same for tid in ids[:4]} | {ids[4]: other}
    budget = 2 * (len(contents[0]) + TURN_OVERHEAD + RUN_OVERHEAD)
    picked = pack(conv, scores, [], budget, 2_000, vectors=vectors)
    assert [r.turn.id for r in picked] == [ids[0], ids[4]]
    # Without vectors nothing tells them apart: the budget goes to the repeats.
    blind = pack(conv, scores, [], budget, 2_000)
    assert [r.turn.id for r in blind] == ids[:2]


@pytest.mark.parametrize(
    "terms,content,expected",
    [
        (["bicycles", "anna"], "Took the Bicycle out with ANNA's dog.", ("bicycles", "anna")),
        (["cycle"], "a bicycle, a tricycle", ()),  # inside a word: not a match
        (["cycle"], "re_cycle, -cycled", ("cycle",)),  # after a hyphen: a word start
        (["cycle"], "snake_cycle", ()),  # after an underscore: inside the word, as \b says
        (["拉面", "cafe"], "想吃拉面 at the Café", ("拉面", "cafe")),  # the stem "caf" starts it
        (["拉面"], "拉 面", ()),
        (["zeta9"], "ZETA9 first, zeta9 again", ("zeta9",)),
        ([], "anything", ()),
    ],
)
def test_the_matched_terms_of_a_hit(terms, content, expected):
    from memory.recall import term_matcher

    assert term_matcher(terms)(content) == expected


def test_matched_terms_agree_with_a_word_start_regex():
    import random
    import re

    from memory.recall import _stem, term_matcher

    rng = random.Random(5)
    words = ["cat", "cats", "scatter", "Catalog", "dog_cat", "x-cat", "ÉCOLE", "école", "run"]
    shared = {}  # one matcher asked for many texts, some again, as one context asks it
    for _ in range(300):
        content = " ".join(rng.choices(words, k=rng.randint(0, 6)))
        terms = rng.sample(["cats", "école", "running", "dog"], rng.randint(1, 3))
        oracle = tuple(
            t for t in terms if re.search(r"\b" + re.escape(_stem(t)), content, re.IGNORECASE)
        )
        assert term_matcher(terms)(content) == oracle, (terms, content)
        assert shared.setdefault(tuple(terms), term_matcher(terms))(content) == oracle
