"""Errors of the assistant package: one family, `UserError`, for everything a user can act on.

Each carries a message a user can act on (shown as is by the UI and the API), an optional `title`
for the toast, and a short `kind` that goes into the per-turn metrics and API problem types.
`code` (the kind unless a raise names the condition more exactly, e.g. "message_too_long") and
`params` (the numbers in the message) let the UI say the same in another language.
Errors of memory, personas and third-party libraries (google-genai, httpx, llama-cpp) are wrapped
here at the boundary, so callers only ever catch `UserError`. `AssistantError` is the part of the
family that stops a chat turn.
"""

from __future__ import annotations


class UserError(Exception):
    """Base class: something the user can act on; the message says what to do next."""

    kind = "error"
    title: str | None = None  # a heading for the message; None: the caller names the action

    def __init__(
        self,
        message: str,
        *,
        partial: str = "",
        title: str | None = None,
        code: str | None = None,
        params: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        # Text that had already streamed when the error struck (saved, marked incomplete).
        self.partial = partial
        if title is not None:
            self.title = title
        self.code = code or self.kind
        self.params = dict(params or {})


class AssistantError(UserError):
    """Something stopped a chat turn; the message says what to do next."""

    title = "The assistant could not answer"


class NotFound(UserError):
    """The conversation does not exist for this owner (deleted, expired, or someone else's)."""

    kind = "not_found"
    title = "Conversation not found"


class InvalidInput(UserError):
    """A title, retention, persona choice or message the user gave was refused; nothing changed."""

    kind = "invalid_input"


class PersonaUnavailable(UserError):
    """The persona asked for does not exist for this owner."""

    kind = "persona_not_found"
    title = "Persona not found"


class InvalidPersonaYaml(UserError):
    """Persona YAML that does not validate; `problems` are located messages (line, column)."""

    kind = "invalid_persona"
    title = "Persona not saved"

    def __init__(
        self, message: str, problems: list[str], located: list[dict] | None = None
    ) -> None:
        super().__init__(message)
        self.problems = problems
        # The same problems as {"field", "message", "line", "column"} (line/column None when
        # unknown), for clients that point at them (the HTTP API).
        self.located = located or []


class PersonaRefused(UserError):
    """A persona operation the registry refused (a limit reached, nothing to revert to)."""

    kind = "persona"


class RoundtableUnavailable(AssistantError):
    """The roundtable asked for does not exist, names personas the owner lacks, or its veto
    rule cannot be applied; the message says what to edit."""

    kind = "roundtable"
    title = "Roundtable unavailable"


class RoundtableNotFound(RoundtableUnavailable):
    """No roundtable by that id for this owner (neither built in nor saved by them)."""

    kind = "roundtable_not_found"
    title = "Roundtable not found"


class ConfigError(AssistantError):
    """A setting is missing or malformed (e.g. MNEMO_MODEL=gemini without a key)."""

    kind = "config"


class InvalidMessage(AssistantError, InvalidInput):
    """The user's message is empty or longer than the storage limit (memory's check)."""

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


class ReplyStreaming(UserError):
    """Reset or undo was asked for while a reply streams into the conversation."""

    kind = "reply_streaming"
    title = "A reply is still coming"


class ShuttingDown(AssistantError):
    """The server is stopping (SIGTERM): no new turn starts; replies in flight finish or are
    saved as incomplete."""

    kind = "shutting_down"
    title = "Mnemo is restarting"


SHUTTING_DOWN = (
    "Mnemo is restarting, so this message was not sent. Reload the page in a few seconds and "
    "send it again."
)


def condition_of(exc: Exception) -> dict[str, object]:
    """`code` and `params` for a UserError wrapping `exc`: its class in snake case
    (MessageTooLong -> "message_too_long") and its public number and text attributes."""
    name = type(exc).__name__
    code = "".join("_" + ch.lower() if ch.isupper() else ch for ch in name).lstrip("_")
    params = {
        key: value
        for key, value in vars(exc).items()
        if not key.startswith("_") and isinstance(value, int | float | str)
    }
    return {"code": code, "params": params}


class StorageError(AssistantError):
    """Memory storage failed during an action that cannot work without it (reset, undo, retry,
    rename, delete, ...)."""

    kind = "storage"
