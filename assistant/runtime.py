"""The composition root: data dir, store, persona registry, model, chat service and the
`Conversations` facade, built once per app (the UI and the API share one Runtime).

The store is opened lazily, on the first call, because aiosqlite must be used from the event
loop that serves the app (Gradio's), not the one that built the Blocks.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from personas import PersonaRegistry

from . import config
from .chat import ChatService
from .conversations import Conversations
from .embedding import Embedder, select_embedder
from .failopen import FailOpenStore
from .models import ChatModel
from .summarizer import summarizer_for


class Runtime:
    """Everything the UI and the API need, created once per app. Settings not passed come from
    assistant.config (argument > environment > default)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        model: ChatModel | None = None,
        quota_per_hour: int | str | None = None,
        embedder: Embedder | str | None = "default",
    ) -> None:
        self.data_dir: Path = config.data_dir(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.registry = PersonaRegistry(data_dir=self.data_dir)
        self.model = model if model is not None else config.select_model()
        self.quota_per_hour = config.quota_per_hour(quota_per_hour)
        # Recall by meaning as well as words: wordllama unless MNEMO_EMBEDDER says otherwise;
        # None means words only.
        self.embedder = select_embedder() if embedder == "default" else embedder
        self._store: FailOpenStore | None = None
        self._service: ChatService | None = None
        self._conversations: Conversations | None = None
        self._opening = asyncio.Lock()

    @property
    def model_name(self) -> str:
        return self.model.name

    async def conversations(self) -> Conversations:
        """The facade the UI and the API call for everything, opening the database on first
        use."""
        await self.service()
        assert self._conversations is not None
        return self._conversations

    async def service(self) -> ChatService:
        """The chat service, opening the database on first use."""
        if self._service is None:
            async with self._opening:
                if self._service is None:
                    # Fail open from the start: an unreadable database leaves the app
                    # answering without memory (the badge says so) and is retried later.
                    self._store = await FailOpenStore.open(
                        self.data_dir,
                        summarizer=summarizer_for(self.model),
                        embedder=self.embedder,
                    )
                    service = ChatService(
                        self._store,
                        self.registry,
                        self.model,
                        quota_per_hour=self.quota_per_hour,
                    )
                    self._conversations = Conversations(service)
                    self._service = service
        return self._service

    async def store(self) -> FailOpenStore:
        """The fail-open store (tests and tools; the UI goes through `conversations()`)."""
        await self.service()
        assert self._store is not None
        return self._store

    async def close(self) -> None:
        """Finish background work, then close the store (the model client stays usable: the
        Runtime may reopen the store on the next call)."""
        if self._service is not None:
            await self._service.wait_background()
        if self._store is not None:
            await self._store.close()
        self._store = None
        self._service = None
        self._conversations = None
