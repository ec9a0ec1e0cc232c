"""Long conversations with planted facts, generated from a seed, and the checks that keep them
honest (the long-memory benchmark's data; see bench/long_memory.py for how it is scored).

A conversation is >= 600 messages, user and assistant alternating, in sessions a few days
apart (each session within one UTC date, between 01:00 and 16:00 UTC, so the date is the same
in UTC and in Taiwan). Everyday chat on rotating topics surrounds planted user turns; the
questions are asked after the last message. Five kinds, in English and Traditional Chinese:

- paraphrase: the question shares no content word with the fact (checked after Porter
  stemming; for Chinese, no shared character bigram);
- list: the answer is spread over 3-5 turns in different parts of the conversation;
- when: the fact says "yesterday", "two days ago", "a week ago", "last week" (昨天, 前天,
  一週前, 上週 ...); the answer is the absolute date, computed from the turn's own timestamp
  (UTC): the day meant, or for "last week" / 上週 the Monday of the week meant ("the week of
  ..."), "a week ago" being seven days before. It counts written as 2026-03-14, 14 March 2026,
  March 14, 2026 or 2026年3月14日 (see `date_forms`);
- updated: a value stated early and changed later; the answer is the newer value (an answer
  with only the older value is wrong; with both it counts, and which is newer is then visible
  from the order and the dates);
- distractor: 8-11 other turns share the question's words but not its answer.

Nothing planted sits in the last 70 messages, so no answer is in the recent window by luck.
How a turn is answered does not say whether it holds a fact: some everyday turns get the short
acknowledgement a fact gets, and some facts the generic reply a passing remark gets.

`check()` runs on every generated conversation and raises GenerationError when a rule breaks:
no answer appears anywhere but its evidence turns (the full transcript, dates and annotated
relative dates included, is searched without them), filler names no relative date, the
paraphrase and distractor properties above hold. A gold answer is therefore findable only by
showing the model its evidence.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
import sqlite3
from dataclasses import dataclass, field

from bench.long_phrases import Language

DAY = 86_400
TAIL_PAIRS = 35  # the last 70 messages are filler only
# How a fact's turn is answered must not give it away: some everyday turns get the short
# acknowledgement a fact gets ("Got it, I'll keep that in mind."), and some facts get the
# generic reply a passing remark gets. Otherwise "a user turn answered by an acknowledgement"
# would find every planted fact and nothing else.
ACK_IN_FILLER = 0.15
ASIDE_AFTER_FACT = 0.3
# Share of everyday turns with a passing remark (and the assistant's word on it). Real chat
# seldom says the same thing twice; with a remark in most turns, and the reply answering it,
# a topic's few stock lines no longer make near-identical turns (measured: see bench/README).
REMARKS = 0.8
DATE_FORMAT = "%Y-%m-%d"
FIRST_DAY = dt.datetime(2026, 1, 5, tzinfo=dt.UTC).timestamp()
KINDS = ("paraphrase", "list", "when", "updated", "distractor")

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_LATIN_WORD = re.compile(rf"[^\W\d_{_CJK}]+")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# A general English stopword list, the benchmark's own (independent of memory/'s), used only
# to decide which words of a question and a fact count as content words.
_STOPWORDS_TEXT = """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves s t d ll m re ve don didn doesn isn wasn let"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


class GenerationError(AssertionError):
    """A generated conversation breaks one of the benchmark's rules (a template or seed bug)."""


@dataclass(frozen=True)
class Message:
    role: str
    content: str
    created_at: float  # unix seconds, UTC


@dataclass(frozen=True)
class Question:
    id: str
    kind: str  # one of KINDS
    language: str  # "en" or "zh-Hant"
    text: str
    gold: tuple[str, ...]  # every one must be in what the model receives
    evidence: tuple[int, ...]  # indexes of the messages that state the answer
    stale: tuple[str, ...] = ()  # "updated": the older value
    distractors: tuple[int, ...] = ()  # "distractor": indexes of the distractor turns


