"""memory/vectors.py: compact int8 vectors and their cosines."""

from __future__ import annotations

import numpy as np
import pytest

from memory.vectors import Meaning, centred_cosines, cosines, embedding_text, pack, unpack


def test_pack_keeps_the_direction_in_one_byte_per_dimension():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=256), rng.normal(size=256)
    pa, pb = pack(a), pack(b)
    assert len(pa) == 256 and isinstance(pa, bytes)
    exact = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    assert cosines(pa, [pb, pa])[0] == pytest.approx(exact, abs=0.01)
    assert cosines(pa, [pa])[0] == pytest.approx(1.0, abs=0.01)
    assert np.linalg.norm(unpack(pa)) == pytest.approx(1.0, abs=0.01)


def test_ranking_by_packed_cosine_matches_float_ranking():
    rng = np.random.default_rng(1)
    q = rng.normal(size=256)
    docs = rng.normal(size=(300, 256)) + 0.2 * q
    exact = docs @ q / np.linalg.norm(docs, axis=1)
    packed = cosines(pack(q), [pack(d) for d in docs])
    assert list(np.argsort(-exact)[:10]) == list(np.argsort(-packed)[:10])


@pytest.mark.parametrize("vector", [np.zeros(256), [float("nan")] * 4, []])
def test_vectors_without_direction_are_not_stored(vector):
    assert pack(vector) is None


def test_vectors_of_another_size_score_zero():
    q = pack(np.ones(256))
    assert list(cosines(q, [pack(np.ones(768)), pack(np.ones(256))]).round(2)) == [0.0, 1.0]
    assert len(cosines(q, [])) == 0


@pytest.mark.parametrize(
    "content,embedded",
    [
        ("Anna: I went biking with my neighbor.", "I went biking with my neighbor."),
        ("Mary Jane Watson: hello there", "hello there"),
        ("Note the time: 10:30", "Note the time: 10:30"),  # no space after the first word
        ("just text", "just text"),
    ],
)
def test_the_speaker_name_is_not_embedded(content, embedded):
    assert embedding_text(content) == embedded


def test_centred_cosines_rank_by_what_a_turn_does_not_share_with_the_others():
    # Every turn is mostly one common direction (what a static embedding gives any chat
    # message); each says its own small thing. The query says turn 7's thing.
    rng = np.random.default_rng(2)
    common = rng.normal(size=256)
    own = rng.normal(size=(200, 256))
    turns = [pack(3 * common + 0.5 * o) for o in own]
    query = pack(3 * common + rng.normal(size=256) * 0.3 + 0.5 * own[7])
    raw, centred = cosines(query, turns), centred_cosines(query, turns)
    assert np.argmax(centred) == 7
    assert centred[7] - np.sort(centred)[-2] > 0.2  # clearly ahead of the rest
    assert centred[7] - np.sort(centred)[-2] > 2 * (raw[7] - np.sort(raw)[-2])


def test_centred_cosines_degrade_gracefully():
    q = pack(np.ones(256))
    assert len(centred_cosines(q, [])) == 0
    # One turn: the shrunk mean leaves its direction; another size scores 0.
    one = centred_cosines(q, [pack(np.ones(256)), pack(np.ones(768))])
    assert one[0] > 0.9 and one[1] == 0.0
    same = centred_cosines(q, [q] * 50)  # all alike: nothing left to tell apart, no NaN
    assert np.all(np.isfinite(same))


def test_meaning_finds_the_later_turn_on_a_turns_subject_not_a_repeat_or_an_earlier_one():
    rng = np.random.default_rng(5)
    common, subject = rng.normal(size=256), rng.normal(size=256)
    own = rng.normal(size=(40, 256))
    vectors = [3 * common + o for o in own]
    vectors[10] = 3 * common + 2 * subject + 0.5 * own[10]  # the fact
    vectors[4] = 3 * common + 2 * subject + 0.5 * own[4]  # said before it: not "later"
    vectors[30] = 3 * common + 2 * subject + 0.5 * own[30]  # what later changed it
    vectors[20] = vectors[10]  # the fact said again: a repeat, not news
    ids = [100 + 2 * k for k in range(40)]
    shuffled = list(rng.permutation(40))  # rows may come in any order
    meaning = Meaning(
        [ids[k] for k in shuffled], pack(rng.normal(size=256)), [pack(vectors[k]) for k in shuffled]
    )
    assert len(meaning) == 40 and set(meaning) == set(ids)
    assert meaning.later_like(ids[10], 0.3, 0.95) == ids[30]
    assert meaning.later_like(ids[30], 0.3, 0.95) is None  # nothing like it after it
    assert meaning.later_like(ids[10], 0.99, 1.01) == ids[20]  # no ceiling: the repeat wins
    assert meaning.later_like(999, 0.3, 0.95) is None  # not a turn it knows
    assert meaning.distinct([ids[10], ids[20], ids[30], ids[5]], 2, 0.95) == [ids[10], ids[30]]


def test_meaning_without_a_query_vector_still_links_turns():
    # A question in a language the embedder does not know has no vector: no cosines, but
    # the turns' own vectors still tell what came later on a subject.
    a, b, c = (pack(v) for v in np.eye(256)[:3] + np.eye(256)[3])
    meaning = Meaning([1, 2, 3], None, [a, b, c])
    assert len(meaning) == 0 and not dict(meaning)
    assert meaning.later_like(1, -1.0, 2.0) in (2, 3)
    empty = Meaning([], None, [])
    assert empty.later_like(1, 0.0, 1.0) is None and empty.distinct([1, 2], 2, 0.9) == [1, 2]


def test_a_vector_of_another_size_changes_nothing_for_the_others():
    # One model's vectors take a path without copies; a stray size must not change them.
    rng = np.random.default_rng(3)
    blobs = [pack(v) for v in rng.normal(size=(6, 256))]
    q = pack(rng.normal(size=256))
    alone = centred_cosines(q, blobs)
    mixed = centred_cosines(q, [*blobs[:3], pack(np.ones(768)), *blobs[3:]])
    assert mixed[3] == 0.0
    assert np.allclose(np.delete(mixed, 3), alone)


def test_distinct_keeps_the_first_n_that_repeat_no_earlier_one():
    # Against the definition, one pair at a time: a candidate is skipped when its centred
    # cosine with any one already kept reaches the ceiling; turns without a vector are kept.
    rng = np.random.default_rng(11)
    base = rng.normal(size=(12, 64))
    vectors = [base[k % 12] + 0.4 * rng.normal(size=64) for k in range(60)]  # twins of 12
    ids = list(range(1, 61))
    meaning = Meaning(ids, pack(rng.normal(size=64)), [pack(v) for v in vectors])
    matrix = {t: meaning._matrix[meaning._row[t]] for t in ids}
    for _ in range(40):
        ranked = [int(t) for t in rng.permutation([*ids, 500, 501])]  # 500, 501: no vector
        n, ceiling = int(rng.integers(1, 25)), float(rng.uniform(0.3, 0.9))
        kept: list[int] = []
        for tid in ranked:
            if len(kept) == n:
                break
            v = matrix.get(tid)
            if v is None or all(float(matrix[k] @ v) < ceiling for k in kept if k in matrix):
                kept.append(tid)
        assert meaning.distinct(ranked, n, ceiling) == kept
    assert meaning.distinct([], 3, 0.5) == [] and meaning.distinct(ids, 0, 0.5) == []
