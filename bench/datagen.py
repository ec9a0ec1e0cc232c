"""Synthetic workloads: bulk message corpora and conversations with planted facts.

Everything is generated from a seeded RNG, so every design in a run sees the same data and
runs are repeatable. Bulk corpora are written with executemany straight into each design's
own schema (see the loaders next to each design); generating the text is kept cheap by
drawing message bodies from a pre-built pool.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

_WORDS = (
    "the a an and but so because then really quite just maybe probably think know want need "
    "like feel see look make take give find tell ask work try call keep let begin seem help "
    "talk turn start show hear play run move live believe bring happen write provide sit stand "
    "lose pay meet include continue set learn change lead understand watch follow stop create "
    "speak read allow add spend grow open walk win offer remember love consider appear buy wait "
    "serve die send expect build stay fall cut reach kill remain suggest raise pass sell require "
    "report decide pull project plan weekend morning evening idea problem question answer story "
    "book movie garden kitchen trip train coffee weather music recipe code bug meeting deadline "
    "email office river mountain city window table paper phone picture dinner lunch team friend "
    "neighbour colleague teacher doctor"
)
WORDS = _WORDS.split()

# Distractor entities sprinkled through filler so a summarizer that keeps "names, numbers and
# first-person facts" has to choose; none of them is ever a planted fact's key word.
_DISTRACTORS = "Lisbon Oslo Kyoto Denver Porto Madrid Quito Tallinn Lyon Austin"
DISTRACTOR_NAMES = _DISTRACTORS.split()
DISTRACTOR_TEMPLATES = (
    "I think the {name} trip took about {n} minutes longer than planned.",
    "My commute was {n} minutes today, the traffic near {name} was awful.",
    "I read {n} pages of that novel set in {name} last night.",
    "My phone battery died at {n} percent again while I was in {name}.",
    "I like how the {name} team handled the release, {n} tickets closed.",
)

ASSISTANT_OPENERS = (
    "That makes sense.",
    "Good question.",
    "Here is one way to look at it.",
    "I understand.",
    "Let me think about that.",
    "Sure.",
)


def sentence(rng: random.Random, low: int = 6, high: int = 18) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def filler_message(rng: random.Random, role: str, sentences: tuple[int, int] = (1, 4)) -> str:
    """A plausible chat message without any planted fact's key words."""
    parts = [sentence(rng) for _ in range(rng.randint(*sentences))]
    if role == "user" and rng.random() < 0.3:
        template = rng.choice(DISTRACTOR_TEMPLATES)
        parts.insert(0, template.format(name=rng.choice(DISTRACTOR_NAMES), n=rng.randint(2, 99)))
    if role == "assistant":
        parts.insert(0, rng.choice(ASSISTANT_OPENERS))
    return " ".join(parts)


def message_pool(seed: int = 1, size: int = 4096) -> list[str]:
    """Pre-generated message bodies (about 60-400 chars) for bulk corpora."""
    rng = random.Random(seed)
    return [filler_message(rng, "user" if i % 2 == 0 else "assistant") for i in range(size)]


@dataclass(frozen=True)
class Corpus:
    """n_conversations conversations of messages_per_conversation messages each."""

    n_conversations: int
    messages_per_conversation: int
    seed: int = 42
    start_ts: float = 1_767_225_600.0  # 2026-01-01 UTC; one message a minute per conversation

    @property
    def total(self) -> int:
        return self.n_conversations * self.messages_per_conversation

    def rows(self, pool: list[str]) -> Iterator[tuple[int, int, str, str, float]]:
        """(conversation index, position, role, content, created_at) in insertion order.

        Conversations are interleaved (all first messages, then all second ones, ...) the way
        real traffic arrives, so one conversation's rows are spread across the whole table.
        """
        n_pool = len(pool)
        for pos in range(self.messages_per_conversation):
            role = "user" if pos % 2 == 0 else "assistant"
            ts = self.start_ts + pos * 60.0
            for conv in range(self.n_conversations):
                yield conv, pos, role, pool[(conv * 7919 + pos * 104_729) % n_pool], ts + conv / 1e4


# --- conversations with planted facts (memory quality) -------------------------------------

