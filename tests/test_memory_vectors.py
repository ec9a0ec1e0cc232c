"""memory/vectors.py: compact int8 vectors and their cosines."""

from __future__ import annotations

import numpy as np
import pytest

from memory.vectors import centred_cosines, cosines, embedding_text, pack, unpack


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
