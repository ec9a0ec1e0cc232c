"""Recall ranking and packing: which older turns the model gets, within a character budget.

Pure functions over turns and scores, shared by every backend (SQLite gives BM25 ranks from
FTS5, PostgreSQL from its own search; both give cosines of the stored vectors):

1. **Score** each candidate turn: a weighted sum of its normalised keyword score (BM25, the
   best hit = 1), its cosine with the question (meaning, when turns have vectors), and a
   lower-weighted keyword score of the turn *before* it — the other speaker's question that
   led to it, whose words the new question often repeats (issue 11, item 4).
2. **Snippets**: a hit with the turns that make it understandable: the next turn when the hit
   is a question or short (its answer), the turn before when that is where the words matched.
   Overlapping or adjacent snippets merge into one run of consecutive turns.
3. **Pack by budget**, not by count: the best snippet first, until the budget is spent. Long
   turns are clipped around the part that matched. For list questions ("what activities...")
   the next snippet is picked by maximal marginal relevance, so the budget spreads over
   distinct parts of the conversation rather than five copies of one, and a hit close to one
   already chosen (the same everyday line with a remark added) is skipped; for every question,
   a hit that repeats one already chosen (the same reply again) is skipped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .recall import term_matcher, terms_pattern
from .records import RecalledTurn, Turn

# Characters a recalled turn costs beyond its text once rendered ("User: ", newline).
TURN_OVERHEAD = 8
# A run of consecutive turns also gets a date line.
RUN_OVERHEAD = 40
SHORT_TURN = 100  # a hit shorter than this, or a question, brings the next turn along
# Below this much budget left, no snippet worth reading fits: stop looking.
MIN_SNIPPET = 60

_QUESTION = re.compile(r"[?？]\s*$|[?？]\s|[吗嗎呢]\s*[。！!]?\s*$")
_LIST_QUESTION = re.compile(
    r"\b(?:list|all|every|various|ever|kinds?|types?|activities|hobbies|things)\b"
    r"|\b(?:what|which)\b(?:\s+\w+){0,2}\s+\w{3,}(?<!ss)s\b"
    r"|哪些|哪幾|哪几|有什麼|有什么|都有",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RecallWeights:
    """How the signals add up. Measured on bench/ (see README, Memory)."""

    keyword: float = 1.0
    semantic: float = 1.0
    prior: float = 0.3  # the keyword score of the turn before, as a second, weaker field
    mmr_lambda: float = 0.7  # for list questions: relevance vs. distance from what is chosen
    min_semantic: float = 0.05  # a cosine below this is noise (measured on bench long_memory)
    # A hit this close (cosine) to one already chosen says nothing new ("Got it, I'll keep
    # that in mind." for the fifth time): it is skipped, and the budget goes further.
    duplicate: float = 0.95
    # For a list question (with a vector) a hit this close to one already chosen is skipped
    # too: a list's own items are far apart (cosine at most 0.47 on bench long_memory), but
    # half of the best 60 hits there had a near twin above 0.76, the same everyday line with
    # a remark added, and the budget went to them.
    list_twin: float = 0.6
    # A fact and what later changed it ("I live in Leeds" ... "I moved from Leeds to
    # Cardiff"): for the best `follow_hits` hits, the later turn most like each (centred
    # cosine at least `follow_floor`) comes along, scored `follow` times its hit. Ten, not
    # five: on bench long_memory "Which city do I live in now?" ranked "I live in Cardiff" 6th
    # (five turns saying "live" or "city" above it), so "I moved from Cardiff to Glasgow",
    # fetched all along, was never scored (updated 23 -> 24 and 25 -> 26 of 32, seeds 42 / 7).
    follow_hits: int = 10
    follow_floor: float = 0.25
    follow: float = 1.0
    # A later turn that puts a new name in the slot of a best hit the question asks about
    # ("I work at Marlow" ... "First week at Quillon went well") comes along too, scored
    # `follow` times its hit: its meaning is often far from both (memory/renames.py).
    renames: bool = True


@dataclass(frozen=True)
class Conversation:
    """The turns recall may use, in conversation order, with their neighbours.

    `turns` holds candidates and their neighbours (prompt copies are made here);
    `next_of` / `prev_of` map a turn id to the id of the next / previous non-summary turn
    of the conversation, where that turn is available; `excluded` ids (the recent window)
    are never recalled.
    """

    turns: Mapping[int, Turn]
    next_of: Mapping[int, int]
    prev_of: Mapping[int, int]
    excluded: frozenset[int] = frozenset()


def is_question(text: str) -> bool:
    tail = text.strip()[-200:]
    # Each of _QUESTION's branches needs one of these: most turns have none, and five
    # substring tests cost a third of the regex's scan (a snippet asks this of every hit).
    marked = "?" in tail or "？" in tail or "吗" in tail or "嗎" in tail or "呢" in tail
    return marked and _QUESTION.search(tail) is not None


def is_list_question(text: str) -> bool:
    """Questions whose answer is spread over several turns ("what activities does she do")."""
    return bool(_LIST_QUESTION.search(text))


def normalise_bm25(ranks: Mapping[int, float]) -> dict[int, float]:
    """FTS5 ranks (negative, lower is better) as scores in [0, 1], the best hit = 1."""
    raw = {tid: max(0.0, -r) for tid, r in ranks.items()}
    top = max(raw.values(), default=0.0)
    return {tid: (s / top if top > 0 else 0.0) for tid, s in raw.items()}


def keyword_coverage(
    matched: Mapping[int, Sequence[str]], terms: Sequence[str], turns: int
) -> dict[int, float]:
    """For each keyword hit, the share of the query's information its words carry: the sum
    of the conversation-level IDF of the query terms it contains over that of all the query's
    terms, in [0, 1]. `matched` is each hit's query terms; `turns` how many turns it has.

    FTS5's BM25 takes its IDF over the whole index, every conversation of every owner, where a
    word this conversation says fifty times is still rare: "play" in a chat full of games
    scored like "instrument", and the best hit of a question whose telling word matches
    nothing was normalised to 1 all the same. Here a term's document frequency is counted
    among the hits (at most recall_k of them, so a very common word's is a floor) and a term
    no turn contains weighs most, so a hit on common words alone says little.
    """
    df = {t: 0 for t in terms}
    for words in matched.values():
        for t in words:
            df[t] = df.get(t, 0) + 1
    n = max(turns, max(df.values(), default=0)) + 1
    idf = {t: math.log(n / (d + 0.5)) for t, d in df.items()}
    total = sum(idf[t] for t in terms) or 1.0
    # FTS5 stems where the matcher compares prefixes: a hit whose terms it cannot point at
    # still matched something, so it counts as the commonest term.
    least = min((idf[t] for t in terms), default=0.0)
    return {
        tid: (sum(idf[t] for t in set(words)) if words else least) / total
        for tid, words in matched.items()
    }


def fuse(
    keyword: Mapping[int, float],
    semantic: Mapping[int, float],
    prev_of: Mapping[int, int],
    weights: RecallWeights = RecallWeights(),
) -> dict[int, float]:
    """Each candidate's score: keyword + semantic + prior (the keyword score of the turn
    before it). `keyword` is normalised (normalise_bm25), `semantic` raw cosines."""
    scores: dict[int, float] = {}
    for tid, kw in keyword.items():
        scores[tid] = scores.get(tid, 0.0) + weights.keyword * kw
    for tid, cos in semantic.items():
        if cos >= weights.min_semantic:
            scores[tid] = scores.get(tid, 0.0) + weights.semantic * cos
    for tid, prev in prev_of.items():
        if keyword.get(prev, 0.0) > 0:
            scores[tid] = scores.get(tid, 0.0) + weights.prior * keyword[prev]
    return scores


def later_word(hits: Sequence[int], meaning, weights: RecallWeights) -> dict[int, int]:
    """For each of `hits` (best first), the later turn most like it, when one is close
    enough (RecallWeights.follow_floor) without repeating it: {hit: later turn}. `meaning`
    is a memory.vectors.Meaning."""
    out: dict[int, int] = {}
    for hit in hits:
        later = meaning.later_like(hit, weights.follow_floor, weights.duplicate)
        if later is not None:
            out[hit] = later
    return out


def clip_around(text: str, terms: Sequence[str], limit: int) -> str:
    """At most `limit` characters of `text`: the stretch with the most matches of `terms`
    (whole, when it fits), else its start and end."""
    if len(text) <= limit:
        return text
    pattern = terms_pattern(tuple(terms)) if terms else None
    starts = [m.start() for m in pattern.finditer(text)] if pattern else []
    if not starts:
        head = (limit - 3) * 2 // 3
        return text[:head] + " … " + text[len(text) - (limit - 3 - head) :]
    # The window of `limit` characters holding the most match starts, a little lead-in kept.
    best, best_count, j = starts[0], 0, 0
    for i, s in enumerate(starts):
        while starts[j] < s - (limit - 2) // 2:
            j += 1
        if i - j + 1 > best_count:
            best, best_count = starts[j], i - j + 1
    lo = max(0, min(best - limit // 5, len(text) - limit + 2))
    hi = min(len(text), lo + limit - 2)
    body = text[lo:hi]
    return ("…" if lo > 0 else "") + body + ("…" if hi < len(text) else "")


def _window(
    tid: int, conv: Conversation, own: float, prior: float, taken: Container[int] = ()
) -> list[int]:
    """The turns of the snippet around hit `tid`, in order, less those `taken` already (all
    of them when `tid` is: then it is another snippet's context)."""
    if tid in taken:
        return []
    ids = [tid]
    prev = conv.prev_of.get(tid)
    if prior > own and prev is not None and prev not in conv.excluded:
        ids.insert(0, prev)  # matched through the question before it: show that question
    turn = conv.turns[tid]
    nxt = conv.next_of.get(tid)
    if (
        nxt is not None
        and nxt not in conv.excluded
        and nxt in conv.turns
        and nxt not in taken
        and (len(turn.content) < SHORT_TURN or is_question(turn.content))
    ):
        ids.append(nxt)
    return [i for i in ids if i in conv.turns and i not in taken]


@dataclass
class _Pick:
    turn: Turn  # the prompt copy
    matched: tuple[str, ...] = ()
    neighbour_of: int | None = None
    score: float = 0.0


def pack(
    conv: Conversation,
    scores: Mapping[int, float],
    terms: Sequence[str],
    budget: int,
    per_turn: int,
    *,
    keyword: Mapping[int, float] | None = None,
    vectors: Mapping[int, np.ndarray] | None = None,
    diverse: bool = False,
    weights: RecallWeights = RecallWeights(),
    max_hits: int | None = None,
    twins: bool = False,
    find: Callable[[str], tuple[str, ...]] | None = None,
) -> list[RecalledTurn]:
    """The recalled turns, oldest first: best snippets first until `budget` characters
    (rendered cost, see TURN_OVERHEAD) are spent; each turn clipped to `per_turn`.

    `scores` from fuse(); `keyword` the normalised keyword scores (to tell a direct hit
    from one through the turn before); `vectors` unit vectors by turn id: a hit that
    repeats a chosen one is skipped, and for `diverse` (list questions) the next hit is
    picked by maximal marginal relevance; with `twins` as well (a list question that has a
    vector) a hit within RecallWeights.list_twin of a chosen one is skipped. `max_hits` bounds
    the snippets (the budget usually ends them first). `find`: the term matcher for `terms`
    (recall.term_matcher) when the caller has one already.
    """
    keyword = keyword or {}
    vectors = vectors or {}
    terms = list(terms)
    find = find or term_matcher(terms)
    pool = {
        tid: s
        for tid, s in scores.items()
        if s > 0 and tid in conv.turns and tid not in conv.excluded
    }
    ceiling = weights.list_twin if diverse and twins else weights.duplicate
    candidates = _Candidates(pool, vectors, diverse, weights, ceiling)
    chosen: dict[int, _Pick] = {}
    remaining = budget
    hits = 0
    while candidates and remaining >= MIN_SNIPPET and (max_hits is None or hits < max_hits):
        tid, repeats = candidates.take()
        if repeats:
            continue
        score = pool[tid]
        prior = weights.prior * keyword.get(conv.prev_of.get(tid, -1), 0.0)
        own = weights.keyword * keyword.get(tid, 0.0)
        window = _window(tid, conv, own, prior, chosen)
        if tid not in window:  # already here as another snippet's context
            if score - prior > 0:  # a match in its own right, not only through the turn before
                pick = chosen[tid]
                pick.neighbour_of, pick.score = None, score
                pick.matched = find(conv.turns[tid].content)
                hits += 1
            continue
        added = _fit(window, tid, conv, terms, per_turn, remaining)
        if not added:
            continue
        joins = _joins_a_run(window, conv, chosen)
        for turn_id, pick in added.items():
            if turn_id == tid:
                pick.matched, pick.score = find(conv.turns[tid].content), score
            chosen[turn_id] = pick
            remaining -= len(pick.turn.content) + TURN_OVERHEAD
        if not joins:
            remaining -= RUN_OVERHEAD
        candidates.chose(tid)
        hits += 1
    ids = sorted(chosen)
    return [
        RecalledTurn(
            turn=chosen[i].turn,
            matched=chosen[i].matched,
            neighbour_of=chosen[i].neighbour_of,
            score=chosen[i].score,
            continues=n > 0 and conv.next_of.get(ids[n - 1]) == i,
        )
        for n, i in enumerate(ids)
    ]


class _Candidates:
    """The candidates, best first, taken one at a time: the best left, or for `diverse` the
    best by maximal marginal relevance. Each candidate's redundancy (its highest cosine with
    a chosen hit) is kept up to date with one matrix product per chosen hit, so a pick costs
    O(candidates) in numpy rather than a Python loop over candidates and chosen hits."""

    def __init__(
        self,
        pool: Mapping[int, float],
        vectors: Mapping[int, np.ndarray],
        diverse: bool,
        weights: RecallWeights,
        ceiling: float,
    ) -> None:
        self.ids = sorted(pool, key=lambda t: (-pool[t], t))  # ties to the older turn
        n = len(self.ids)
        self.index = {t: k for k, t in enumerate(self.ids)}
        top = pool[self.ids[0]] if n else 1.0
        self.relevance = np.array([pool[t] / top for t in self.ids], dtype=np.float32)
        dims = len(next(iter(vectors.values()))) if vectors else 0
        self.matrix = np.zeros((n, dims), dtype=np.float32)
        self.has_vector = np.zeros(n, dtype=bool)
        for k, t in enumerate(self.ids):
            v = vectors.get(t)
            if v is not None and len(v) == dims:
                self.matrix[k], self.has_vector[k] = v, True
        self.redundancy = np.zeros(n, dtype=np.float32)
        self.left = np.ones(n, dtype=bool)
        self.count, self.first = n, 0
        self.diverse, self.weights, self.any_chosen = diverse, weights, False
        self.ceiling = ceiling  # a hit this close to a chosen one repeats it

    def __bool__(self) -> bool:
        return self.count > 0

    def take(self) -> tuple[int, bool]:
        """(the next candidate's id, whether it repeats a chosen hit)."""
        if self.diverse and self.any_chosen:
            lam = self.weights.mmr_lambda
            value = lam * self.relevance - (1 - lam) * self.redundancy
            value[~self.left] = -np.inf
            k = int(np.argmax(value))
        else:
            while not self.left[self.first]:
                self.first += 1
            k = self.first
        self.left[k] = False
        self.count -= 1
        repeats = self.any_chosen and self.has_vector[k]
        return self.ids[k], bool(repeats and self.redundancy[k] >= self.ceiling)

    def chose(self, tid: int) -> None:
        """`tid` is now a chosen hit: what is like it becomes redundant."""
        k = self.index[tid]
        if self.has_vector[k]:
            np.maximum(self.redundancy, self.matrix @ self.matrix[k], out=self.redundancy)
            self.any_chosen = True


def _copy(turn: Turn, terms: list[str], limit: int) -> Turn:
    text = clip_around(turn.content, terms, limit)
    return turn if text is turn.content else replace(turn, content=text)


def _fit(
    window: list[int],
    hit: int,
    conv: Conversation,
    terms: list[str],
    per_turn: int,
    remaining: int,
) -> dict[int, _Pick]:
    """The window's turns as prompt copies, dropping context turns (then clipping the hit
    harder) until they fit in `remaining`; {} when even the clipped hit does not fit."""
    copies = {i: _copy(conv.turns[i], terms, per_turn) for i in window}
    size = {i: len(copy.content) + TURN_OVERHEAD for i, copy in copies.items()}

    def cost(ids: Sequence[int]) -> int:
        return sum(size[i] for i in ids) + RUN_OVERHEAD

    ids = list(window)
    while len(ids) > 1 and cost(ids) > remaining:
        ids.remove(next(i for i in reversed(ids) if i != hit))  # context gives way first
    if cost(ids) > remaining:
        room = remaining - TURN_OVERHEAD - RUN_OVERHEAD
        if room < min(200, per_turn):
            return {}
        copies[hit] = _copy(conv.turns[hit], terms, room)
    return {i: _Pick(copies[i], neighbour_of=None if i == hit else hit) for i in ids}


def _joins_a_run(window: list[int], conv: Conversation, chosen: Mapping[int, _Pick]) -> bool:
    """Whether the new snippet touches turns already chosen (then it shares their date line)."""
    ends = (conv.prev_of.get(window[0]), conv.next_of.get(window[-1]))
    return any(e is not None and e in chosen and e not in window for e in ends)
