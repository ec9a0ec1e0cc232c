"""The facade's change of a conversation's title, persona and retention in one go (PATCH in
the HTTP API): all of them change, or, when one is refused, none. A mixin of `Conversations`,
as the roundtable operations are, so conversations.py stays a page."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import replace

from .failopen import FailOpenStore
from .records import Conversation, ConversationEdit, PersonaInfo


class ConversationEdits:
    """`Conversations` provides the attributes below (`_choice` from RoundtableOps)."""

    store: FailOpenStore
    _errors: Callable[[str], AbstractContextManager[None]]
    _choice: Callable[[str, str], Awaitable[tuple[str, PersonaInfo]]]

    async def update(self, owner: str, conv_id: str, edit: ConversationEdit) -> Conversation:
        """Apply `edit` whole. The persona is resolved first (an unknown one is refused
        before anything is written); the store writes every change in one statement."""
        with self._errors("change the conversation"):
            if edit.persona_id is not None:
                chosen, _ = await self._choice(owner, edit.persona_id)
                edit = replace(edit, persona_id=chosen, persona_version=None)
            return await self.store.update_conversation(owner, conv_id, edit)
