"""Request and response bodies of the API, and how the service's records become them.

Times are ISO 8601 in UTC. Records come from the service facade; the `*_out` functions read
their attributes and nothing else, so a record gaining a field does not change the API.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from assistant.outcome_notes import note_text, veto_text


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


class Body(BaseModel):
    """A request body: unknown fields are refused, so a typo is not silently ignored."""

    model_config = ConfigDict(extra="forbid")


# ---- personas ----------------------------------------------------------------------------


class PersonaSummary(BaseModel):
    id: str
    display_name: str
    avatar: str
    description: str
    version: int = Field(description="The version in use: 0 = the built-in, 1, 2, ... = yours.")
    source: Literal["builtin", "saved"]


class PersonaDetail(PersonaSummary):
    yaml: str = Field(description="The exact YAML text of the version in use.")
    fields: dict[str, Any] = Field(description="The validated persona, field by field.")
    system_prompt: str = Field(description="The system prompt composed from it.")
    saved_at: str | None


class PersonaVersionOut(BaseModel):
    version: int
    source: Literal["builtin", "saved"]
    saved_at: str | None
    in_use: bool
    display_name: str


class RollbackIn(Body):
    version: int = Field(
        ge=0, description="The version to use from the next message; 0 = built-in."
    )


class RefreshOut(BaseModel):
    builtins: dict[str, str | None] = Field(
        description="Each built-in persona id and the problem with its file (null: loaded)."
    )


def persona_summary(info: Any) -> dict[str, Any]:
    return {
        "id": info.id,
        "display_name": info.display_name,
        "avatar": info.avatar or "",
        "description": info.description or "",
        "version": info.version,
        "source": info.source,
    }


def persona_detail(document: Any) -> dict[str, Any]:
    return {
        **persona_summary(document.info),
        "yaml": document.yaml_text,
        "fields": document.fields,
        "system_prompt": document.system_prompt,
        "saved_at": iso(document.info.saved_at),
    }


def version_out(info: Any, in_use: int) -> dict[str, Any]:
    return {
        "version": info.version,
        "source": info.source,
        "saved_at": iso(info.saved_at),
        "in_use": info.version == in_use,
        "display_name": info.display_name,
    }


# ---- conversations -----------------------------------------------------------------------


class ConversationOut(BaseModel):
    id: str
    title: str | None
    persona_id: str
    retention_minutes: int | None = Field(description="Forgotten after this many idle minutes.")
    created_at: str
    last_active_at: str
    expires_at: str | None
    message_count: int


def _title(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("is empty; give the conversation a name, or leave the field out")
    return value


Title = Annotated[str | None, Field(max_length=100), AfterValidator(_title)]


class ConversationIn(Body):
    title: Title = None
    persona_id: str | None = Field(None, description="Default: the assistant persona.")
    retention_minutes: int | None = Field(
        None, ge=1, description="Minutes idle before it is forgotten; null: keep until deleted."
    )


class ConversationPatch(ConversationIn):
    """Only the fields sent change."""


class MessageOut(BaseModel):
    id: int
    role: Literal["user", "assistant", "summary"]
    content: str
    created_at: str
    compacted: bool = Field(description="Folded into a summary: shown, no longer sent whole.")
    incomplete: bool = Field(description="A reply that was stopped or failed part-way.")
    outcome: Literal["failed", "stopped", "incomplete"] | None = Field(
        default=None,
        description="How the message ended when not as planned: 'failed' (on a user message: "
        "not answered; on a reply: broke off), 'stopped', 'incomplete' (cut at a limit, or "
        "the server stopped mid-reply). Null: a normal message.",
    )
    outcome_note: str | None = Field(
        default=None, description="Why, in English (the chat shows it in the page's language)."
    )
    covers_count: int | None = Field(description="For a summary: how many messages it covers.")
    speaker: str | None = Field(
        default=None, description="A roundtable reply: the persona id of who said it."
    )
    veto_note: str | None = Field(
        default=None,
        description="A roundtable's veto, written by Mnemo whatever the model wrote, on the "
        "vetoing member's and the chair's replies, in English (the chat shows it in the "
        "page's language).",
    )


class MessagesPage(BaseModel):
    messages: list[MessageOut] = Field(description="Oldest first.")
    next_before: int | None = Field(
        description="Pass as `before` for the page of older messages; null: this is the first."
    )


class MemoryStatusOut(BaseModel):
    messages: int
    active: int
    compacted: int
    summaries: int
    summary_covers: int
    context_chars: int
    budget: int
    summarizing: bool
    retention_minutes: int | None
    expires_at: str | None
    degraded: bool = Field(description="Storage failed: answering without memory.")


class NextPrompt(BaseModel):
    """Exactly what the model receives with the next message, besides the message."""

    model: str
    persona_id: str
    persona_version: int | None
    system_instruction: str
    summary: str | None
    turns: list[dict[str, str]]
    recalled: list[dict[str, str]]
    chars: int
    budget: int
    not_shown: int


class MemoryOut(BaseModel):
    status: MemoryStatusOut
    summary: str | None
    next: NextPrompt


class ResetOut(BaseModel):
    messages: int
    summaries: int
    chars: int


class SearchHitOut(BaseModel):
    message_id: int
    role: str
    snippet: str = Field(description="The message around the matches, each wrapped in **.")
    created_at: str
    speaker: str | None = Field(
        default=None, description="A roundtable reply: the persona id of who said it."
    )


class SearchResult(BaseModel):
    conversation: ConversationOut
    title: str = Field(description="The title with matches wrapped in **; empty: untitled.")
    hits: list[SearchHitOut] = Field(description="Matching messages, newest first.")


class SearchOut(BaseModel):
    query: str
    searchable: bool = Field(description="false: the query has no word the index can match.")
    results: list[SearchResult] = Field(description="Conversations, newest activity first.")


class SendIn(Body):
    text: str = Field(description="The message, up to 10,000 characters; `/reset` resets.")


class UsageOut(BaseModel):
    input_tokens: int | None
    output_tokens: int | None


class VetoOut(BaseModel):
    """The veto the metrics table decided (code, not the model)."""

    member: str = Field(description="The persona id holding the veto.")
    threshold_pct: float
    label: str = Field(description="What the vetoing member's last line starts with.")
    below: list[str] = Field(description="The entries the message names under the threshold.")
    reason: str


class SpeakerOut(BaseModel):
    """A roundtable speaker: the `speaker_start` event's data."""

    persona_id: str
    name: str
    avatar: str
    role: Literal["member", "chair"]
    index: int = Field(description="0-based position in the speaking order.")
    total: int
    veto: VetoOut | None = Field(
        description="Set for the vetoing member and the chair when the table decided a veto."
    )


