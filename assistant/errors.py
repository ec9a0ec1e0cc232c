"""Errors of the assistant package.

Each carries a message a user can act on (shown as is by the app) and a short `kind` that goes
into the per-turn metrics. Third-party errors (google-genai, httpx, llama-cpp) are wrapped here at
the boundary, so callers only ever catch `AssistantError`.
"""

from __future__ import annotations


class AssistantError(Exception):
    """Base class: something stopped a chat turn; the message says what to do next."""

    kind = "error"

    def __init__(self, message: str, *, partial: str = "") -> None:
        super().__init__(message)
        self.message = message
        # Text that had already streamed when the error struck (saved, marked incomplete).
        self.partial = partial


class ConfigError(AssistantError):
    """A setting is missing or malformed (e.g. MNEMO_MODEL=gemini without a key)."""

    kind = "config"


class InvalidMessage(AssistantError):
    """The user's message is empty or longer than the storage limit."""

    kind = "invalid_message"


class QuotaExceeded(AssistantError):
    """The owner sent more messages this hour than MNEMO_QUOTA_PER_HOUR allows (or the quota
    could not be checked: the quota fails closed)."""

    kind = "quota"


class RateLimited(AssistantError):
    """The model provider answered 429: too many requests or quota used up; retry later."""

    kind = "rate_limited"


class InvalidKey(AssistantError):
    """The API key is missing, invalid, or lacks permission (400 key errors, 401, 403)."""

    kind = "invalid_key"


class InvalidRequest(AssistantError):
    """The provider refused the request as malformed (other 400s, 404 unknown model)."""

    kind = "invalid_request"


class ModelUnavailable(AssistantError):
    """The model could not be reached or failed: 5xx, connection errors, a broken stream, a
    missing offline model."""

    kind = "unavailable"


class BlockedBySafety(AssistantError):
    """The provider's safety filters blocked the prompt or the reply."""

    kind = "safety"


class EmptyReply(AssistantError):
    """The model finished without producing any text."""

    kind = "empty_reply"


class NothingToRetry(AssistantError):
    """Retry or undo was asked for but the conversation has no user message."""

    kind = "nothing_to_retry"


class StorageError(AssistantError):
    """Memory storage failed during an action that cannot work without it (reset, undo, retry)."""

    kind = "storage"
