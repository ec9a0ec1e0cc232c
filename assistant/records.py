"""The typed records the `Conversations` facade returns to the UI and the HTTP API.

Memory's own records (`Conversation`, `Turn`, `MemoryStatus`, `ResetResult`, `SearchHit`) pass
through as they are and are re-exported here, so callers never import `memory`; persona records
are the assistant's own (`PersonaInfo`), flat values with no pydantic model inside.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from memory import Conversation, ConversationEdit, MemoryStatus, ResetResult, SearchHit, Turn
from personas import PersonaVersion, Roundtable, render_greeting

from .chat import Preview
from .localized import Shown, localized_texts
from .roundtable import ROUNDTABLE_PREFIX

__all__ = [
    "Conversation",
    "ConversationEdit",
    "FormResult",
    "MemoryStatus",
    "OpenConversation",
    "PersonaChange",
    "PersonaDocument",
    "PersonaDraft",
    "PersonaInfo",
    "Preview",
    "ResetResult",
    "RoundtableDocument",
    "RoundtableInfo",
    "SearchHit",
    "SearchResult",
    "SearchResults",
    "TranscriptPage",
    "Turn",
    "VersionEntry",
]


@dataclass(frozen=True)
class PersonaInfo(Shown):
    """One version of a persona as an owner has it."""

    id: str
    display_name: str
    avatar: str | None
    description: str | None
    greeting: str  # rendered (placeholders filled); shown, never stored or sent
    version: int  # 0 = built-in
    source: Literal["builtin", "saved"]
    label: str  # e.g. "v3 · saved 2026-11-30 06:12 UTC", for a versions list
    saved_at: float | None

    @classmethod
    def of(cls, found: PersonaVersion) -> PersonaInfo:
        persona = found.persona
        localized = localized_texts(persona, ("display_name", "description"))
        for language, entry in persona.i18n.items():
            if entry.greeting:
                localized.setdefault(language, {})["greeting"] = render_greeting(persona, language)
        return cls(
            localized=localized,
            id=persona.id,
            display_name=persona.display_name,
            avatar=persona.avatar,
            description=persona.description,
            greeting=render_greeting(persona),
            version=found.version,
            source=found.source,
            label=found.label,
            saved_at=found.saved_at,
        )


@dataclass(frozen=True)
class RoundtableInfo(Shown):
    """One version of a roundtable as an owner has it, with its speakers in order."""

    id: str  # the roundtable's own id, e.g. "erp_board"
    ref: str  # what a conversation stores as its persona id: "roundtable:erp_board"
    display_name: str
    description: str | None
    speakers: list[PersonaInfo]  # in speaking order (members x rounds), the chair last
    chair: str
    rounds: int
    veto_member: str | None
    version: int
    label: str
    available: bool = True  # False: a speaker is missing; `problem` says which
    problem: str | None = None

    @classmethod
    def of(cls, found: PersonaVersion, personas: dict[str, PersonaVersion]) -> RoundtableInfo:
        """`found` holds a Roundtable; `personas` are the owner's, by id."""
        board: Roundtable = found.persona  # type: ignore[assignment]
        missing = [p for p in dict.fromkeys(board.speakers) if p not in personas]
        problem = None
        if missing:
            problem = (
                f"Roundtable {board.display_name!r} names personas you do not have: "
                f"{', '.join(missing)}. Edit its members, or add those personas."
            )
        return cls(
            localized=localized_texts(board, ("display_name", "description")),
            id=board.id,
            ref=ROUNDTABLE_PREFIX + board.id,
            display_name=board.display_name,
            description=board.description or None,
            speakers=[PersonaInfo.of(personas[p]) for p in board.speakers if p in personas],
            chair=board.chair,
            rounds=board.rounds,
            veto_member=board.veto.member if board.veto else None,
            version=found.version,
            label=found.label,
            available=not missing,
            problem=problem,
        )


@dataclass(frozen=True)
class VersionEntry:
    """One line of a versions list; the UI words it in the page's language."""

    version: int  # 0 = built-in
    saved_at: float | None


@dataclass(frozen=True)
class RoundtableDocument:
    """What the roundtable editor shows: the version in use and its history."""

    info: RoundtableInfo
    yaml_text: str
    versions: list[VersionEntry]  # newest first; the built-in (v0) last
    disk_error: str | None = None


@dataclass(frozen=True)
class PersonaDocument:
    """What the persona editor shows for one persona: the version in use and its history."""

    info: PersonaInfo
    yaml_text: str
    system_prompt: str  # build_system_prompt() of this version
    form: dict[str, Any]  # the form's fields (FORM_FIELDS order), as the widgets show them
    versions: list[PersonaInfo]  # newest first; the built-in (v0) last when there is one
    disk_error: str | None = None  # the built-in file on disk is broken; last good in use
    fell_back: bool = False  # the persona asked for is unknown: this is the default one
    fields: dict[str, Any] = field(default_factory=dict)  # the validated persona, field by field


@dataclass(frozen=True)
class RoundtableDraft:
    """Roundtable YAML that validates (not saved): its name and speakers in order."""

    id: str
    display_name: str
    speakers: list[str]  # persona ids, the chair last


@dataclass(frozen=True)
class PersonaDraft:
    """YAML that validates (not saved): what the form and the preview show for it."""

    id: str
    display_name: str
    system_prompt: str
    form: dict[str, Any]


@dataclass(frozen=True)
class FormResult:
    """A form edit merged into the YAML: the new text, and the prompt or the problems."""

    yaml_text: str
    system_prompt: str | None  # None when the merged document has problems
    problems: list[str]


@dataclass(frozen=True)
class PersonaChange:
    """After set_persona: the conversation, the persona it uses, whether anything changed."""

    conversation: Conversation
    persona: PersonaInfo
    changed: bool


@dataclass(frozen=True)
class TranscriptPage:
    """A page of a conversation's stored turns, oldest first (summaries included)."""

    turns: list[Turn]
    earlier: int | None  # newest page: user/assistant messages older than it; else None
    next_before: int | None  # pass as before_id for the page before this one; None: no more


@dataclass(frozen=True)
class OpenConversation:
    """Everything the chat pane shows for one conversation, or for a new chat."""

    state: Literal["open", "new", "missing", "unreadable"]
    conversation: Conversation | None  # None unless state == "open"
    persona: PersonaInfo
    transcript: TranscriptPage
    status: MemoryStatus | None  # None for a new chat (nothing remembered yet)
    preview: Preview  # what the model receives with the next message
    model: str  # display name of the model answering
    roundtable: RoundtableInfo | None = None  # set when the conversation uses a roundtable
    # Persona of each speaker named in the transcript (roundtable replies), for their bubbles.
    speakers: dict[str, PersonaInfo] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchResult:
    """One conversation matching a search."""

    conversation: Conversation
    title: str  # the title with matches wrapped in the search's mark; "" when untitled
    hits: list[SearchHit]  # its matching messages, newest first (may be empty: title match)
    persona: PersonaInfo | None
    # The personas whose roundtable replies are among the hits, by id (names for the sidebar).
    speakers: dict[str, PersonaInfo] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchResults:
    """A search over an owner's conversations, grouped by conversation, newest activity first."""

    query: str
    results: list[SearchResult] = field(default_factory=list)
    searchable: bool = True  # False: the query has no word the index can match
    available: bool = True  # False: storage is down, so nothing could be looked up