@dataclass(frozen=True)
class LongConversation:
    id: str
    language: Language
    messages: tuple[Message, ...]
    questions: tuple[Question, ...]
    asked_at: float  # when the questions are asked: after the last message

    @property
    def persona_id(self) -> str:
        return self.language.persona_id


def day_of(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime(DATE_FORMAT)


def meant_day(word: str, ts: float, language: Language) -> str:
    """The date (YYYY-MM-DD) a relative date in a turn written at `ts` means."""
    day = dt.datetime.fromtimestamp(ts, dt.UTC).date()
    if word in language.week_words:  # a week: its Monday
        day -= dt.timedelta(days=day.weekday() + 7)
    else:
        day -= dt.timedelta(days=language.relative_days[word])
    return day.strftime(DATE_FORMAT)


def date_forms(iso: str) -> list[str]:
    """The ways a renderer may write the date: ISO, "14 March 2026", "March 14, 2026",
    "2026年3月14日". Any one counts; all name the day unambiguously."""
    d = dt.date.fromisoformat(iso)
    month = d.strftime("%B")
    return [iso, f"{d.day} {month} {d.year}", f"{month} {d.day}, {d.year}",
            f"{d.year}年{d.month}月{d.day}日"]  # fmt: skip


# -- matching and rendering (shared by the checks and the scoring) ---------------------------


def contains(text: str, term: str) -> bool:
    """Whether `term` is in `text`: a whole word, case-insensitive, for Latin words; as is for
    dates and Chinese."""
    if _DATE.match(term):  # no digit before: "4 March" is not in "14 March"
        return any(re.search(rf"(?<!\d){re.escape(f)}", text) for f in date_forms(term))
    if _CJK_RUN.search(term) or not term[:1].isalnum():
        return term in text
    return re.search(rf"(?<![^\W_]){re.escape(term)}(?![^\W_])", text, re.IGNORECASE) is not None


def found(question: Question, text: str) -> bool:
    """The benchmark's criterion: every gold term of the question is in `text`."""
    return all(contains(text, term) for term in question.gold)


def _relative_pattern(language: Language) -> re.Pattern[str]:
    words = sorted(language.relative_days, key=len, reverse=True)
    if language.code == "en":
        return re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)
    return re.compile("(" + "|".join(map(re.escape, words)) + ")")


def annotate(text: str, created_at: float, language: Language) -> str:
    """Each relative date followed by the absolute date it means: "yesterday (2026-03-14)"."""

    def absolute(m: re.Match[str]) -> str:
        word = m.group(1).lower() if language.code == "en" else m.group(1)
        meant = meant_day(word, created_at, language)
        return f"{m.group(1)} ({'week of ' if word in language.week_words else ''}{meant})"

    return _relative_pattern(language).sub(absolute, text)


def render_transcript(messages: list[Message], language: Language) -> str:
    """Turns as the benchmark's reference designs show them: a date line whenever the date
    changes, then "role: text" with relative dates annotated (see `annotate`)."""
    lines: list[str] = []
    current = None
    for m in messages:
        day = day_of(m.created_at)
        if day != current:
            lines.append(f"[{day}]")
            current = day
        lines.append(f"{m.role}: {annotate(m.content, m.created_at, language)}")
    return "\n".join(lines)


# -- content words --------------------------------------------------------------------------


