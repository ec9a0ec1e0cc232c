"""The roundtable half of the `Conversations` facade: list, open, save and roll back an owner's
roundtables (the chat turn itself is assistant/roundtable.py). A mixin, so the UI and the API
still call one object; kept apart so neither module outgrows a page."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from personas import PersonaError, PersonaRegistry, PersonaVersion, RoundtableRegistry

from .errors import RoundtableUnavailable
from .records import PersonaInfo, RoundtableDocument, RoundtableInfo
from .roundtable import roundtable_id_of

T = TypeVar("T")


class RoundtableOps:
    """Roundtable operations of the facade; `Conversations` provides the attributes below."""

    registry: PersonaRegistry
    roundtable_registry: RoundtableRegistry
    _errors: Callable[[str], AbstractContextManager[None]]

    async def _personas(self, call: Callable[..., T], *args: Any) -> T:
        """A registry call, in a thread: it reads and writes files."""
        return await asyncio.to_thread(call, *args)

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
            raise RoundtableUnavailable(
                f"No roundtable {roundtable_id!r}: pick another one, or a single persona."
            ) from exc
        info = RoundtableInfo.of(found, await self._by_id(owner))
        if strict and not info.available:
            raise RoundtableUnavailable(info.problem or "This roundtable cannot be used.")
        return info

    @staticmethod
    def _chair_info(board: RoundtableInfo) -> PersonaInfo:
        return next(p for p in board.speakers if p.id == board.chair)

    async def roundtable(self, owner: str, roundtable_id: str) -> RoundtableDocument:
        """The roundtable editor's view: the YAML in use and its versions."""
        with self._errors("open the roundtable"):
            registry = self.roundtable_registry
            found = await self._personas(registry.get, owner, roundtable_id)
            versions = await self._personas(registry.versions, owner, roundtable_id)
            return RoundtableDocument(
                info=RoundtableInfo.of(found, await self._by_id(owner)),
                yaml_text=found.yaml_text,
                versions=[v.label for v in versions],
                version_numbers=[v.version for v in versions],
                disk_error=registry.last_error(roundtable_id),
            )

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
