"""The roundtable half of the `Conversations` facade: which turn a conversation gets (plain or
roundtable), what each speaker receives, and listing, opening, saving and rolling back an
owner's roundtables (the roundtable turn itself is assistant/roundtable.py). A mixin, so the
UI and the API still call one object; kept apart so neither module outgrows a page."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, TypeVar

from memory import ConversationNotFound, StorageUnavailable, Turn
from personas import (
    InvalidPersona,
    PersonaError,
    PersonaRegistry,
    PersonaVersion,
    RoundtableRegistry,
    load_roundtable_text,
)

from .chat import ChatService, Preview
from .errors import InvalidPersonaYaml, RoundtableUnavailable
from .failopen import FailOpenStore
from .records import (
    PersonaInfo,
    RoundtableDocument,
    RoundtableDraft,
    RoundtableInfo,
    VersionEntry,
)
from .roundtable import RoundtableRunner, roundtable_id_of, unreadable_roundtable

T = TypeVar("T")


class RoundtableOps:
    """Roundtable operations of the facade; `Conversations` provides the attributes below."""

    registry: PersonaRegistry
    roundtable_registry: RoundtableRegistry
    roundtable_runner: RoundtableRunner
    service: ChatService
    store: FailOpenStore
    _errors: Callable[[str], AbstractContextManager[None]]

    async def _personas(self, call: Callable[..., T], *args: Any) -> T:
        """A registry call, in a thread: it reads and writes files."""
        return await asyncio.to_thread(call, *args)

    async def _persona_id(self, owner: str, conv_id: str) -> str | None:
        """The conversation's persona id, or None when it cannot be read (unsaved, gone)."""
        try:
            return (await self.store.get_conversation(owner, conv_id)).persona_id
        except (ConversationNotFound, StorageUnavailable):
            return None

    async def _send(
        self, owner: str, conv_id: str, text: str, language: str | None
    ) -> AsyncIterator[Any]:
        await self.service.expect(owner, conv_id, text)  # embedding while the lookup runs
        persona_id = await self._persona_id(owner, conv_id)
        roundtable_id = roundtable_id_of(persona_id)
        if roundtable_id is None:
            # The persona id just read goes along: the service need not read it again.
            events = self.service.send(owner, conv_id, text, persona_id)
        else:
            events = self.roundtable_runner.send(owner, conv_id, text, roundtable_id, language)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def _retry(self, owner: str, conv_id: str, language: str | None) -> AsyncIterator[Any]:
        roundtable_id = roundtable_id_of(await self._persona_id(owner, conv_id))
        if roundtable_id is None:
            events = self.service.retry(owner, conv_id)
        else:
            events = self.roundtable_runner.retry(owner, conv_id, roundtable_id, language)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def _speakers(self, owner: str, turns: list[Turn]) -> dict[str, PersonaInfo]:
        """The persona of every speaker the turns name (one that is gone is left out)."""
        wanted = {t.speaker for t in turns if t.speaker}
        if not wanted:
            return {}
        listed = await self._personas(self.registry.list, owner)
        return {p.id: PersonaInfo.of(p) for p in listed if p.id in wanted}

    async def _with_members(
        self, owner: str, conv_id: str, preview: Preview, draft: str | None, language: str | None
    ) -> Preview:
        """A roundtable conversation's preview gains what each speaker receives."""
        roundtable_id = roundtable_id_of(await self._persona_id(owner, conv_id))
        if roundtable_id is None:
            return preview
        try:
            members = await self.roundtable_runner.preview(
                owner, conv_id, roundtable_id, draft, language
            )
        except RoundtableUnavailable:
            return preview  # open() says why; the inspector shows the plain preview
        return replace(preview, members=members)

    async def roundtables(self, owner: str) -> list[RoundtableInfo]:
        """The roundtables this owner can pick, each as in use (an unusable one says why)."""
        with self._errors("list the roundtables"):
            listed = await self._personas(self.roundtable_registry.list, owner)
            personas = await self._by_id(owner)
            return [RoundtableInfo.of(v, personas) for v in listed]

    async def _by_id(self, owner: str) -> dict[str, PersonaVersion]:
        return {p.id: p for p in await self._personas(self.registry.list, owner)}

    async def _roundtable_info(
        self, owner: str, ref_or_id: str | None, *, strict: bool = True
    ) -> RoundtableInfo:
        roundtable_id = roundtable_id_of(ref_or_id) or ref_or_id or ""
        try:
            found = await self._personas(self.roundtable_registry.get, owner, roundtable_id)
        except PersonaError as exc:
            raise unreadable_roundtable(roundtable_id, exc) from exc
        info = RoundtableInfo.of(found, await self._by_id(owner))
        if strict and not info.available:
            raise RoundtableUnavailable(info.problem or "This roundtable cannot be used.")
        return info

    @staticmethod
    def _chair_info(board: RoundtableInfo) -> PersonaInfo:
        return next(p for p in board.speakers if p.id == board.chair)

    async def _choice(self, owner: str, persona_id: str) -> tuple[str, PersonaInfo]:
        """What a conversation stores for a persona or roundtable pick, and who speaks for it
        (a roundtable's chair); raises when it is unknown or unusable."""
        if roundtable_id_of(persona_id) is not None:
            board = await self._roundtable_info(owner, persona_id)
            return board.ref, self._chair_info(board)
        found = await self._personas(self.registry.get, owner, persona_id)
        return found.id, PersonaInfo.of(found)

    async def _board_of(
        self, owner: str, persona_id: str | None
    ) -> tuple[RoundtableInfo | None, str | None]:
        """For open(): the roundtable a persona id names (None if none, or gone) and the
        persona to show where one is expected — the chair (its greeting), else `persona_id`."""
        if roundtable_id_of(persona_id) is None:
            return None, persona_id
        with contextlib.suppress(RoundtableUnavailable):
            board = await self._roundtable_info(owner, persona_id, strict=False)
            return board, board.chair
        return None, None

    async def roundtable(self, owner: str, roundtable_id: str) -> RoundtableDocument:
        """The roundtable editor's view: the YAML in use and its versions."""
        with self._errors("open the roundtable"):
            registry = self.roundtable_registry
            found = await self._personas(registry.get, owner, roundtable_id)
            versions = await self._personas(registry.versions, owner, roundtable_id)
            return RoundtableDocument(
                info=RoundtableInfo.of(found, await self._by_id(owner)),
                yaml_text=found.yaml_text,
                versions=[VersionEntry(v.version, v.saved_at) for v in versions],
                disk_error=registry.last_error(roundtable_id),
            )

    @staticmethod
    def validate_roundtable(yaml_text: str) -> RoundtableDraft:
        """Validate roundtable YAML without saving; raises InvalidPersonaYaml with located
        problems (whether its personas exist is for the owner: `roundtables()` says)."""
        try:
            board = load_roundtable_text(yaml_text or "")
        except InvalidPersona as exc:
            located = [
                {"field": p.field, "message": p.message, "line": p.line, "column": p.column}
                for p in exc.details
            ]
            raise InvalidPersonaYaml(str(exc), list(exc.problems), located) from exc
        return RoundtableDraft(board.id, board.display_name, list(board.speakers))

    async def save_roundtable(self, owner: str, yaml_text: str) -> RoundtableInfo:
        """Save a new version for this owner, used from the next message. Bad YAML raises
        InvalidPersonaYaml with located problems and changes nothing."""
        with self._errors("save the roundtable"):
            saved = await self._personas(self.roundtable_registry.save, owner, yaml_text or "")
            return RoundtableInfo.of(saved, await self._by_id(owner))

    async def rollback_roundtable(
        self, owner: str, roundtable_id: str, version: int
    ) -> RoundtableInfo:
        """Use an earlier version (0: the built-in) from the next message."""
        with self._errors("roll back the roundtable"):
            registry = self.roundtable_registry
            found = await self._personas(registry.rollback, owner, roundtable_id, int(version))
            return RoundtableInfo.of(found, await self._by_id(owner))