@functools.cache
def _stem_db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE words USING fts5(w, tokenize = 'porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE stems USING fts5vocab(words, 'row')")
    return db


@functools.lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """The Porter stem SQLite's FTS5 gives `word` (the stemmer Mnemo's keyword index uses)."""
    db = _stem_db()
    db.execute("INSERT INTO words (w) VALUES (?)", (word,))
    rows = db.execute("SELECT term FROM stems").fetchall()
    db.execute("DELETE FROM words")
    return rows[0][0] if rows else word.lower()


def content_terms(text: str) -> set[str]:
    """Stemmed content words of the Latin text, and every character bigram of the Chinese."""
    terms = {
        stem(w.lower())
        for w in _LATIN_WORD.findall(text)
        if w.lower() not in STOPWORDS and len(w) > 1
    }
    for run in _CJK_RUN.findall(text):
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return terms


# -- generation -----------------------------------------------------------------------------


@dataclass
class _Planted:
    user: str
    reply: str


@dataclass
class _Plan:
    """Where everything goes in one conversation, by pair (a user turn and its reply)."""

    rng: random.Random
    language: Language
    n_pairs: int
    pair_times: list[float]
    session_days: set[str]
    planted: dict[int, _Planted] = field(default_factory=dict)
    used_values: set[str] = field(default_factory=set)
    used_dates: set[str] = field(default_factory=set)

    def take(self, lo: float = 0.0, hi: float = 1.0) -> int:
        """A free pair between fractions lo and hi of the plantable span."""
        span = self.n_pairs - TAIL_PAIRS - 1
        start, stop = 1 + int(span * lo), 1 + max(int(span * hi), int(span * lo) + 1)
        free = [p for p in range(start, stop) if p not in self.planted]
        if not free:
            raise GenerationError(
                f"No free turn left between {lo:.0%} and {hi:.0%}: make the conversation "
                "longer or plant fewer facts."
            )
        return self.rng.choice(free)

    def value(self, pool: list[str]) -> str:
        free = [v for v in pool if v not in self.used_values]
        if not free:
            raise GenerationError(f"Every value of {pool} is used; add values to the bank.")
        chosen = self.rng.choice(free)
        self.used_values.add(chosen)
        return chosen

    def plant(self, pair: int, user: str, reply: str | None = None) -> int:
        if reply is None:  # not always a bare acknowledgement: see ACK_IN_FILLER
            lang = self.language
            reply = self.rng.choice(
                lang.asides if self.rng.random() < ASIDE_AFTER_FACT else lang.acks
            )
        self.planted[pair] = _Planted(user, reply)
        return 2 * pair


def _schedule(rng: random.Random, n_pairs: int) -> tuple[list[float], set[str]]:
    """A timestamp per pair (the user turn's), in sessions 2-9 days apart."""
    times: list[float] = []
    days: set[str] = set()
    day = FIRST_DAY + rng.randint(0, 120) * DAY
    while len(times) < n_pairs:
        t = day + rng.randint(3_600, 11 * 3_600)
        days.add(day_of(day))
        for _ in range(min(rng.randint(30, 55), n_pairs - len(times))):
            times.append(t)
            t += rng.randint(40, 280)
        day += rng.randint(2, 9) * DAY
    return times, days


def _plant_paraphrase(plan: _Plan, fact, n: int, qid: str) -> Question:
    v = plan.value(fact.values)
    at = plan.plant(plan.take(), fact.fact.format(v=v))
    return Question(qid, "paraphrase", plan.language.code, fact.question, (v,), (at,))


def _plant_list(plan: _Plan, fact, n: int, qid: str) -> Question:
    k = plan.rng.randint(3, min(5, len(fact.items)))
    templates = plan.rng.sample(fact.items, k)
    values = [plan.value(fact.values) for _ in range(k)]
    # One item per k-th of the conversation, so the answer really is spread out.
    at = tuple(
        plan.plant(plan.take(i / k, (i + 1) / k), t.format(v=v))
        for i, (t, v) in enumerate(zip(templates, values, strict=True))
    )
    return Question(qid, "list", plan.language.code, fact.question, tuple(values), at)


def _plant_when(plan: _Plan, fact, n: int, qid: str) -> Question:
    for _ in range(50):  # another turn when every relative date there is taken
        pair = plan.take()
        words = list(plan.language.relative_days)
        plan.rng.shuffle(words)
        for word in words:
            gold = meant_day(word, plan.pair_times[pair], plan.language)
            # Unique: no session on that date, no other planted date resolving to it.
            if gold not in plan.session_days and gold not in plan.used_dates:
                plan.used_dates.add(gold)
                at = plan.plant(pair, fact.fact.format(when=word))
                return Question(qid, "when", plan.language.code, fact.question, (gold,), (at,))
    raise GenerationError(f"No relative date for {fact.topic!r} resolves to a free date.")


def _plant_updated(plan: _Plan, fact, n: int, qid: str) -> Question:
    old, new = plan.value(fact.values), plan.value(fact.values)
    plan.plant(plan.take(0.0, 0.4), fact.old.format(old=old))
    template = plan.rng.choice(fact.new)
    at = plan.plant(plan.take(0.5, 1.0), template.format(old=old, new=new))
    return Question(qid, "updated", plan.language.code, fact.question, (new,), (at,), (old,))


def _plant_distractor(plan: _Plan, fact, n: int, qid: str) -> Question:
    anchor = plan.value(fact.anchors) if fact.anchors else ""
    v = plan.value(fact.values)
    at = plan.plant(plan.take(0.1, 0.9), fact.fact.format(v=v, a=anchor))
    k = plan.rng.randint(min(8, len(fact.distractors)), len(fact.distractors))
    others = tuple(
        plan.plant(plan.take(), d.format(a=anchor), plan.rng.choice(plan.language.asides))
        for d in plan.rng.sample(fact.distractors, k)
    )
    text = fact.question.format(a=anchor)
    return Question(qid, "distractor", plan.language.code, text, (v,), (at,), (), others)


_PLANTERS = {
    "paraphrase": ("paraphrases", _plant_paraphrase),
    "list": ("lists", _plant_list),
    "when": ("whens", _plant_when),
    "updated": ("updates", _plant_updated),
    "distractor": ("distractors", _plant_distractor),
}


def _filler(plan: _Plan) -> list[tuple[str, str]]:
    """Everyday chat for every pair not planted: topic runs of 2-6 exchanges."""
    rng, lang = plan.rng, plan.language
    pairs: list[tuple[str, str]] = []
    topic, left, last = None, 0, None
    joiner = " " if lang.code == "en" else ""

    for p in range(plan.n_pairs):
        if p in plan.planted:
            pairs.append((plan.planted[p].user, plan.planted[p].reply))
            continue
        if left <= 0:
            topic = rng.choice([t for t in lang.topics if t is not last])
            left, last = rng.randint(2, 6), topic
        left -= 1
        i = rng.randrange(len(topic.users))
        extra = rng.sample(topic.more, rng.choice((0, 1, 1, 2)))
        slots = {k: rng.choice(v) for k, v in lang.slots.items()}  # the same in both turns
        user = topic.users[i].format(**slots)
        reaction = []
        if rng.random() < REMARKS:
            remark = rng.choice(lang.chatter).format(**slots)
            user = joiner.join([user, remark[0].upper() + remark[1:]])
            reaction = [rng.choice(lang.reactions)]
        reply = joiner.join([topic.replies[i], *extra, *reaction]) + rng.choice(lang.follow_ups)
        if rng.random() < ACK_IN_FILLER:
            reply = rng.choice(lang.acks)
        reply = reply.format(**slots)
        pairs.append((user, reply[0].upper() + reply[1:]))
    return pairs


def generate(seed: int, language: Language, n_messages: int, per_kind: int,
             conv_id: str) -> LongConversation:  # fmt: skip
    """One conversation of `n_messages` (even) with up to `per_kind` questions of each kind."""
    if n_messages % 2 or n_messages < 2 * (TAIL_PAIRS + 40):
        raise GenerationError(f"n_messages must be even and at least {2 * (TAIL_PAIRS + 40)}")
    rng = random.Random(seed)
    n_pairs = n_messages // 2
    times, days = _schedule(rng, n_pairs)
    plan = _Plan(rng, language, n_pairs, times, days)
    questions = []
    for kind in KINDS:
        bank_name, planter = _PLANTERS[kind]
        bank = getattr(language, bank_name)
        for n, fact in enumerate(rng.sample(bank, min(per_kind, len(bank)))):
            questions.append(planter(plan, fact, n, f"{conv_id}/{kind}-{n}"))
    messages = []
    for p, (user, reply) in enumerate(_filler(plan)):
        messages.append(Message("user", user, times[p]))
        messages.append(Message("assistant", reply, times[p] + rng.randint(5, 30)))
    conv = LongConversation(
        conv_id, language, tuple(messages), tuple(questions), messages[-1].created_at + 120
    )
    check(conv, min_messages=min(n_messages, 600))
    return conv


def corpus(
    seed: int, n_conversations: int, n_messages: int, per_kind: int
) -> list[LongConversation]:
    """The benchmark's conversations: every third one (from the second) in Traditional Chinese."""
    from bench.long_phrases_en import ENGLISH
    from bench.long_phrases_zh import CHINESE

    out = []
    for i in range(n_conversations):
        language = CHINESE if i % 3 == 1 else ENGLISH
        # A Chinese character carries about what an English word does: more messages keep a
        # Chinese conversation's size in characters, and so its share of a budget, comparable.
        n = n_messages if language is ENGLISH else n_messages * 2
        conv_id = f"{language.code}-{i}"
        out.append(generate(seed * 1_000 + i, language, n, per_kind, conv_id))
    return out


# -- checks ---------------------------------------------------------------------------------


def check(conv: LongConversation, min_messages: int = 600) -> None:
    """Raise GenerationError unless `conv` keeps every rule in the module docstring."""
    msgs, lang = list(conv.messages), conv.language
    if len(msgs) < min_messages:
        raise GenerationError(f"{conv.id}: {len(msgs)} messages, fewer than {min_messages}")
    for i, m in enumerate(msgs):
        if m.role != ("user" if i % 2 == 0 else "assistant"):
            raise GenerationError(f"{conv.id}: message {i} is {m.role}; roles must alternate")
        if i and not msgs[i - 1].created_at < m.created_at:
            raise GenerationError(f"{conv.id}: message {i} is not later than the one before")
        gap = m.created_at - msgs[i - 1].created_at if i else 0
        if i and gap > 6 * 3_600 and gap < 1.5 * DAY:
            raise GenerationError(f"{conv.id}: message {i} starts a session too soon")
    when_turns = {i for q in conv.questions if q.kind == "when" for i in q.evidence}
    relative = re.compile(lang.forbidden_in_filler, re.IGNORECASE)
    for i, m in enumerate(msgs):
        hit = _relative_pattern(lang).search(m.content) or relative.search(m.content)
        if hit and i not in when_turns:
            raise GenerationError(f"{conv.id}: message {i} names a relative date: {m.content!r}")
    rendered = [render_transcript([m], lang) for m in msgs]
    for q in conv.questions:
        _check_question(conv, q, rendered)


def _check_question(conv: LongConversation, q: Question, rendered: list[str]) -> None:
    evidence = "\n".join(rendered[i] for i in q.evidence)
    rest = "\n".join(r for i, r in enumerate(rendered) if i not in q.evidence)
    for term in q.gold:
        if not contains(evidence, term):
            raise GenerationError(f"{q.id}: gold {term!r} is not in its evidence turns")
        if contains(rest, term) or contains(q.text, term):
            raise GenerationError(f"{q.id}: gold {term!r} appears outside its evidence turns")
    if q.kind == "list":
        for i in q.evidence:  # each turn carries one item: all turns are needed
            if sum(contains(rendered[i], t) for t in q.gold) != 1:
                raise GenerationError(f"{q.id}: list turn {i} does not carry exactly one item")
    asked = content_terms(q.text)
    if q.kind == "paraphrase":
        shared = asked & content_terms(conv.messages[q.evidence[0]].content)
        if shared:
            raise GenerationError(f"{q.id}: the paraphrase shares {sorted(shared)} with the fact")
    if q.kind == "distractor":
        for i in q.distractors:
            if not asked & content_terms(conv.messages[i].content):
                raise GenerationError(f"{q.id}: distractor {i} shares no word with the question")
