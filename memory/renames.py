"""Updated facts by a renamed slot (issue 11): "I work at Marlow as a data analyst" ...
"First week at Quillon went well".

What changed a fact is often worded far from it: on bench long_memory "First week at Quillon
went well, the new team is friendly" has a centred cosine of 0.07-0.20 with "I work at Marlow
as a data analyst" (5th-109th of the turns after it) and about 0 with "Where do I work now?".
What links them is a new name in the same slot: after the same lowercase word ("at"), a
capitalised one the fact did not have. Pure functions; the store fetches what they pick.

Three checks keep it from dragging in every later turn with a name in it:

- **The slot is the one asked about.** A hit's slot counts only when its slot word is a word
  the question shares with the hit (by the stems recall matches with, recall.term_stems) or
  follows one within SLOT_REACH words of the same sentence: "I *work at* Marlow" for "Where do
  I work now?", "I *live in* Leeds" for "Where do I live now?". "Dinner with Marta after work
  was lovely", a weak hit for the work question, has no such slot ("work" comes after it), so
  "I'm flying to Paris with Joel" is no update of anything.
- **The same speaker** says the later turn, in the same role.
- **The name is new**: it was not said in the conversation up to the hit (the hit included).
  A name already in the talk is not a new value of the fact ("My sister lives in Ghent" ...
  "I live in Leeds" ... "The weather in Ghent was awful"). Where a name is looked for: in
  every older turn when the store has them all in hand (a conversation of at most
  sql.WHOLE_RECALL_MESSAGES messages: first_mentions), else in the index, one statement for
  the candidates' names (sql.named_first): the older turns are not in hand there, and reading
  them all to find a name would cost more than the rest of the context. Either way at most
  MAX_NAME_LOOKUPS names, the best candidates' first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from .recall import query_terms, term_stems
from .records import Turn

# A name in its slot: a lowercase word, then a capitalised one with a lowercase second letter
# ("at Marlow", "in Ghent", "with Bartholomew"; not "I'm", not an acronym). The word before
# makes it mid-sentence, so it is a name rather than a sentence's first word. The name is
# searched for first, then the word before it: four times faster than one pattern for both
# (2 µs a turn), and the whole-conversation path asks this of every older turn.
_NAME = re.compile(r" ([A-Z][a-z][\w'’-]*)")
_WORD_BEFORE = re.compile(r"\b[a-z]+$")
_POSSESSIVE = re.compile(r"['’]s$")
# How many words may stand between a word of the question and the slot word ("my phone is an
# ancient Nokia": two). Further off, the name is about something else in the same sentence.
SLOT_REACH = 2
_SENTENCE_END = re.compile(r"[.!?;:](?:\s|$)")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")

Slot = tuple[str, str]  # (slot word, name): ("at", "Marlow")


def _slots(text: str) -> Iterator[tuple[int, str, str]]:
    """(where the slot word starts, the slot word, the name) for each slot of `text`."""
    for m in _NAME.finditer(text):
        before = _WORD_BEFORE.search(text, max(0, m.start() - 40), m.start())
        if before is not None:
            yield before.start(), before.group(), _POSSESSIVE.sub("", m.group(1))


def named_slots(text: str) -> frozenset[Slot]:
    """The (word before, name) pairs of `text`: "I work at Marlow" -> {("at", "Marlow")}; a
    possessive is not part of the name ("with Marta's team" -> ("with", "Marta"))."""
    return frozenset((w, n) for _, w, n in _slots(text))


def asked_slots(text: str, terms: Sequence[str]) -> frozenset[Slot]:
    """The slots of `text` tied to the question's `terms` (query_terms): the slot word is a
    word starting with a term's stem, or comes at most SLOT_REACH words after one in the
    same sentence."""
    out = set()
    stems: tuple[str, ...] | None = None
    for at, word, name in _slots(text):
        # Stems, not a compiled pattern: a context asks this of twenty hits, for terms it has
        # not seen before (a pattern cost 0.9 ms to compile).
        stems = term_stems(tuple(terms)) if stems is None else stems
        lead = _SENTENCE_END.split(text[max(0, at - 120) : at + len(word)])[-1]
        # The slot word itself ("my manager Reginald"), or one of the 1 + SLOT_REACH before it.
        words = _WORD.findall(lead)[-(SLOT_REACH + 2) :]
        if stems and any(w.lower().startswith(stems) for w in words):
            out.add((word, name))
    return frozenset(out)


def new_names(fact: frozenset[Slot], later: frozenset[Slot]) -> set[str]:
    """The names a later turn's slots put after a word the fact has a name after, that the
    fact does not have ("at Quillon" after "at Marlow" -> {"Quillon"})."""
    words = {w for w, _ in fact}
    names = {n for _, n in fact}
    return {n for w, n in later if w in words and n not in names}


Similarity = Callable[[int, int], float | None]  # of two turns, by id; None: no vectors


@dataclass(frozen=True)
class Candidate:
    """A later turn that puts new `names` in a slot of `hit` (new_names); `rank` 0 for the
    one most like the hit, 1 for the next..."""

    hit: int
    turn: int
    names: frozenset[str]
    rank: int


def candidates(
    hits: Iterable[Turn], turns: Iterable[Turn], similarity: Similarity, terms: Sequence[str]
) -> list[Candidate]:
    """For each of `hits` with a slot the question's `terms` ask about (asked_slots), the
    turns of `turns` after it, by its speaker in its role, that put a new name in that slot,
    the most like the hit first (the newest first when neither has a vector)."""
    turns = list(turns)
    out: list[Candidate] = []
    for hit in hits:
        fact = asked_slots(hit.content, terms)
        if not fact or hit.id is None:
            continue
        words = tuple(f"{w} " for w in {w for w, _ in fact})
        found = []
        for turn in turns:
            if (
                turn.id is None
                or turn.id <= hit.id
                or turn.role != hit.role
                or turn.speaker != hit.speaker
                or not any(w in turn.content for w in words)  # cheap before the regex
            ):
                continue
            names = new_names(fact, named_slots(turn.content))
            if names:
                sim = similarity(hit.id, turn.id)
                found.append((-2.0 if sim is None else sim, turn.id, frozenset(names)))
        found.sort(reverse=True)
        out += [Candidate(hit.id, t, n, k) for k, (_, t, n) in enumerate(found)]
    return out


# At most this many names are looked up for one context, those of each hit's best candidates
# first: a chatty conversation puts dozens of places "in" its turns, and the long one's look-up
# (sql.named_first) is one indexed search per name.
MAX_NAME_LOOKUPS = 16


def names_to_check(cands: Sequence[Candidate]) -> list[str]:
    """The candidates' new names to look up (each hit's best candidate's first, then the
    second best's...), at most MAX_NAME_LOOKUPS; a name with no index term cannot be."""
    out: dict[str, None] = {}
    for c in sorted(cands, key=lambda c: c.rank):
        for name in sorted(c.names):
            if len(out) < MAX_NAME_LOOKUPS and name_terms(name):
                out[name] = None
    return list(out)


