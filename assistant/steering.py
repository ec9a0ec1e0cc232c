"""The facade's memory-panel operations: see and steer what the assistant remembers.

`Conversations` (assistant/conversations.py) inherits these, so the UI and the HTTP API still
call one object: the memory panel of a conversation (summary, pinned facts, "about me", what
recall would bring back for a draft, the per-turn plots' numbers), pinning and unpinning,
the user's own summary, export and import as one JSON file, and deleting all of an owner's
data. Errors come out as `UserError`s through the facade's one table (`user_errors`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memory import ArchiveRefused, Conversation, MetricsRow, PinnedFact, Turn
from personas import DEFAULT_PERSONA_ID, PersonaNotFound

from .errors import InvalidInput

if TYPE_CHECKING:
    from .chat import ChatService

log = logging.getLogger(__name__)

EXPORT_FORMAT_NOTE = "Mnemo export: import it in Mnemo (Memory panel → Import) to continue."
PLOT_TURNS = 200  # the newest model calls a conversation's plots show
PARTS = ("persona", "pinned", "summary", "recalled", "recent")


@dataclass(frozen=True)
class MemoryPanel:
    """Everything the memory panel shows for one conversation."""

    summary: Turn | None  # the summary in the context (None: none yet, or cleared)
    pinned: list[PinnedFact]  # this conversation's
    about_me: list[PinnedFact]  # the owner's, whether or not they are on
    about_me_on: bool
    recalled: list[dict[str, str]]  # what recall brings back for the draft, oldest first
    budget: int
    pin_budget: int
    metrics: list[MetricsRow] = field(default_factory=list)  # oldest first, since the reset


@dataclass(frozen=True)
class Imported:
    """What an import created, and what the user should know about it."""

    conversations: list[Conversation]
    notes: list[str]  # e.g. a persona that differs from the one in the file


class MemoryControls:
    """Mixed into `Conversations`: needs `self.service`, `self.store`, `self.registry`,
    `self.roundtable_registry`, `self._personas()` and the facade's `user_errors`."""

    service: ChatService
    store: Any
    registry: Any
    roundtable_registry: Any
    _personas: Any  # Conversations._personas: a registry call in a thread

    async def memory(
        self, owner: str, conv_id: str | None, draft: str | None = None
    ) -> MemoryPanel:
        """The memory panel of a conversation (of a new chat when None: only "about me");
        with `draft`, what recall would bring back for it."""
        policy = self.store.policy
        with _user_errors("show the memory panel"):
            settings = await self.store.settings(owner)
            about_me = await self.store.about_me(owner)
            if conv_id is None:
                return MemoryPanel(
                    None,
                    [],
                    about_me,
                    settings.about_me,
                    [],
                    policy.history_chars,
                    policy.pin_budget,
                )
            context = await self.store.context(owner, conv_id, query=(draft or "").strip() or None)
            return MemoryPanel(
                summary=context.summary,
                pinned=await self.store.pinned(owner, conv_id),
                about_me=about_me,
                about_me_on=settings.about_me,
                recalled=[
                    {"role": r.turn.role, "content": r.turn.content} for r in context.recalled
                ],
                budget=context.budget,
                pin_budget=policy.pin_budget,
                metrics=await self.store.conversation_metrics(owner, conv_id, PLOT_TURNS),
            )

    async def pin(
        self, owner: str, conv_id: str | None, text: str, *, about_me: bool = False
    ) -> PinnedFact:
        """Pin a typed fact (or a message's text) to the conversation, or to "about me"."""
        with _user_errors("pin the fact"):
            if about_me:
                return await self.store.pin(owner, None, text)
            if not conv_id:
                raise InvalidInput("Send a first message, then pin facts to this conversation.")
            return await self.store.pin(owner, conv_id, text)

    async def unpin(self, owner: str, fact_id: int) -> None:
        with _user_errors("delete the pinned fact"):
            await self.store.unpin(owner, int(fact_id))

    async def set_about_me(self, owner: str, enabled: bool) -> bool:
        """Turn "about me" facts on for every conversation of the owner, or off."""
        with _user_errors("change “about me”"):
            return (await self.store.set_about_me(owner, bool(enabled))).about_me

    async def set_time_zone(self, owner: str, zone: str | None) -> str | None:
        """The owner's time zone (an IANA name from the browser) for the `today` tool; an
        unknown name is ignored (UTC is used)."""
        zone = (zone or "").strip() or None
        if zone is not None:
            try:
                ZoneInfo(zone)
            except (ZoneInfoNotFoundError, ValueError):
                log.info("ignoring unknown time zone %r", zone[:64])
                return None
        with _user_errors("remember your time zone"):
            return (await self.store.set_time_zone(owner, zone)).time_zone

    async def write_summary(self, owner: str, conv_id: str, text: str | None) -> Turn | None:
        """Replace the summary with the user's text (what the model gets from the next
        message on), or clear it (None or blank)."""
        with _user_errors("change the summary"):
            return await self.store.write_summary(owner, conv_id, text)

    async def search_for_tools(
        self, owner: str, query: str, leave_out: str | None = None
    ) -> list[dict[str, str]]:
        """The sidebar's search, flattened for the model's search_memory tool: the matching
        messages of the owner's other conversations, newest conversation first."""
        found = await self.search(owner, query, mark=("", ""))  # type: ignore[attr-defined]
        return [
            {
                "conversation": result.conversation.title or "Untitled",
                "role": hit.role,
                "snippet": hit.snippet,
                "date": time.strftime("%Y-%m-%d", time.gmtime(hit.created_at)),
            }
            for result in found.results
            if result.conversation.id != leave_out
            for hit in result.hits
        ]

    # -- export, import, delete everything -------------------------------------------------

    async def export(self, owner: str, conv_id: str | None = None) -> str:
        """One conversation (or, with None, all of the owner's and their "about me" facts) as
        one JSON document, with a snapshot of each conversation's persona."""
        with _user_errors("export"):
            doc = await self.store.export(owner, None if conv_id is None else [conv_id])
            for conv in doc["conversations"]:
                conv["persona"]["snapshot"] = await self._persona_snapshot(owner, conv["persona"])
        doc["note"] = EXPORT_FORMAT_NOTE
        return json.dumps(doc, ensure_ascii=False, indent=1)

    async def _persona_snapshot(self, owner: str, persona: dict[str, Any]) -> dict[str, Any]:
        try:
            found = await self._personas(self.registry.get, owner, persona["id"])
        except PersonaNotFound:
            return {}
        return {
            "display_name": found.persona.display_name,
            "version": found.version,
            "yaml": found.yaml_text,
        }

    async def import_file(self, owner: str, raw: bytes | str) -> Imported:
        """Create new conversations from an export file; a malformed or oversized file is
        refused (InvalidInput saying where) and nothing is saved."""
        with _user_errors("import the file"):
            created = await self.store.import_archive(owner, raw)
        notes = []
        for conv, snapshot in zip(created, _snapshots(raw), strict=False):
            note = await self._persona_note(owner, conv, snapshot)
            if note:
                notes.append(note)
        return Imported(created, notes)

    async def _persona_note(self, owner: str, conv: Conversation, snapshot: dict) -> str | None:
        """Say so when the persona here differs from the one the file was exported with."""
        wanted = snapshot.get("yaml")
        try:
            here = await self._personas(self.registry.get, owner, conv.persona_id)
        except PersonaNotFound:
            return (
                f"“{conv.title or 'Untitled'}” used the persona {conv.persona_id!r}, which you do "
                f"not have; {DEFAULT_PERSONA_ID!r} answers instead."
            )
        if wanted and wanted.strip() != here.yaml_text.strip():
            return (
                f"“{conv.title or 'Untitled'}” was exported with another version of "
                f"{here.persona.display_name}; your version answers from now on."
            )
        return None

    async def delete_everything(self, owner: str) -> int:
        """Delete all of the owner's data: conversations, messages, summaries, pins, settings
        and saved personas and roundtables. Returns how many conversations went."""
        with _user_errors("delete your data"):
            removed = await self.store.delete_owner(owner)
            await asyncio.to_thread(self.registry.forget_owner, owner)
            await asyncio.to_thread(self.roundtable_registry.forget_owner, owner)
        return removed


def _user_errors(action: str) -> Any:
    # The facade's one error table; conversations.py imports this module, hence here.
    from .conversations import user_errors

    return user_errors(action)


def _snapshots(raw: bytes | str) -> list[dict[str, Any]]:
    try:
        return [c["persona"].get("snapshot") or {} for c in json.loads(raw)["conversations"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # already validated
        raise ArchiveRefused("The file changed while it was imported.") from exc
