"""Conversation memory: conversations, turns, summaries, retention, recall.

Knows nothing of Gradio, models or personas. Start at `open_store()` (or
`ConversationStore.open()` for SQLite); `MemoryBackend` is what every store offers.
Pure parts other layers use: the input checks (`check_message`, `make_title`, ...) and
`render_memory()`, the exact memory note the model receives (pinned facts, "about me",
summary, recalled turns).
"""

from .backend import MemoryBackend, open_store
from .context import MEMORY_NOTE_HEADER, assemble_context, render_memory, render_messages
from .edits import ConversationEdit
from .errors import (
    ArchiveRefused,
    ConversationNotFound,
    EmptyMessage,
    InvalidInput,
    InvalidRetention,
    InvalidRole,
    InvalidSummary,
    InvalidTitle,
    InvalidTokenName,
    MemoryStoreError,
    MessageTooLong,
    PinRefused,
    StorageUnavailable,
    TokenNotFound,
    TooManyTokens,
    UnsupportedStore,
)
from .policy import MemoryPolicy, database_path
from .records import (
    ApiToken,
    ContextWindow,
    Conversation,
    MemoryStatus,
    MetricsRow,
    Outcome,
    OwnerSettings,
    PinnedFact,
    RecalledTurn,
    ResetResult,
    SearchHit,
    Turn,
    TurnMetrics,
)
from .store import ConversationStore
from .summarize import ExtractiveSummarizer, Summarizer
from .validation import (
    MAX_MESSAGE_CHARS,
    MAX_TITLE_CHARS,
    check_message,
    check_owner,
    check_retention,
    check_speaker,
    clean_title,
    make_title,
    validate_message,
)
from .vectors import Embedder

__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_TITLE_CHARS",
    "MEMORY_NOTE_HEADER",
    "ApiToken",
    "ArchiveRefused",
    "ContextWindow",
    "Conversation",
    "ConversationEdit",
    "ConversationNotFound",
    "ConversationStore",
    "Embedder",
    "EmptyMessage",
    "ExtractiveSummarizer",
    "InvalidInput",
    "InvalidRetention",
    "InvalidRole",
    "InvalidSummary",
    "InvalidTitle",
    "InvalidTokenName",
    "MemoryBackend",
    "MemoryPolicy",
    "MemoryStatus",
    "MemoryStoreError",
    "MessageTooLong",
    "MetricsRow",
    "Outcome",
    "OwnerSettings",
    "PinRefused",
    "PinnedFact",
    "RecalledTurn",
    "ResetResult",
    "SearchHit",
    "StorageUnavailable",
    "Summarizer",
    "TokenNotFound",
    "TooManyTokens",
    "Turn",
    "TurnMetrics",
    "UnsupportedStore",
    "assemble_context",
    "check_message",
    "check_owner",
    "check_retention",
    "check_speaker",
    "clean_title",
    "database_path",
    "make_title",
    "open_store",
    "render_memory",
    "render_messages",
    "validate_message",
]
