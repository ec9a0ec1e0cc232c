"""Plain data the store hands out: conversations, turns, context windows, status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["failed", "stopped", "incomplete"]
Role = Literal["user", "assistant", "summary"]
Origin = Literal["edited", "tool"]
MetricsStatus = Literal["ok", "error", "stopped", "refused"]
METRICS_STATUSES = ("ok", "error", "stopped", "refused")


@dataclass(frozen=True)
class Conversation:
    id: str
    owner: str
    title: str | None
    persona_id: str
    persona_version: int | None
    retention_minutes: int | None
    created_at: float
    last_active_at: float
    message_count: int  # user + assistant messages, compacted ones included
    active_count: int  # messages not yet folded into a summary
    chars: int  # characters of all user + assistant messages
    expires_at: float | None  # None: kept until deleted


@dataclass(frozen=True)
class Turn:
    id: int | None  # None only for a message that could not be saved (see assistant.failopen)
    conversation_id: str
    role: Role
    content: str
    created_at: float
    is_summary: bool = False
    compacted: bool = False  # folded into a summary: in the transcript, out of the context
    covers_from_id: int | None = None  # for a summary: the turn ids it covers, inclusive
    covers_to_id: int | None = None
    covers_count: int | None = None  # for a summary: how many messages it covers in all
    incomplete: bool = False  # a reply that was stopped or failed mid-stream
    speaker: str | None = None  # persona id of a roundtable reply; None: the conversation's
    # None: said in the chat (or written by the summarizer). "edited": a summary the user
    # wrote or edited in the memory panel. "tool": a note of a tool call on the user's side.
    origin: Origin | None = None

    @property
    def who(self) -> str:
        """Who wrote it, for a transcript line: 'User', 'Assistant' or 'Assistant (finance)'."""
        label = self.role.capitalize()
        return f"{label} ({self.speaker})" if self.speaker else label

    @property
    def labelled(self) -> str:
        """The content as the model reads it back: a roundtable reply names its speaker."""
        return f"[{self.speaker}] {self.content}" if self.speaker else self.content

    # How the turn ended when not as planned: "failed" (a user message with no reply, or a
    # reply that broke off), "stopped" or "incomplete"; `outcome_note` says why in the words
    # the chat showed. None: a normal message (whose note, if any, is a line the chat wrote on
    # it, such as a roundtable's veto).
    outcome: Outcome | None = None
    outcome_note: str | None = None

    @property
    def edited(self) -> bool:
        """A summary the user wrote: what the model gets instead of the summarizer's."""
        return self.origin == "edited"

    @property
    def is_tool_note(self) -> bool:
        """A short note of a tool call (name, key arguments, status), stored as a user turn."""
        return self.origin == "tool"

    @property
    def saved(self) -> bool:
        """False for the "not saved" marker a fail-open store returns when storage failed."""
        return self.id is not None


@dataclass(frozen=True)
class RecalledTurn:
    """A compacted turn brought back into the context because it matches the new message."""

    turn: Turn  # a prompt-clipped copy
    matched: tuple[str, ...]  # query terms found in it; empty for a neighbour
    neighbour_of: int | None = None  # set when included only for sense, beside a match
    score: float = 0.0  # the fused recall score (higher is better); 0.0 for a neighbour
    continues: bool = False  # directly follows the previous recalled turn in the conversation


@dataclass(frozen=True)
class PinnedFact:
    """A fact the user pinned: always in what the model receives, never summarized away."""

    id: int
    owner: str
    conversation_id: str | None  # None: "about me", for every conversation of the owner
    content: str
    created_at: float
    source_turn_id: int | None = None  # the message it was pinned from, if any

    @property
    def about_me(self) -> bool:
        return self.conversation_id is None


@dataclass(frozen=True)
class OwnerSettings:
    """Per-owner memory settings."""

    about_me: bool = False  # "about me" facts reach every conversation (opt-in)
    time_zone: str | None = None  # IANA name from the browser, for the `today` tool


