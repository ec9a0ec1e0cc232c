"""Errors raised by the memory package. Every one derives from `MemoryStoreError`."""

# What ConversationNotFound says, whichever way the conversation went missing.
NOT_FOUND_MESSAGE = (
    "That conversation does not exist (it may have been deleted or expired). "
    "Start a new conversation."
)


class MemoryStoreError(Exception):
    """Base class for every error the memory package raises."""


class ConversationNotFound(MemoryStoreError, LookupError):
    """No such conversation for this owner (missing, deleted, expired, or someone else's)."""


class InvalidInput(MemoryStoreError, ValueError):
    """The caller passed something the store refuses; nothing was written."""


class MessageTooLong(InvalidInput):
    """A message is longer than the per-message limit."""

    def __init__(self, length: int, limit: int):
        self.length = length
        self.limit = limit
        super().__init__(
            f"Your message is {length:,} characters; the limit is {limit:,} "
            f"({length - limit:,} too many). Shorten it or split it into several messages."
        )


class EmptyMessage(InvalidInput):
    """A message is empty or only whitespace."""


class InvalidRole(InvalidInput):
    """A message role other than "user" or "assistant"."""


class InvalidTitle(InvalidInput):
    """A conversation title that is empty or too long."""


class InvalidRetention(InvalidInput):
    """A retention period that is not a positive number of minutes."""


class UnsupportedStore(InvalidInput):
    """A storage target (URL or path) that no backend of this build can open."""


class InvalidTokenName(InvalidInput):
    """An API token name that is empty or too long."""


class TooManyTokens(InvalidInput):
    """The owner already has as many active API tokens as allowed."""


class TokenNotFound(MemoryStoreError, LookupError):
    """No such API token for this owner."""


class StorageUnavailable(MemoryStoreError):
    """The database could not be opened, read or written (locked, full, read-only, corrupt)."""


class PinRefused(InvalidInput):
    """A fact that cannot be pinned: empty, too long, or over the pinned-facts budget."""


class InvalidSummary(InvalidInput):
    """A summary the user wrote that is too long (or there is nothing to summarize yet)."""


class ArchiveRefused(InvalidInput):
    """An export file that cannot be imported (malformed, oversized, wrong format)."""
