"""The state of one chat turn while it runs: its quota admission, the reply as it streams
(with the progress saves that keep it through a crash), and how it ended (its outcome)."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memory import ContextWindow, Outcome

from .errors import AssistantError
from .models import Message
from .outcome_notes import STOPPED_NOTE, OutcomeNote, SystemLine

# Progress saves while a reply streams (measured: bench/turn_overhead.py, README Performance).
PROGRESS_EVERY_S = 1.0
PROGRESS_CHARS = 2_000


def outcome_of(
    status: str, error: BaseException | None, notice: OutcomeNote | None
) -> tuple[Outcome | None, str | None]:
    """How a turn ended, and why (a coded note, rendered in the reader's language): stored
    with the turn."""
    if status == "stopped":
        return "stopped", STOPPED_NOTE.encode()
    if status == "error":
        return "failed", OutcomeNote.of_error(error or RuntimeError()).encode()
    return ("incomplete", notice.encode()) if notice else (None, None)


class OwnerLocks:
    """One asyncio.Lock per owner, kept only while someone holds or awaits it. The quota
    holds it to read the database's count and the turns in flight as one consistent pair: a
    metrics row is committed in a thread and its slot released later on the loop, and a
    count taken in between saw the turn twice (a roundtable's second speaker was refused at
    5 of 6)."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def __call__(self, owner: str) -> asyncio.Lock:
        lock = self._locks.get(owner)
        if lock is None:
            lock = self._locks[owner] = asyncio.Lock()
        return lock


@dataclass
class Admission:
    """A turn let through the quota whose metrics row is not written yet: it still counts."""

    owner: str
    pending: Counter[str]
    handed_off: bool = False  # _finish took it; the metrics task releases it
    released: bool = False

    def __post_init__(self) -> None:
        self.pending[self.owner] += 1

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.pending[self.owner] -= 1
            if self.pending[self.owner] <= 0:
                del self.pending[self.owner]


@dataclass
class ReplyState:
    """The state of one reply being produced."""

    owner: str
    conv_id: str
    admission: Admission
    question_id: int | None = None  # the user message answered (None: not saved)
    question_outcome: str | None = None  # its stored outcome (a retry clears it)
    parts: list[str] = field(default_factory=list)
    first_token_ms: int | None = None
    speaker: str | None = None  # the persona answering in a roundtable; None: a plain turn
    veto_line: SystemLine | None = None  # the system's ⛔ line, stored with the reply
    # Progress saved while streaming, so a killed process keeps what had arrived.
    reply_id: int | None = None  # the reply's row once a progress save wrote it
    saved_chars: int = 0
    saved_at: float = field(default_factory=time.monotonic)
    saving: asyncio.Task[Any] | None = None  # the progress save in flight
    chars: int = 0
    sizes: dict[str, int] = field(default_factory=dict)  # measure(): the metrics' part sizes

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def measure(self, persona_prompt: str, context: ContextWindow, messages: list[Message]) -> None:
        """Keep the characters of each part the model receives, for the metrics (never the
        text): persona, pinned facts, summary, recalled turns, recent messages, the budget."""
        parts = context.part_chars()
        self.sizes = {
            "persona_chars": len(persona_prompt),
            "pinned_chars": parts["pinned"],
            "summary_chars": parts["summary"],
            "recalled_chars": parts["recalled"],
            "recent_chars": sum(len(m["content"]) for m in messages),
            "budget_chars": context.budget,
        }

    def add(self, chunk: str) -> None:
        self.parts.append(chunk)
        self.chars += len(chunk)

    def progress_due(self) -> bool:
        """A second since the last save, or PROGRESS_CHARS more: a crash loses at most that."""
        fresh = self.chars - self.saved_chars
        if fresh <= 0 or (self.saving is not None and not self.saving.done()):
            return False
        return fresh >= PROGRESS_CHARS or time.monotonic() - self.saved_at >= PROGRESS_EVERY_S


def error_kind(error: BaseException | None) -> str | None:
    """What a turn's metrics row says went wrong: the error's kind, or its class name."""
    if error is None:
        return None
    if isinstance(error, AssistantError):
        return error.kind
    return type(error).__name__


def ms_since(started: float) -> int:
    """Milliseconds since `started` (a time.perf_counter() reading)."""
    return round((time.perf_counter() - started) * 1000)
