"""Conversation memory on SQLite: conversations, turns, summaries, retention, fail-open.

Knows nothing of Gradio, models or personas. Start at `ConversationStore.open()`.
"""

from .errors import (
    ConversationNotFound,
    EmptyMessage,
    InvalidInput,
    InvalidRetention,
    InvalidRole,
    InvalidTitle,
    MemoryStoreError,
    MessageTooLong,
    StorageUnavailable,
)
from .failopen import FailOpenStore
from .policy import MAX_MESSAGE_CHARS, MemoryPolicy, data_dir, database_path
from .records import (
    ContextWindow,
    Conversation,
    MemoryStatus,
    RecalledTurn,
    ResetResult,
    SearchHit,
    Turn,
    TurnMetrics,
)
from .store import ConversationStore
from .summarize import ExtractiveSummarizer, Summarizer

__all__ = [
    "MAX_MESSAGE_CHARS",
    "ContextWindow",
    "Conversation",
    "ConversationNotFound",
    "ConversationStore",
    "EmptyMessage",
    "ExtractiveSummarizer",
    "FailOpenStore",
    "InvalidInput",
    "InvalidRetention",
    "InvalidRole",
    "InvalidTitle",
    "MemoryPolicy",
    "MemoryStatus",
    "MemoryStoreError",
    "MessageTooLong",
    "RecalledTurn",
    "ResetResult",
    "SearchHit",
    "StorageUnavailable",
    "Summarizer",
    "Turn",
    "TurnMetrics",
    "data_dir",
    "database_path",
]
