"""Memory limits and thresholds, and the database file inside a data directory.

Memory never looks the data directory up itself (no environment variables here): the caller
passes it, resolved once by `assistant.config.data_dir()`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .packing import RecallWeights
from .validation import MAX_MESSAGE_CHARS

DB_FILENAME = "mnemo.db"
SQLITE_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})
DEFAULT_PIN_CHARS = 2_000


@dataclass(frozen=True)
class MemoryPolicy:
    """What the model sees of a conversation, and when older messages are summarized.

    Defaults: the latest summary plus at most the 20 newest messages, each clipped to 2,000
    characters for the prompt, everything (summary, recalled turns, recent turns) under 16,000.
    Recall fills up to `recall_chars` with the best older snippets (by budget; `recall_k`
    only bounds how many). At 101 active messages all but the newest 20 fold into one summary
    of at most `summary_chars`. Dates are shown in `timezone` (IANA name).
    Pinned facts (a conversation's plus "about me") may take `pinned_chars`; by default what
    the budget leaves beside a full summary, full recall and one full message, at most 2,000.
    """

    keep_recent: int = 20
    message_chars: int = 2_000
    history_chars: int = 16_000
    summarize_at: int = 101
    summary_chars: int = 2_000
    recall_k: int = 120
    recall_chars: int = 9_000
    recall_weights: RecallWeights = field(default_factory=RecallWeights)
    timezone: str = "UTC"
    # One summarization folds at most this many turns; a backlog is worked off over passes.
    fold_max: int = 1_000
    pinned_chars: int | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.keep_recent < 1:
            problems.append("keep_recent must be at least 1")
        if self.summarize_at <= self.keep_recent:
            problems.append("summarize_at must be greater than keep_recent")
        if not 200 <= self.message_chars <= MAX_MESSAGE_CHARS:
            problems.append(f"message_chars must be between 200 and {MAX_MESSAGE_CHARS:,}")
        if not 200 <= self.summary_chars <= MAX_MESSAGE_CHARS:
            problems.append(f"summary_chars must be between 200 and {MAX_MESSAGE_CHARS:,}")
        if self.recall_k < 0 or self.recall_chars < 0:
            problems.append("recall_k and recall_chars cannot be negative")
        if self.fold_max < 1:
            problems.append("fold_max must be at least 1")
        # The newest message must always fit beside a full summary and full recall.
        floor = self.summary_chars + self.recall_chars + self.message_chars
        if self.history_chars < floor:
            problems.append(
                f"history_chars ({self.history_chars:,}) must be at least summary_chars + "
                f"recall_chars + message_chars ({floor:,})"
            )
        elif self.pinned_chars is not None and (
            self.pinned_chars < 0 or floor + self.pinned_chars > self.history_chars
        ):
            problems.append(
                f"pinned_chars ({self.pinned_chars:,}) must be between 0 and history_chars - "
                f"summary_chars - recall_chars - message_chars ({self.history_chars - floor:,})"
            )
        if self.timezone != "UTC":
            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                problems.append(
                    f"timezone {self.timezone!r} is not an IANA zone (e.g. Asia/Taipei)"
                )
        if problems:
            raise ValueError("Invalid MemoryPolicy: " + "; ".join(problems))

    @property
    def pin_budget(self) -> int:
        """Characters all pinned facts of one conversation may take together."""
        if self.pinned_chars is not None:
            return self.pinned_chars
        spare = self.history_chars - self.summary_chars - self.recall_chars - self.message_chars
        return min(DEFAULT_PIN_CHARS, spare)


def database_path(path: str | os.PathLike[str]) -> Path:
    """The SQLite file: `path` itself when it names a .db/.sqlite file, else <path>/mnemo.db."""
    if path is None:
        raise TypeError(
            "No database path given: pass the data directory (or a .db file) explicitly; "
            "assistant.config.data_dir() resolves it from the environment."
        )
    base = Path(path)
    if base.suffix in SQLITE_SUFFIXES:
        return base
    return base / DB_FILENAME
