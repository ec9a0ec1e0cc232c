"""The Summarizer protocol and the built-in extractive summarizer (no model needed).

A summarizer folds the previous summary and a run of older turns into one new summary of at
most `max_chars`. The store calls it outside any transaction. `ExtractiveSummarizer` is the
default, and what a model-backed summarizer should fall back to when the model fails.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .records import Turn


@runtime_checkable
class Summarizer(Protocol):
    async def summarize(self, previous: str | None, turns: list[Turn], max_chars: int) -> str:
        """Fold `previous` (the last summary, if any) and `turns` into one text <= max_chars."""
        ...


# Facts about the user, said by the user: who they are, where they live, what they like.
_FIRST_PERSON = re.compile(
    r"\b(i am|i'm|i was|i live|i lived|i work|i worked|i like|i love|i hate|i prefer|i have|"
    r"i've|i had|i own|i need|i want|i study|i moved|i grew up|i was born|i speak|i use|"
    r"i visited|i went|i ate|i'll|i will|i plan|my|mine|call me)\b"
    r"|我(是|叫|的|住|在|喜欢|喜歡|有|想|要|爱|愛|去|來|来)|私は|私の|僕|제 |저는|나는",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_MONTH_OR_DAY = re.compile(
    r"\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(tember)?|"
    r"oct(ober)?|nov(ember)?|dec(ember)?|monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday|today|tomorrow|yesterday)\b|[年月日号號]",
    re.IGNORECASE,
)
# A capitalized word that is not the first word of its sentence and not "I": likely a name.
_NAME = re.compile(r"(?<=[\s,;:(\"'])(?!I\b)[A-Z][\w'-]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_ROLE_PREFIX = re.compile(r"^-\s*(User|Assistant|Tool):\s*", re.IGNORECASE)

FACT_CHARS = 300  # one sentence never eats the whole summary
_PREVIOUS_SHARE = 0.75  # previous first-person facts may fill at most this share of the cap


@dataclass
class _Fact:
    text: str  # the line as written in the summary, "- User: ..."
    tier: int  # 0 = most important
    previous: bool
    order: int


def _sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE_END.split(text):
        part = " ".join(part.split())
        if len(part) >= 2:
            out.append(part if len(part) <= FACT_CHARS else part[: FACT_CHARS - 1] + "…")
    return out


def _key(text: str) -> str:
    text = _ROLE_PREFIX.sub("", text)
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if ch.isalnum())


def _tier(sentence: str, role: str) -> int | None:
    """0 first-person fact from the user, 1 salient user sentence (name, number, date),
    2 salient assistant sentence, 3 other user statement; None: not worth keeping
    (a plain question, small talk from the assistant)."""
    salient = bool(
        _DIGIT.search(sentence) or _MONTH_OR_DAY.search(sentence) or _NAME.search(sentence)
    )
    if role == "user":
        if _FIRST_PERSON.search(sentence):
            return 0
        if salient:
            return 1
        return None if sentence.endswith(("?", "？")) else 3
    if role == "assistant":
        return 2 if salient else None
    if role == "tool":  # what was looked up: short, and later turns may depend on it
        return 0
    # A line of an earlier summary written by someone else (a model): keep what is salient.
    return 0 if salient or _FIRST_PERSON.search(sentence) else 1


def _previous_facts(previous: str) -> list[_Fact]:
    facts = []
    for line in previous.splitlines():
        line = line.strip()
        if not line:
            continue
        m = _ROLE_PREFIX.match(line)
        if m:
            role = m.group(1).lower()
            tier = _tier(line[m.end() :], role)
            facts.append(_Fact(line, 3 if tier is None else tier, True, len(facts)))
        else:
            for sentence in _sentences(line.lstrip("-• ")):
                facts.append(_Fact("- " + sentence, _tier(sentence, "summary") or 0, True, 0))
    for i, f in enumerate(facts):
        f.order = i
    return facts


class ExtractiveSummarizer:
    """Keeps the sentences that carry facts: first-person statements, names, numbers, dates.

    Order of priority: the previous summary's facts (so nothing it knew is lost while it
    fits), then new first-person facts, then new names/numbers/dates, then plain statements.
    So that the summary never freezes, new first-person facts may claim up to a quarter of the
    cap from the previous summary's newest lines. Duplicates are dropped; a longer restatement
    replaces a fact it contains. Output: one "- User: ..." line per fact, oldest first.
    """

    async def summarize(self, previous: str | None, turns: list[Turn], max_chars: int) -> str:
        # Pure CPU work (regexes over up to fold_max turns): keep it off the event loop.
        return await asyncio.to_thread(self.summarize_sync, previous, turns, max_chars)

    def summarize_sync(self, previous: str | None, turns: Sequence[Turn], max_chars: int) -> str:
        old = _previous_facts(previous) if previous else []
        new: list[_Fact] = []
        for turn in turns:
            if turn.role not in ("user", "assistant"):
                continue
            role = "tool" if turn.is_tool_note else turn.role
            label = "Tool" if turn.is_tool_note else turn.who
            for sentence in _sentences(turn.content):
                tier = _tier(sentence, role)
                if tier is not None:
                    new.append(_Fact(f"- {label}: {sentence}", tier, False, len(new)))

        new_first_person = sum(len(f.text) + 1 for f in new if f.tier == 0)
        reserve = min(int(max_chars * (1 - _PREVIOUS_SHARE)), new_first_person)
        phases = [
            ([f for f in old if f.tier < 3], max_chars - reserve),
            ([f for f in new if f.tier == 0], max_chars),
            (sorted((f for f in new if f.tier in (1, 2)), key=lambda f: (f.tier, f.order)), 0),
            # Whatever the reserve held back, then plain statements, while room is left.
            ([f for f in old if f.tier < 3], max_chars),
            ([f for f in old + new if f.tier == 3], max_chars),
        ]
        kept: list[_Fact] = []
        keys: dict[int, str] = {}  # id(fact) -> dedupe key
        used = 0
        for candidates, limit in phases:
            limit = limit or max_chars
            for f in candidates:
                if id(f) in keys:
                    continue
                k = _key(f.text)
                if not k or any(k in other for other in keys.values()):
                    continue
                cost = len(f.text) + (1 if kept else 0)
                if used + cost > limit:
                    continue
                for other in [o for o in kept if keys[id(o)] in k]:  # restated at more length
                    kept.remove(other)
                    used -= len(other.text) + 1
                    del keys[id(other)]
                keys[id(f)] = k
                kept.append(f)
                used += cost
        # Read in conversation order: the old summary's lines, then the new ones.
        kept.sort(key=lambda f: (0 if f.previous else 1, f.order))
        text = "\n".join(f.text for f in kept)
        if not text and turns:
            text = "- " + " ".join(turns[-1].content.split())
        return text[:max_chars]