_FACT_NAMES = (
    "Okonkwo Vasquez-Lindqvist Thistlewood Abernathy Kowalczyk Moreau Nakashima Fairweather "
    "Oyelaran Castellanos Petrovska Harrowgate Villeneuve Quimby Delacroix Ferreira"
)
FACT_NAMES = _FACT_NAMES.split()
FACT_ROLES = ("dentist", "landlord", "piano teacher", "accountant", "manager", "vet")
FACT_THINGS = ("locker code", "flight number", "apartment number", "bike lock code", "PIN hint")
FACT_EVENTS = ("sister's wedding", "visa interview", "marathon", "dissertation defense", "surgery")
_MONTHS = "January February March April May June July August September October November December"
MONTHS = _MONTHS.split()
FACT_PREFS = (
    ("tea", "oolong"),
    ("cuisine", "Ethiopian"),
    ("composer", "Rachmaninoff"),
    ("board game", "Carcassonne"),
    ("flower", "ranunculus"),
    ("fruit", "persimmon"),
    ("sport", "badminton"),
    ("painter", "Hokusai"),
)


@dataclass(frozen=True)
class Fact:
    kind: str  # name | number | date | preference
    statement: str  # what the user says, planted among filler
    question: str  # what the user asks at the end
    keywords: tuple[str, ...]  # all must appear (case-insensitive) in the context


def make_fact(rng: random.Random, kind: str, used: set[str]) -> Fact:
    def fresh(pick):  # never plant the same key word twice in one conversation
        while True:
            value = pick()
            if value not in used:
                used.add(value)
                return value

    if kind == "name":
        role = fresh(lambda: rng.choice(FACT_ROLES))
        name = fresh(lambda: rng.choice(FACT_NAMES))
        return Fact(
            kind,
            f"By the way, my {role} is called {name}, I keep forgetting to write it down.",
            f"What was the name of my {role} again?",
            (name,),
        )
    if kind == "number":
        thing = fresh(lambda: rng.choice(FACT_THINGS))
        number = str(rng.randint(1000, 99999))
        return Fact(
            kind,
            f"Note for later: my {thing} is {number}.",
            f"What is my {thing}?",
            (number,),
        )
    if kind == "date":
        event = fresh(lambda: rng.choice(FACT_EVENTS))
        month, day = rng.choice(MONTHS), rng.randint(1, 28)
        return Fact(
            kind,
            f"My {event} is on {month} {day}, so I cannot travel that week.",
            f"When is my {event}?",
            (f"{month} {day}",),
        )
    category, choice = fresh(lambda: rng.choice(FACT_PREFS))
    return Fact(
        kind,
        f"I really like {choice} more than anything else when it comes to {category}.",
        f"Which {category} do I like best?",
        (choice,),
    )


@dataclass
class PlantedConversation:
    """Messages (role, content) with facts planted at random user turns; questions after."""

    messages: list[tuple[str, str]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    fact_positions: list[int] = field(default_factory=list)


def planted_conversation(
    seed: int, n_messages: int, n_facts: int, *, tail_free: int = 40
) -> PlantedConversation:
    """A conversation of n_messages with n_facts planted at random user turns.

    No fact lands in the last `tail_free` messages, so remembering it needs more than the recent
    window of any strategy (otherwise every design would trivially score it).
    """
    rng = random.Random(seed)
    kinds = ("name", "number", "date", "preference")
    used: set[str] = set()
    facts = [make_fact(rng, kinds[i % len(kinds)], used) for i in range(n_facts)]
    user_positions = list(range(0, max(2, n_messages - tail_free), 2))
    positions = sorted(rng.sample(user_positions, min(n_facts, len(user_positions))))
    by_position = dict(zip(positions, facts, strict=False))
    conv = PlantedConversation(facts=facts, fact_positions=positions)
    for pos in range(n_messages):
        role = "user" if pos % 2 == 0 else "assistant"
        if pos in by_position:
            content = by_position[pos].statement + " " + sentence(rng)
        else:
            content = filler_message(rng, role)
        conv.messages.append((role, content))
    return conv


def found(fact: Fact, context_text: str) -> bool:
    text = context_text.lower()
    return all(k.lower() in text for k in fact.keywords)