class SpeakerReplyOut(BaseModel):
    """One speaker's reply: the `speaker_end` event's data, and an item of `speakers`."""

    persona_id: str
    name: str
    reply: str
    status: Literal["ok", "incomplete"]
    usage: UsageOut
    saved: bool
    notice: str | None
    veto_note: str | None = Field(
        None, description="The ⛔ line Mnemo stored with this reply (see MessageOut.veto_note)."
    )


class ReplyOut(BaseModel):
    """The final event of a stream, or the whole JSON answer. For a roundtable, `reply` is the
    chair's (the decision) and `speakers` holds every reply in speaking order."""

    reply: str
    status: Literal["ok", "incomplete"]
    model: str
    usage: UsageOut
    memory: MemoryStatusOut | None
    saved: bool
    notice: str | None
    reset: ResetOut | None = Field(None, description="Set when the message was `/reset`.")
    roundtable: str | None = Field(None, description="The roundtable that answered, if one did.")
    speakers: list[SpeakerReplyOut] | None = Field(
        None, description="A roundtable's replies in speaking order (null for one persona)."
    )
    veto: VetoOut | None = Field(None, description="A roundtable's veto, when one was decided.")


def usage_out(usage: Any) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def veto_out(veto: Any) -> dict[str, Any] | None:
    if veto is None or not veto.vetoed:
        return None
    return {
        "member": veto.member,
        "threshold_pct": veto.threshold_pct,
        "label": veto.label,
        "below": [entry.name for entry in veto.below],
        "reason": veto.reason(),
    }


def speaker_out(speaker: Any, veto: Any = None) -> dict[str, Any]:
    return {
        "persona_id": speaker.persona_id,
        "name": speaker.display_name,
        "avatar": speaker.avatar or "",
        "role": speaker.role,
        "index": speaker.index,
        "total": speaker.total,
        "veto": veto_out(veto),
    }


def speaker_reply_out(speaker: Any, done: Any, line: Any = None) -> dict[str, Any]:
    return {
        "persona_id": speaker.persona_id,
        "name": speaker.display_name,
        "reply": done.reply,
        "status": done.status,
        "usage": usage_out(done.usage),
        "saved": done.saved,
        "notice": done.notice,
        "veto_note": line.text if line is not None else None,
    }


def conversation_out(c: Any) -> dict[str, Any]:
    return {
        "id": c.id,
        "title": c.title,
        "persona_id": c.persona_id,
        "retention_minutes": c.retention_minutes,
        "created_at": iso(c.created_at),
        "last_active_at": iso(c.last_active_at),
        "expires_at": iso(c.expires_at),
        "message_count": c.message_count,
    }


def message_out(t: Any) -> dict[str, Any]:
    return {
        "id": t.id,
        "role": t.role,
        "content": t.content,
        "created_at": iso(t.created_at),
        "compacted": t.compacted,
        "incomplete": t.incomplete,
        "outcome": t.outcome,
        "outcome_note": note_text(t.outcome_note),
        "covers_count": t.covers_count,
        "speaker": getattr(t, "speaker", None),
        "veto_note": veto_text(t.outcome_note),
    }


def status_out(s: Any) -> dict[str, Any]:
    return {
        "messages": s.total,
        "active": s.active,
        "compacted": s.compacted,
        "summaries": s.summaries,
        "summary_covers": s.summary_covers,
        "context_chars": s.context_chars,
        "budget": s.budget,
        "summarizing": s.summarizing,
        "retention_minutes": s.retention_minutes,
        "expires_at": iso(s.expires_at),
        "degraded": s.degraded,
    }


def next_prompt_out(p: Any) -> dict[str, Any]:
    return {
        "model": p.model,
        "persona_id": p.persona_id,
        "persona_version": p.persona_version,
        "system_instruction": p.system_instruction,
        "summary": p.summary,
        "turns": p.turns,
        "recalled": p.recalled,
        "chars": p.chars,
        "budget": p.budget,
        "not_shown": p.not_shown,
    }


def reset_out(r: Any) -> dict[str, Any]:
    return {"messages": r.turns, "summaries": r.summaries, "chars": r.chars}


def hit_out(h: Any) -> dict[str, Any]:
    return {
        "message_id": h.turn_id,
        "role": h.role,
        "snippet": h.snippet,
        "created_at": iso(h.created_at),
        "speaker": getattr(h, "speaker", None),
    }
