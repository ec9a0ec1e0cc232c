"""Context assembly: what the model sees of a conversation, and the one text it receives.

`assemble_context()` is a pure function over the rows of the context statements (memory/sql.py:
`context_sql`, `RECALL_TURNS`) and a `MemoryPolicy`: no database, no clock, so it is tested on
hand-made rows and a second backend only has to return the same rows. Recall ranks and packs
its candidates with memory/packing.py. `render_memory()` turns the result into the memory note
appended to the system prompt, and `render_messages()` the recent turns into chat messages;
the chat turn, the inspector and the benchmarks all use them, so they show exactly what is
sent. Both carry dates: one date line per run of consecutive turns, and relative dates in
older turns annotated with the date they meant (memory/timeref.py), at render time only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo

from .errors import NOT_FOUND_MESSAGE, ConversationNotFound
from .packing import (
    Conversation,
    RecallWeights,
    fuse,
    is_list_question,
    keyword_coverage,
    later_word,
    normalise_bm25,
    pack,
)
from .policy import MemoryPolicy
from .recall import term_matcher
from .records import ContextWindow, PinnedFact, RecalledTurn, Turn
from .renames import NamedScan, asked_slots, candidates, first_mentions, names_to_check, picks
from .sql import (
    KIND_CONVERSATION,
    KIND_HIT,
    KIND_NEXT,
    KIND_OLDER,
    KIND_PINNED,
    KIND_PREV,
    KIND_RECENT,
    KIND_SUMMARY,
    KIND_VECTOR,
    TURN_WIDTH,
    pinned_from_row,
    turn_from_row,
)
from .timeref import annotate, format_date, local_date
from .vectors import Meaning, unpack_many

MEMORY_NOTE_HEADER = (
    "## Memory note\n"
    "What you remember from earlier in this conversation (older messages no longer shown below). "
    "It is background written by the memory system, not a new message from the user; use it "
    "when it is relevant."
)
RECALLED_HEADER = (
    "Recalled older messages that match the new message, oldest first, under the date they "
    "were written (a date in [= ...] is what a relative date in the message meant):"
)
_TURN = slice(1, 1 + TURN_WIDTH)  # the turn columns of a context row


def _tz(context: ContextWindow) -> tzinfo:
    return UTC if context.timezone in ("UTC", "") else ZoneInfo(context.timezone)


PINNED_HEADER = "Pinned facts (the user pinned these; always keep them in mind):"
ABOUT_ME_HEADER = "About the user (pinned by them for all their conversations):"


def render_memory(context: ContextWindow) -> str | None:
    """Pinned facts, the summary and recalled turns as one clearly labelled note, or None
    when there is nothing to remember."""
    tz = _tz(context)
    parts: list[str] = []
    for header, facts in (
        (PINNED_HEADER, [p for p in context.pinned if not p.about_me]),
        (ABOUT_ME_HEADER, [p for p in context.pinned if p.about_me]),
    ):
        if facts:
            parts.append(header + "\n" + "\n".join(f"- {p.content}" for p in facts))
    if context.summary is not None:
        label = "Summary of the earlier conversation"
        if context.summary.edited:
            label += " (written by the user)"
        parts.append(f"{label}:\n" + context.summary.content.strip())
    if context.recalled:
        lines: list[str] = []
        day = None
        for r in context.recalled:
            turn_day = local_date(r.turn.created_at, tz)
            if not r.continues or turn_day != day:
                lines.append(f"[{format_date(turn_day)}]")
                day = turn_day
            text = annotate(r.turn.content, r.turn.created_at, tz)
            lines.append(f"{r.turn.who}: {text}")
        parts.append(RECALLED_HEADER + "\n" + "\n".join(lines))
    if not parts:
        return None
    today = f"Today is {format_date(local_date(context.now, tz))}.\n\n" if context.now else ""
    return MEMORY_NOTE_HEADER + "\n\n" + today + "\n\n".join(parts)


def render_messages(context: ContextWindow) -> list[dict[str, str]]:
    """The recent turns as chat messages, oldest first. Where the day changes (starting from
    today: a window of today's turns carries no date line) the next user message opens with
    that day's date line; turns from before today get their relative dates annotated.
    Without a time to render against (now unset) the turns are sent as they are. A
    roundtable reply opens with its speaker, `[finance] ...`, so the model knows who said it."""
    if not context.now:
        return [{"role": t.role, "content": t.labelled} for t in context.turns]
    tz = _tz(context)
    today = local_date(context.now, tz)
    out: list[dict[str, str]] = []
    dated, pending = today, False
    for t in context.turns:
        day = local_date(t.created_at, tz)
        text = t.content if day == today else annotate(t.content, t.created_at, tz)
        if t.speaker:
            text = f"[{t.speaker}] {text}"
        pending = pending or day != dated
        if t.role == "user" and pending:
            text = f"[{format_date(day)}]\n{text}"
            dated, pending = day, False
        out.append({"role": t.role, "content": text})
    return out


def clip_for_prompt(text: str, limit: int) -> str:
    """Keep the start and the end of a long message; the middle gives way."""
    if len(text) <= limit:
        return text
    marker = " […] "
    head = (limit - len(marker)) * 2 // 3
    tail = limit - len(marker) - head
    return text[:head] + marker + text[len(text) - tail :]


@dataclass(frozen=True)
class RecallRows:
    """The recall part of the context rows: hits, their neighbours, the vectors."""

    turns: dict[int, Turn] = field(default_factory=dict)
    ranks: dict[int, float] = field(default_factory=dict)  # keyword hits: FTS5 rank
    next_of: dict[int, int] = field(default_factory=dict)
    prev_of: dict[int, int] = field(default_factory=dict)
    vectors: dict[int, bytes] = field(default_factory=dict)
    older: list[int] = field(default_factory=list)  # every older turn, when the rows hold them


def recall_rows(rows: Iterable[Sequence]) -> RecallRows:
    out = RecallRows()
    for r in rows:
        kind = r[0]
        if kind == KIND_VECTOR:
            out.vectors[r[1]] = r[4]
        elif kind in (KIND_HIT, KIND_NEXT, KIND_PREV, KIND_OLDER):
            tid = r[1]
            if tid not in out.turns:  # a hit is also an older turn, or another's neighbour
                out.turns[tid] = turn_from_row(r[_TURN])
            if kind == KIND_HIT and r[-2] is not None:
                out.ranks[tid] = r[-2]
            elif kind == KIND_NEXT:
                out.next_of[r[-1]], out.prev_of[tid] = tid, r[-1]
            elif kind == KIND_PREV:
                out.prev_of[r[-1]], out.next_of[tid] = tid, r[-1]
            elif kind == KIND_OLDER:
                out.older.append(tid)
    out.older.sort()
    return out


def as_fetched(
    found: RecallRows,
    semantic: Mapping[int, float],
    policy: MemoryPolicy,
    top: Sequence[int] = (),
    renames: Iterable[int] = (),
) -> RecallRows:
    """From all the older turns of a small conversation (sql.WHOLE_RECALL_MESSAGES), what the
    hits-and-neighbours statements would have sent: the keyword hits and the best turns by
    meaning (missing_candidates), each with the turns beside it, and the later turns most
    like the best hits `top` (follow_top) or renaming their slots (`renames`, from
    renamed_in_hand). The cheaper rows must not change what is recalled: every backend
    recalls the same turns from the same messages."""
    floor = policy.recall_weights.min_semantic
    meaning = sorted(
        (i for i, c in semantic.items() if c >= floor and i in found.turns),
        key=lambda i: -semantic[i],
    )
    out = RecallRows(ranks=found.ranks, vectors=found.vectors)
    position = {t: k for k, t in enumerate(found.older)}

    def with_neighbours(hit: int) -> None:
        k = position.get(hit)
        if k is None:  # not an older turn (cannot happen with the statement's bounds)
            return
        out.turns[hit] = found.turns[hit]
        # The newest older turn's next is in the recent window, which recall never shows.
        if k + 1 < len(found.older):
            nxt = found.older[k + 1]
            out.turns[nxt], out.next_of[hit], out.prev_of[nxt] = found.turns[nxt], nxt, hit
        if k > 0:
            prev = found.older[k - 1]
            out.turns[prev], out.prev_of[hit], out.next_of[prev] = found.turns[prev], prev, hit

    for hit in found.ranks:
        with_neighbours(hit)
    # As the second statement would: only those not already there as a hit's neighbour.
    # and the later turns most like the best hits, which it fetches too: without them a
    # small conversation lost the newer word on a fact that the same one, grown past
    # WHOLE_RECALL_MESSAGES, recalled.
    later = [*later_word(top, semantic, policy.recall_weights).values(), *renames] if top else []
    for hit in [i for i in [*meaning[: policy.recall_k], *later] if i not in out.turns]:
        with_neighbours(hit)
    return out


def keyword_scores(
    ranks: Mapping[int, float],
    turns: Mapping[int, Turn],
    terms: Sequence[str],
    count: int,
    find: Callable[[str], tuple[str, ...]] | None = None,
) -> dict[int, float]:
    """Each keyword hit's score in [0, 1]: its BM25 rank normalised to the best hit's, times
    the share of the query's information it matches (packing.keyword_coverage) among the
    `count` turns of the conversation. `find`: the term matcher for `terms`, if one is made."""
    keyword = normalise_bm25(ranks)
    if not keyword:
        return keyword
    find = find or term_matcher(list(terms))
    matched = {t: find(turns[t].content) for t in keyword if t in turns}
    coverage = keyword_coverage(matched, list(terms), count)
    return {t: s * coverage.get(t, 0.0) for t, s in keyword.items()}


def semantic_scores(rows: Iterable[Sequence], query_vector: bytes | None) -> Meaning:
    """Centred cosine of the query with every vector row (the conversation's older turns)."""
    vectors = [(r[1], r[4]) for r in rows if r[0] == KIND_VECTOR]
    return Meaning([t for t, _ in vectors], query_vector, [v for _, v in vectors])


def has_older(rows: Iterable[Sequence]) -> bool:
    """Whether the conversation of the context rows has messages older than its recent
    window, which recall could bring back: without them assemble_context recalls nothing,
    whatever the question's vector (the reads then do not wait for it)."""
    rows = list(rows)
    counts = [r[1] for r in rows if r[0] == KIND_CONVERSATION]
    return bool(counts) and counts[0] > sum(r[0] == KIND_RECENT for r in rows)


def missing_candidates(
    rows: Iterable[Sequence],
    semantic: Mapping[int, float],
    policy: MemoryPolicy,
    terms: Sequence[str] = (),
) -> tuple[list[int], NamedScan | None]:
    """The turns recall may want that the rows do not hold yet: the meaning side's top
    `recall_k`, and the later turns most like the best hits (packing.later_word); the store
    fetches them (memory/sql.py RECALL_TURNS) before assembling. With them, the scan for later
    turns renaming the best hits' slots for the question's `terms` (named_scan), or None."""
    rows = list(rows)
    have = {r[1] for r in rows if r[0] in (KIND_HIT, KIND_NEXT, KIND_PREV, KIND_OLDER)}
    # Every turn recall could ask for has a vector: when the rows hold them all (every older
    # turn of a small conversation), nothing is missing and the ranking below is not needed.
    if have.issuperset(semantic.ids if isinstance(semantic, Meaning) else semantic):
        return [], None
    weights = policy.recall_weights
    floor = weights.min_semantic
    best = sorted((i for i, c in semantic.items() if c >= floor), key=lambda i: -semantic[i])
    wanted = best[: policy.recall_k]
    ranks = {r[1]: r[-2] for r in rows if r[0] == KIND_HIT and r[-2] is not None}
    top = follow_top(ranks, semantic, weights)
    wanted += later_word(top, semantic, weights).values() if top else []
    named = named_scan(rows, top, terms) if weights.renames and top and terms else None
    return [i for i in dict.fromkeys(wanted) if i not in have], named


def follow_top(
    ranks: Mapping[int, float], semantic: Mapping[int, float], weights: RecallWeights
) -> list[int]:
    """The hits whose later turns the store fetches before the assembly ranks them (most
    like them, packing.later_word; renaming their slots, memory/renames.py); none without
    vectors or with follow_hits 0."""
    if not isinstance(semantic, Meaning) or not weights.follow_hits:
        return []
    # The assembly's fused ranking adds the prior, which this one cannot see yet: follow
    # twice as many hits here, so the ones it ranks best are all fetched.
    # BM25 alone here (no share of the question: matching every hit's words twice per
    # call cost 0.65 ms more for 120 hits of 16 terms, and fetched the same turns on bench
    # long_memory).
    scores = fuse(normalise_bm25(ranks), semantic, {}, weights)
    ranked = sorted(scores, key=lambda i: -scores[i])
    return semantic.distinct(ranked, 2 * weights.follow_hits, weights.duplicate)


def renamed_in_hand(
    found: RecallRows, top: Sequence[int], semantic: Meaning, terms: Sequence[str]
) -> dict[int, int]:
    """For a small conversation's rows (every older turn in hand): {hit of `top`: the later
    turn that renames its slot} (memory/renames.py), names looked up in those turns."""
    older = [found.turns[i] for i in found.older]
    hits = [found.turns[h] for h in top if h in found.turns]
    cands = candidates(hits, older, semantic.similarity, terms)
    names = names_to_check(cands)
    return picks(cands, names, first_mentions(older, names)) if names else {}


# At most this many slot words go into one scan (each is a pattern it tries on every turn:
# sql.NAMED_SCAN_TURNS).
MAX_SCAN_WORDS = 4


def named_scan(
    rows: Sequence[Sequence], top: Sequence[int], terms: Sequence[str]
) -> NamedScan | None:
    """The scan for later turns that rename the slots of the best hits `top` (those in the
    rows) the question's `terms` ask about (memory/renames.py), or None: none has one."""
    texts = {r[1]: r for r in rows if r[0] in (KIND_HIT, KIND_NEXT, KIND_PREV)}
    hits: dict[int, Turn] = {}
    for h in top:
        if h in texts and asked_slots(texts[h][_TURN][3], terms):  # its content
            hits[h] = turn_from_row(texts[h][_TURN])
    if not hits:
        return None
    slots = (sorted(asked_slots(h.content, terms)) for h in hits.values())
    words = dict.fromkeys(w for slot in slots for w, _ in slot)
    recent = [r[1] for r in rows if r[0] == KIND_RECENT]
    before = min(recent) if recent else 1 << 62
    return NamedScan(hits, min(hits), before, tuple(words)[:MAX_SCAN_WORDS], tuple(terms))


def assemble_context(
    rows: Iterable[Sequence],
    policy: MemoryPolicy,
    terms: Sequence[str] = (),
    *,
    semantic: Mapping[int, float] | None = None,
    query: str = "",
    now: float | None = None,
    renames: Mapping[int, int] | None = None,
) -> ContextWindow:
    """The ContextWindow for the rows of the context statements.

    The KIND_CONVERSATION row holds (kind, message_count, active_count). `terms` are the
    recall query's keyword terms, `semantic` the cosines of the query with older turns
    (semantic_scores), `query` the new message (list questions get diverse snippets), `now`
    the time the dates are rendered against, `renames` {hit: the later turn renaming its slot}
    as the store found them in a long conversation (NamedScan; a small one's rows hold every
    older turn, where the assembly finds them). Raises ConversationNotFound when there is no
    conversation row.
    A KIND_PINNED row is (kind, PINNED_COLUMNS): pinned facts always go in (their size is
    capped when they are pinned), and what they take comes out of the budget first.
    """
    rows = list(rows)
    conv_rows = [r for r in rows if r[0] == KIND_CONVERSATION]
    if not conv_rows:
        raise ConversationNotFound(NOT_FOUND_MESSAGE)
    message_count, active_count = conv_rows[0][1], conv_rows[0][2]
    summary_rows = [r[_TURN] for r in rows if r[0] == KIND_SUMMARY]
    recent_rows = sorted((tuple(r[_TURN]) for r in rows if r[0] == KIND_RECENT), reverse=True)
    recalled: list[RecalledTurn] = []
    if (terms or semantic) and policy.recall_k and has_older(rows):
        recalled = recall_turns(
            recall_rows(rows),
            terms,
            {} if semantic is None else semantic,
            {r[0] for r in recent_rows},
            policy,
            query,
            message_count,
            renames,
        )
    summary = turn_from_row(summary_rows[0]) if summary_rows else None
    if summary is not None and len(summary.content) > policy.summary_chars:
        # Written under an older, larger cap.
        summary = replace(summary, content=clip_for_prompt(summary.content, policy.summary_chars))
    # This conversation's pins first, then "about me"; oldest first within each.
    pinned = sorted(
        (pinned_from_row(r[1:]) for r in rows if r[0] == KIND_PINNED),
        key=_pin_order,
    )
    used = sum(len(p.content) for p in pinned)
    used += len(summary.content) if summary else 0
    used += sum(len(r.turn.content) for r in recalled)
    picked, clipped, evicted, remaining, trimmed = _pick_recent(
        recent_rows, policy.history_chars - used, policy
    )
    return ContextWindow(
        summary=summary,
        turns=picked,
        chars=policy.history_chars - remaining,
        budget=policy.history_chars,
        clipped_ids=clipped,
        evicted_ids=sorted(evicted),
        recalled=recalled,
        # Turns left out only so the window opens on a user turn wait for the next fold like
        # the older ones; turns over the budget are in evicted_ids.
        not_shown=max(0, active_count - len(recent_rows)) + trimmed,
        now=now,
        timezone=policy.timezone,
        pinned=pinned,
    )


def _pin_order(fact: PinnedFact) -> tuple[bool, int]:
    return (fact.about_me, fact.id)


def _pick_recent(
    recent_rows: list[tuple], remaining: int, policy: MemoryPolicy
) -> tuple[list[Turn], list[int], list[int], int, int]:
    """Newest first under `remaining` characters: (picked oldest first, clipped ids, evicted
    ids, characters left, how many of the evicted fitted but an assistant turn cannot open
    the window)."""
    picked: list[Turn] = []
    clipped: list[int] = []
    evicted: list[int] = []
    for row in recent_rows:  # newest first
        turn = turn_from_row(row)
        text = clip_for_prompt(turn.content, policy.message_chars)
        if evicted or len(text) > remaining:
            evicted.append(turn.id)  # everything older than the first that does not fit
            continue
        if text is not turn.content:
            clipped.append(turn.id)
            turn = replace(turn, content=text)
        picked.append(turn)
        remaining -= len(text)
    # The model's history must open on a user message.
    over_budget = bool(evicted)
    trimmed = 0
    while picked and picked[-1].role == "assistant":
        trimmed += not over_budget
        gone = picked.pop()
        evicted.insert(0, gone.id)
        remaining += len(gone.content)
        with suppress(ValueError):
            clipped.remove(gone.id)
    picked.reverse()
    return picked, clipped, evicted, remaining, trimmed


def recall_turns(
    found: RecallRows,
    terms: Sequence[str],
    semantic: Mapping[int, float],
    exclude: set[int],
    policy: MemoryPolicy,
    query: str = "",
    turns: int = 0,
    renames: Mapping[int, int] | None = None,
) -> list[RecalledTurn]:
    """The best older turns as snippets under `recall_chars`: keyword and meaning scores
    fused, each hit with the turns that make it understandable (memory/packing.py)."""
    weights = policy.recall_weights
    if found.older:
        top = follow_top(found.ranks, semantic, weights)
        renames = renamed_in_hand(found, top, semantic, terms) if weights.renames and top else {}
        found = as_fetched(found, semantic, policy, top, renames.values())
    renames = renames or {}
    # One matcher for the whole context: a keyword hit it packs was matched here already.
    find = term_matcher(list(terms))
    keyword = keyword_scores(found.ranks, found.turns, terms, turns, find)
    meaning = {i: c for i, c in semantic.items() if i in found.turns}
    scores = fuse(keyword, meaning, found.prev_of, weights)
    diverse = is_list_question(query)
    # A list question asks for everything said over time, not the latest word on one thing.
    if isinstance(semantic, Meaning) and weights.follow_hits and not diverse:
        ranked = sorted(scores, key=lambda i: (-scores[i], i))
        top = semantic.distinct(ranked, weights.follow_hits, weights.duplicate)
        # Each hit's later word, and the store's pick of a turn renaming its slot.
        links = [*later_word(top, semantic, weights).items()]
        links += [(hit, renames[hit]) for hit in top if hit in renames]
        for hit, later in links:
            if later in found.turns:
                scores[later] = max(scores.get(later, 0.0), weights.follow * scores[hit])
    ids = [i for i in found.vectors if i in found.turns]  # one model's: the statement says which
    vectors = dict(zip(ids, unpack_many([found.vectors[i] for i in ids]), strict=True))
    conv = Conversation(found.turns, found.next_of, found.prev_of, frozenset(exclude))
    return pack(
        conv,
        scores,
        list(terms),
        policy.recall_chars,
        min(policy.message_chars, max(200, policy.recall_chars // 8)),
        keyword=keyword,
        vectors=vectors,
        diverse=diverse,
        weights=policy.recall_weights,
        max_hits=policy.recall_k,
        twins=len(semantic) > 0,
        find=find,
    )
