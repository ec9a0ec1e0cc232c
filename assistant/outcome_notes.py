"""Why a turn ended, as stored with it (memory's `outcome_note`): the condition's code and
numbers next to its English sentence, so that each reader renders it in its own language when
the conversation is reopened — the UI in the page's, the HTTP API in English (`text`).

    {"code": "rate_limited", "kind": "rate_limited", "params": {}, "text": "Gemini is ..."}

`code` is an error's (`UserError.code`, with its `kind` to fall back on) or one of the chat's
own sentences below. Notes stored before codes were (plain English sentences) decode with no
code: readers show them as written, or recognise the sentence (ui.texts.known).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .errors import AssistantError

MAX_NOTE_CHARS = 1000  # memory's column limit (memory.validation.MAX_OUTCOME_NOTE_CHARS)
_TEXT_CHARS = 600  # an English sentence longer than this is clipped, so the note always fits

# The chat's own sentences, by code.
STOPPED = "Stopped — this reply is incomplete."
INTERRUPTED = (
    "Mnemo stopped before this reply finished (the server restarted or crashed). Retry for a "
    "full answer."
)
STOPPED_EARLY = "Stopped before the reply began."
FAILED_UNEXPECTEDLY = "Something went wrong while answering. Retry in a moment."
REPLY_MAX_TOKENS = "The reply hit the model's length limit. Ask it to continue."


@dataclass(frozen=True)
class OutcomeNote:
    """Why a turn ended: the English sentence, and (when known) what it says as data."""

    text: str
    code: str | None = None  # None: a note stored as a plain sentence, before codes
    kind: str | None = None  # an error's kind, the sentence to fall back on
    params: dict[str, object] = field(default_factory=dict)

    @classmethod
    def of_error(cls, error: BaseException) -> OutcomeNote:
        """The note for an error that stopped a turn (a bug: the general sentence)."""
        if isinstance(error, AssistantError):
            return cls(error.message, code=error.code, kind=error.kind, params=error.params)
        return FAILED_NOTE

    def encode(self) -> str:
        """What the store keeps: JSON within the column's limit."""
        text = self.text if len(self.text) <= _TEXT_CHARS else self.text[: _TEXT_CHARS - 1] + "…"
        doc: dict[str, object] = {"code": self.code, "text": text}
        if self.kind and self.kind != self.code:
            doc["kind"] = self.kind
        params = {k: v for k, v in self.params.items() if isinstance(v, int | float | str)}
        if params:
            doc["params"] = params
        stored = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        if len(stored) > MAX_NOTE_CHARS:  # long text parameters: the sentence still says it
            stored = json.dumps({**doc, "params": {}}, ensure_ascii=False, separators=(",", ":"))
        return stored


def reply_cut(limit: int) -> OutcomeNote:
    """A reply cut at the message limit."""
    return OutcomeNote(
        f"The reply was cut at {limit:,} characters, the message limit.",
        code="reply_cut",
        params={"limit": limit},
    )


STOPPED_NOTE = OutcomeNote(STOPPED, code="stopped_stored")
INTERRUPTED_NOTE = OutcomeNote(INTERRUPTED, code="interrupted")
STOPPED_EARLY_NOTE = OutcomeNote(STOPPED_EARLY, code="stopped_before")
FAILED_NOTE = OutcomeNote(FAILED_UNEXPECTEDLY, code="failed_unexpectedly")
MAX_TOKENS_NOTE = OutcomeNote(REPLY_MAX_TOKENS, code="reply_max_tokens")


def decode(stored: str | None) -> OutcomeNote | None:
    """The note a turn stores: coded, or an older plain sentence (code None)."""
    if not stored:
        return None
    if stored.startswith("{"):
        try:
            doc = json.loads(stored)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("text"), str) and "code" in doc:
            params = doc.get("params")
            return OutcomeNote(
                doc["text"],
                code=doc["code"] if isinstance(doc["code"], str) else None,
                kind=doc["kind"] if isinstance(doc.get("kind"), str) else doc["code"],
                params=dict(params) if isinstance(params, dict) else {},
            )
    return OutcomeNote(stored)


def note_text(stored: str | None) -> str | None:
    """The English sentence of a stored note (what the HTTP API shows)."""
    note = decode(stored)
    return note.text if note is not None else None