@dataclass(frozen=True)
class ContextWindow:
    """What the model should see of a conversation, and why (memory.render_memory renders it)."""

    summary: Turn | None
    turns: list[Turn]  # recent turns, prompt-clipped copies, oldest first
    chars: int  # pinned facts + summary + recalled + recent turns
    budget: int
    clipped_ids: list[int] = field(default_factory=list)
    evicted_ids: list[int] = field(default_factory=list)  # recent turns left out for budget
    recalled: list[RecalledTurn] = field(default_factory=list)  # oldest first
    degraded: bool = False  # storage failed: this is empty, answer without history
    not_shown: int = 0  # active turns older than the recent window, waiting to be summarized
    now: float | None = None  # when it was assembled: dates are rendered against it
    timezone: str = "UTC"  # the IANA zone dates are shown in
    pinned: list[PinnedFact] = field(default_factory=list)  # conversation's, then about me

    def part_chars(self) -> dict[str, int]:
        """Characters of each part of the memory, as sent (the plots and metrics use it)."""
        return {
            "pinned": sum(len(p.content) for p in self.pinned),
            "summary": len(self.summary.content) if self.summary else 0,
            "recalled": sum(len(r.turn.content) for r in self.recalled),
            "recent": sum(len(t.content) for t in self.turns),
        }

    def messages(self) -> list[dict[str, str]]:
        """The recent turns as they are stored, oldest first (memory.render_messages gives
        what the model receives: with date lines)."""
        return [{"role": t.role, "content": t.content} for t in self.turns]


@dataclass(frozen=True)
class MemoryStatus:
    total: int  # user + assistant messages
    active: int
    compacted: int
    summaries: int  # summaries written so far (the latest one is in the context)
    summary_covers: int  # messages the latest summary covers
    context_chars: int
    budget: int
    summarizing: bool
    retention_minutes: int | None
    expires_at: float | None
    degraded: bool = False
    pinned: int = 0  # pinned facts in the context (this conversation's and about me)
    pinned_chars: int = 0
    summary_edited: bool = False  # the summary in the context is the user's text
    about_me_on: bool = False  # the owner's "about me" facts reach every conversation
    about_me_pins: int = 0  # of `pinned`, how many are "about me"


@dataclass(frozen=True)
class ResetResult:
    turns: int  # user + assistant messages removed
    summaries: int
    chars: int  # characters of the removed messages
    pinned: int = 0  # this conversation's pinned facts removed ("about me" ones stay)
    title_cleared: bool = False


COUNT_FIELDS = ("input_tokens", "output_tokens", "latency_ms", "first_token_ms")
PART_FIELDS = (
    "persona_chars",
    "pinned_chars",
    "summary_chars",
    "recalled_chars",
    "recent_chars",
    "budget_chars",
)


@dataclass(frozen=True)
class TurnMetrics:
    """One model call's numbers. Never message text."""

    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: int | None = None
    first_token_ms: int | None = None
    status: MetricsStatus = "ok"
    error_kind: str | None = None
    # Characters the model received, per part (never the text): None when not measured.
    persona_chars: int | None = None
    pinned_chars: int | None = None
    summary_chars: int | None = None
    recalled_chars: int | None = None
    recent_chars: int | None = None  # recent turns and the new message
    budget_chars: int | None = None  # the memory budget they were packed under
    persona_id: str | None = None  # the speaker of a roundtable call; None: a plain turn

    def __post_init__(self) -> None:
        if self.status not in METRICS_STATUSES:
            raise ValueError(
                f"TurnMetrics.status is {self.status!r}; use one of {', '.join(METRICS_STATUSES)}"
            )
        for name in (*COUNT_FIELDS, *PART_FIELDS):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"TurnMetrics.{name} is {value!r}; use a whole number >= 0")


@dataclass(frozen=True)
class MetricsRow:
    """One recorded model call of a conversation, for the memory panel's plots."""

    id: int
    created_at: float
    metrics: TurnMetrics


@dataclass(frozen=True)
class SearchHit:
    """A message (or summary) matching a search, with its conversation."""

    conversation_id: str
    conversation_title: str | None
    turn_id: int
    role: Role
    snippet: str  # matched terms wrapped in [ ]
    created_at: float
    speaker: str | None = None  # a roundtable reply: the persona id that wrote it


@dataclass(frozen=True)
class ApiToken:
    """An HTTP API token as stored: never the token itself, only what identifies it."""

    id: str  # public id, used to revoke it
    owner: str
    name: str
    hint: str  # the token's last characters, so its owner can tell tokens apart
    created_at: float
    last_used_at: float | None
    revoked_at: float | None  # None while it works

    @property
    def active(self) -> bool:
        return self.revoked_at is None
