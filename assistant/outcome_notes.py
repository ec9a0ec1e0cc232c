"""Why a turn ended, as stored with it (memory's `outcome_note`): the condition's code and
numbers next to its English sentence, so that each reader renders it in its own language when
the conversation is reopened — the UI in the page's, the HTTP API in English (`text`).

    {"code": "rate_limited", "kind": "rate_limited", "params": {}, "text": "Gemini is ..."}

`code` is an error's (`UserError.code`, with its `kind` to fall back on) or one of the chat's
own sentences below. Notes stored before codes were (plain English sentences) decode with no
code: readers show them as written, or recognise the sentence (ui.texts.known).

A reply may also carry a line the system writes whatever the model wrote — a roundtable's veto,
on the vetoing member's and the chair's replies — as `"veto": {"code", "params", "text"}` in
the same document; a normal reply then stores `{"code": null, "text": "", "veto": ...}` with
no outcome.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

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
class SystemLine:
    """A line the system writes on a reply whatever the model wrote: code, numbers and names
    (rendered in the reader's language), and its English sentence (the HTTP API's)."""

    code: str  # "veto_member" | "veto_chair"
    params: dict[str, object]
    text: str

    def as_doc(self) -> dict[str, object]:
        return {"code": self.code, "params": self.params, "text": self.text}


# A line's label and reason are kept in each ("label_en", "reason_zh-TW", ...).
LINE_LANGUAGES = ("en", "zh-TW")


def veto_line(
    veto: Any, role: str, member_name: str, labels: dict[str, str] | None = None
) -> SystemLine:
    """The ⛔ line on the vetoing member's reply (`role` "member") or the chair's, for a veto
    the metrics table decided (personas.VetoDecision): it says the veto whatever the model
    wrote, and on the chair's reply that the veto stands. `label` is the turn's (what the
    member was told to write); `labels`, the member's label in each page language (the
    reason is kept in each of them too: the metrics entries by their Chinese names)."""
    reason, label = _clip(veto.reason(), 160), _clip(veto.label, 40)
    member_name, threshold = _clip(member_name, 60), f"{veto.threshold_pct:g}"
    params: dict[str, object] = {
        **{f"label_{lang}": _clip(text, 40) for lang, text in (labels or {}).items()},
        **{f"reason_{lang}": _clip(veto.reason(lang), 160) for lang in (labels or {})},
        "label": label,
        "reason": reason,
        "threshold": threshold,
        "member": veto.member,
        "member_name": member_name,
    }
    if role == "chair":
        text = (
            f"⛔ {label} stands ({member_name}: {reason}, threshold {threshold}%): "
            "the proposal is not approved."
        )
        return SystemLine("veto_chair", params, text)
    text = (
        f"⛔ {label}: {reason}, below the {threshold}% threshold — decided by "
        "the business-metrics table, not by the model."
    )
    return SystemLine("veto_member", params, text)


@dataclass(frozen=True)
class OutcomeNote:
    """Why a turn ended: the English sentence, and (when known) what it says as data."""

    text: str
    code: str | None = None  # None: a note stored as a plain sentence, before codes
    kind: str | None = None  # an error's kind, the sentence to fall back on
    params: dict[str, object] = field(default_factory=dict)
    veto: SystemLine | None = None  # the system's veto line on this reply

    @classmethod
    def of_error(cls, error: BaseException) -> OutcomeNote:
        """The note for an error that stopped a turn (a bug: the general sentence)."""
        if isinstance(error, AssistantError):
            return cls(error.message, code=error.code, kind=error.kind, params=error.params)
        return FAILED_NOTE

    def encode(self) -> str:
        """What the store keeps: JSON within the column's limit."""
        limit = _TEXT_CHARS if self.veto is None else _TEXT_CHARS // 2  # both fit the column
        text = self.text if len(self.text) <= limit else self.text[: limit - 1] + "…"
        doc: dict[str, object] = {"code": self.code, "text": text}
        if self.kind and self.kind != self.code:
            doc["kind"] = self.kind
        params = {k: v for k, v in self.params.items() if isinstance(v, int | float | str)}
        if params:
            doc["params"] = params
        if self.veto is not None:
            doc["veto"] = self.veto.as_doc()
        stored = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        if len(stored) > MAX_NOTE_CHARS:  # long text parameters: the sentence still says it
            doc["params"] = {}
            stored = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        if len(stored) > MAX_NOTE_CHARS:  # with a veto line (at most ~720): the sentence gives way
            doc["text"] = _clip(text, max(1, len(text) - (len(stored) - MAX_NOTE_CHARS)))
            stored = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        return stored


def with_line(stored: str | None, line: SystemLine | None) -> str | None:
    """`stored` (a turn's encoded note, or None for a normal reply) with the veto line."""
    if line is None:
        return stored
    note = decode(stored) or OutcomeNote("")
    return replace(note, veto=line).encode()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
                veto=_line_of(doc.get("veto")),
            )
    return OutcomeNote(stored)


def _line_of(doc: object) -> SystemLine | None:
    if not isinstance(doc, dict):
        return None
    code, params, text = doc.get("code"), doc.get("params"), doc.get("text")
    if not isinstance(code, str) or not isinstance(text, str):
        return None
    return SystemLine(code, dict(params) if isinstance(params, dict) else {}, text)


def note_text(stored: str | None) -> str | None:
    """The English sentence of a stored note (what the HTTP API shows); None when the turn
    has only a system line."""
    note = decode(stored)
    return (note.text or None) if note is not None else None


def veto_text(stored: str | None) -> str | None:
    """The English sentence of a turn's veto line, if it has one (what the HTTP API shows)."""
    note = decode(stored)
    return note.veto.text if note is not None and note.veto is not None else None
