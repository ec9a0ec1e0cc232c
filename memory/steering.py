"""The store's verbs for memory the user steers: pinned facts, "about me", the user's own
summary, per-conversation metrics for the plots, export / import, deleting an owner.

`ConversationStore` inherits them; the work is in memory/pins.py and memory/archive.py, over the
store's connections, policy and clock.
"""

from __future__ import annotations

from collections.abc import Callable

from . import archive, pins, sql
from .connection import Connections
from .policy import MemoryPolicy
from .records import Conversation, MetricsRow, OwnerSettings, PinnedFact, Turn
from .vectors import Embedder, embed_packed


class SteeringVerbs:
    """Mixed into ConversationStore (which sets these attributes and has get_conversation)."""

    _db: Connections
    policy: MemoryPolicy
    _clock: Callable[[], float]
    embedder: Embedder | None

    async def conversation_metrics(
        self, owner: str, conv_id: str, limit: int = 200
    ) -> list[MetricsRow]:
        """The newest `limit` model calls of the conversation since its last reset, oldest
        first: numbers only, for the memory panel's plots."""
        async with self._db.read() as db:
            await pins.visible(db, self._clock, owner, conv_id)
            rows = await db.execute_fetchall(
                sql.CONVERSATION_METRICS, (conv_id, owner, max(0, int(limit)))
            )
        return [sql.metrics_from_row(r) for r in reversed(rows)]

    # -- pinned facts, "about me", the user's summary ------------------------------------

    async def pin(
        self,
        owner: str,
        conv_id: str | None,
        text: str | None = None,
        *,
        source_turn_id: int | None = None,
    ) -> PinnedFact:
        """Pin a fact (`text`, or the message `source_turn_id`) to the conversation, or to
        "about me" when `conv_id` is None. PinRefused when it is empty, too long, or over
        the pinned-facts budget (memory/pins.py)."""
        return await pins.pin(
            self._db, self.policy, self._clock, owner, conv_id, text, source_turn_id=source_turn_id
        )

    async def unpin(self, owner: str, fact_id: int) -> None:
        await pins.unpin(self._db, owner, fact_id)

    async def pinned(self, owner: str, conv_id: str) -> list[PinnedFact]:
        """The conversation's own pinned facts, oldest first."""
        return await pins.conversation_pins(self._db, self._clock, owner, conv_id)

    async def about_me(self, owner: str) -> list[PinnedFact]:
        """The owner's "about me" facts, oldest first (whether or not they are turned on)."""
        return await pins.about_me_pins(self._db, owner)

    async def settings(self, owner: str) -> OwnerSettings:
        return await pins.settings(self._db, owner)

    async def set_about_me(self, owner: str, enabled: bool) -> OwnerSettings:
        """Turn "about me" facts on (they reach every conversation of the owner) or off."""
        return await pins.set_about_me(self._db, owner, enabled)

    async def set_time_zone(self, owner: str, zone: str | None) -> OwnerSettings:
        return await pins.set_time_zone(self._db, owner, zone)

    async def write_summary(self, owner: str, conv_id: str, text: str | None) -> Turn | None:
        """Replace the conversation's summary with the user's text, or clear it (None)."""
        return await pins.write_summary(self._db, self.policy, self._clock, owner, conv_id, text)

    # -- export, import, deleting an owner ------------------------------------------------

    async def export(self, owner: str, conv_ids: list[str] | None = None) -> dict[str, object]:
        """The conversations (all of the owner's when None) as one JSON-ready document."""
        return await archive.export(self._db, self._clock, owner, conv_ids)

    async def import_archive(self, owner: str, raw: bytes | str) -> list[Conversation]:
        """Check an export file, then create its conversations in one transaction; nothing
        is saved when it is refused (ArchiveRefused says why)."""
        parsed = archive.parse_archive(raw)
        # Embedded before the transaction, as append does: recall by meaning finds them too.
        vectors = [
            await embed_packed(self.embedder, [t.content for t in c.turns])
            for c in parsed.conversations
        ]
        model = self.embedder.name if self.embedder is not None else ""
        ids = await archive.import_archive(
            self._db, self.policy, self._clock, owner, parsed, vectors, model
        )
        return [await self.get_conversation(owner, i) for i in ids]  # type: ignore[attr-defined]

    async def delete_owner(self, owner: str) -> int:
        """Delete everything of the owner; returns how many conversations went."""
        return await archive.delete_owner(self._db, self._clock, owner)
