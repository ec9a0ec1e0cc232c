"""INTERIM: what the API needs from the service facade, until assistant/conversations.py lands.

This module is the only place the API touches the layers below the assistant; it goes away
when the facade (the architecture issue) is on main, and ERRORS then maps the facade's one
user-error family.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from assistant.chat import ChatEvent, ChatService, Preview
from assistant.errors import (
    AssistantError,
    BlockedBySafety,
    InvalidMessage,
    NothingToRetry,
    QuotaExceeded,
    StorageError,
)
from assistant.tokens import ApiTokens
from memory import (
    ConversationNotFound,
    InvalidInput,
    MemoryStoreError,
    StorageUnavailable,
    TokenNotFound,
)
from personas import (
    InvalidPersona,
    PersonaError,
    PersonaNotFound,
    Problem,
    build_system_prompt,
    read_persona_mapping,
)
from personas.loader import dump_persona_mapping


def _persona_errors(exc: BaseException) -> dict[str, Any]:
    return {
        "errors": [
            {"field": p.field, "message": p.message, "line": p.line, "column": p.column}
            for p in getattr(exc, "details", [])
        ]
    }


# (error class, problem slug, extra members) — most specific first.
ERRORS: list[tuple[type[BaseException], str, Callable[[BaseException], dict] | None]] = [
    (InvalidMessage, "invalid-message", None),
    (QuotaExceeded, "quota-exceeded", None),
    (NothingToRetry, "nothing-to-retry", None),
    (BlockedBySafety, "model-refused", None),
    (StorageError, "storage-unavailable", None),
    (AssistantError, "model-unavailable", None),
    (InvalidPersona, "invalid-persona", _persona_errors),
    (PersonaNotFound, "not-found", None),
    (PersonaError, "invalid-request", None),
    (ConversationNotFound, "not-found", None),
    (TokenNotFound, "not-found", None),
    (InvalidInput, "invalid-request", None),
    (StorageUnavailable, "storage-unavailable", None),
    (MemoryStoreError, "invalid-request", None),
]


class Conversations:
    """The facade's operations the API calls, over today's ChatService and registry."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.registry = rt.registry
        self.tokens = ApiTokens(self)

    @property
    def model_name(self) -> str:
        return self.rt.model_name

    async def _service(self) -> ChatService:
        return await self.rt.service()

    # tokens (the TokenStore protocol, over the store opened lazily)
    async def add_token(self, owner: str, name: str, token_hash: str, hint: str):
        return await (await self.rt.store()).add_token(owner, name, token_hash, hint)

    async def list_tokens(self, owner: str):
        return await (await self.rt.store()).list_tokens(owner)

    async def revoke_token(self, owner: str, token_id: str):
        return await (await self.rt.store()).revoke_token(owner, token_id)

    async def token_by_hash(self, token_hash: str):
        return await (await self.rt.store()).token_by_hash(token_hash)

    # personas
    async def list_personas(self, owner: str):
        return await asyncio.to_thread(self.registry.list, owner)

    async def persona(self, owner: str, persona_id: str, version: int | None = None):
        return await asyncio.to_thread(self.registry.get, owner, persona_id, version)

    async def save_persona(self, owner: str, yaml_text: str):
        return await asyncio.to_thread(self.registry.save, owner, yaml_text)

    async def put_persona(
        self, owner: str, persona_id: str, yaml_text: str | None, fields: dict | None
    ):
        """Save a new version of `persona_id` from YAML text or a JSON object of fields."""

        def put():
            if fields is not None:
                data = {"id": persona_id, **fields}
            else:
                data = read_persona_mapping(yaml_text or "")
            if data.get("id", persona_id) != persona_id:
                raise InvalidPersona(
                    [
                        Problem(
                            "id",
                            f"is {data.get('id')!r} but the URL names {persona_id!r} — make "
                            "them match, or PUT to /personas/" + str(data.get("id")),
                        )
                    ]
                )
            # YAML is saved as written (so line numbers in errors are the client's own);
            # a JSON object becomes YAML first.
            text = dump_persona_mapping(data) if fields is not None else yaml_text or ""
            return self.registry.save(owner, text)

        return await asyncio.to_thread(put)

    def system_prompt(self, persona) -> str:
        return build_system_prompt(persona)

    async def persona_versions(self, owner: str, persona_id: str):
        return await asyncio.to_thread(self.registry.versions, owner, persona_id)

    async def rollback_persona(self, owner: str, persona_id: str, version: int):
        return await asyncio.to_thread(self.registry.rollback, owner, persona_id, version)

    async def refresh_personas(self) -> dict[str, str | None]:
        def refresh() -> dict[str, str | None]:
            ids = sorted(self.registry._refresh_builtins())
            return {i: self.registry.last_error(i) for i in ids}

        return await asyncio.to_thread(refresh)

    # conversations
    async def list_conversations(self, owner: str, limit: int):
        return await (await self.rt.store()).list_conversations(owner, limit=limit)

    async def create(
        self,
        owner: str,
        persona_id: str | None,
        title: str | None,
        retention_minutes: int | None,
    ):
        persona = await self.persona(owner, persona_id or "assistant")
        conversation = await (await self.rt.store()).create_conversation(
            owner, title=title, persona_id=persona.id, retention_minutes=retention_minutes
        )
        if conversation.id.startswith("unsaved"):
            raise StorageUnavailable("The conversation database is unavailable.")
        return conversation

    async def get(self, owner: str, conv_id: str):
        return await (await self.rt.store()).get_conversation(owner, conv_id)

    async def rename(self, owner: str, conv_id: str, title: str):
        return await (await self.rt.store()).rename_conversation(owner, conv_id, title)

    async def set_persona(self, owner: str, conv_id: str, persona_id: str):
        await self.persona(owner, persona_id)
        return await (await self.rt.store()).set_persona(owner, conv_id, persona_id)

    async def set_retention(self, owner: str, conv_id: str, minutes: int | None):
        return await (await self.rt.store()).set_retention(owner, conv_id, minutes)

    async def delete(self, owner: str, conv_id: str) -> None:
        await (await self.rt.store()).delete_conversation(owner, conv_id)

    async def transcript(self, owner: str, conv_id: str, limit: int, before_id: int | None):
        return await (await self.rt.store()).transcript(
            owner, conv_id, limit=limit, before_id=before_id
        )

    async def status(self, owner: str, conv_id: str):
        return await (await self._service()).status(owner, conv_id)

    async def preview(self, owner: str, conv_id: str, draft: str | None = None) -> Preview:
        await (await self.rt.store()).get_conversation(owner, conv_id)
        return await (await self._service()).preview(owner, conv_id, draft=draft)

    async def reset(self, owner: str, conv_id: str):
        await (await self.rt.store()).get_conversation(owner, conv_id)
        return await (await self._service()).reset(owner, conv_id)

    async def search(self, owner: str, query: str, limit: int):
        found = await (await self.rt.store()).find_conversations(owner, query, limit=limit)
        hits = await (await self.rt.store()).search(owner, query, limit=200)
        grouped: dict[str, list] = {}
        for hit in hits:
            grouped.setdefault(hit.conversation_id, []).append(hit)
        return [(c, grouped.get(c.id, [])) for c in found]

    async def send(self, owner: str, conv_id: str, text: str) -> AsyncIterator[ChatEvent]:
        await (await self.rt.store()).get_conversation(owner, conv_id)
        async for event in (await self._service()).send(owner, conv_id, text):
            yield event