def picks(
    cands: Sequence[Candidate], checked: Sequence[str], first: Mapping[str, int]
) -> dict[int, int]:
    """{hit: its best candidate with a name that was `checked` and is not said up to the
    hit}: `first` holds each checked name's first turn id (none when no turn holds it)."""
    out: dict[int, int] = {}
    asked = set(checked)
    for c in cands:
        if c.hit not in out and any(n in asked and first.get(n, c.turn) > c.hit for n in c.names):
            out[c.hit] = c.turn
    return out


def name_terms(name: str) -> list[str]:
    """The index terms a name is looked up by ("Quillon" -> ["quillon"])."""
    return query_terms(name)


def first_mentions(turns: Sequence[Turn], names: Iterable[str]) -> dict[str, int]:
    """Each of `names`' first turn of `turns` (oldest first) holding one of its terms as a
    whole word, case aside: what the long conversation's look-up finds in the index
    (sql.named_first), by word where the index goes by stem ("Ghents" is not "Ghent" here)."""
    out: dict[str, int] = {}
    lowered = [(t.id, t.content.lower()) for t in turns if t.id is not None]
    for name in names:
        for term in name_terms(name):
            pattern = re.compile(rf"(?<![^\W_]){re.escape(term)}(?![^\W_])")
            at = next((i for i, text in lowered if term in text and pattern.search(text)), None)
            if at is not None and at < out.get(name, at + 1):
                out[name] = at
    return out


@dataclass(frozen=True)
class NamedScan:
    """What the store looks for among the later turns of a long conversation, for the best
    hits with a slot the question asks about: turns after `after` and before the recent
    window (`before`) holding one of `words` followed by a capitalised word (sql.later_named).
    """

    hits: dict[int, Turn]
    after: int
    before: int
    words: tuple[str, ...]
    terms: tuple[str, ...]

    def candidates(self, scanned: Iterable[Sequence], similarity: Similarity) -> list[Candidate]:
        """The candidates among the scan's rows (id, role, content, speaker)."""
        later = [Turn(r[0], "", r[1], r[2], 0.0, speaker=r[3]) for r in scanned]
        return candidates(self.hits.values(), later, similarity, self.terms)
