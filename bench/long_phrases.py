"""The shapes of the long-memory benchmark's phrase banks (bench/long_phrases_en.py, _zh.py).

A template's `{v}` is the planted value (what the question asks back), `{a}` an anchor that
ties a distractor fact to its question (a pet's name), `{old}`/`{new}` the two values of an
updated fact, `{when}` a relative date. Filler templates take named slots (`{dish}`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Topic:
    """Everyday chat about one subject: user lines and assistant replies, with slots."""

    name: str
    users: list[str]
    replies: list[str]  # replies[i] answers users[i]
    more: list[str] = field(default_factory=list)  # sentences that fit any reply on the topic

    def __post_init__(self) -> None:
        if len(self.users) != len(self.replies):
            raise ValueError(f"Topic {self.name!r}: every user line needs its own reply")


@dataclass(frozen=True)
class ParaphraseFact:
    """Asked back in words that share no content word with the fact."""

    topic: str
    fact: str
    question: str
    values: list[str]


@dataclass(frozen=True)
class ListFact:
    """One question whose answer is spread over 3-5 turns, one item each."""

    topic: str
    question: str
    items: list[str]
    values: list[str]


@dataclass(frozen=True)
class WhenFact:
    """The fact says when in relative words; the answer is the absolute date."""

    topic: str
    fact: str
    question: str


@dataclass(frozen=True)
class UpdatedFact:
    """Stated early, changed later; the answer is the newer value. Some updates name the old
    value, some do not (then only the newer turn knows, and it shares fewer words)."""

    topic: str
    old: str
    new: list[str]
    question: str
    values: list[str]


@dataclass(frozen=True)
class DistractorFact:
    """Asked among turns that share the question's words but not its answer."""

    topic: str
    fact: str
    question: str
    distractors: list[str]
    values: list[str]
    anchors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Language:
    """Everything the generator needs to write conversations in one language."""

    code: str  # "en" or "zh-Hant"
    persona_id: str  # the built-in persona such a conversation uses
    slots: dict[str, list[str]]
    topics: list[Topic]
    acks: list[str]  # assistant replies to a planted fact: never repeat a value
    follow_ups: list[str]
    asides: list[str]  # assistant replies to a distractor turn: generic, never an answer
    # Passing remarks added to some user turns ("my coworker Priya keeps talking about
    # sourdough"): with their slots they make thousands of distinct sentences, as real chat
    # has, so no summary can keep every user sentence of a long conversation.
    chatter: list[str]
    # The assistant's word on a passing remark ("If Priya likes sourdough, ask how she
    # started."): with the remark's slots, so a reply to the same question differs as in real
    # chat instead of repeating word for word.
    reactions: list[str]
    paraphrases: list[ParaphraseFact]
    lists: list[ListFact]
    whens: list[WhenFact]
    updates: list[UpdatedFact]
    distractors: list[DistractorFact]
    relative_days: dict[str, int]  # "yesterday" -> 1: how many days before the turn
    week_words: tuple[str, ...]  # of those, the ones that name a week ("last week")
    forbidden_in_filler: str  # a regex of relative dates that filler must never contain
