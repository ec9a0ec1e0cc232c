"""The app's long-lived services: store, persona registry, model and chat service.

The store is opened lazily, on the first event, because aiosqlite must be used from the event
loop that serves the app (Gradio's), not the one that built the Blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from assistant import config
from assistant.chat import ChatService
from assistant.models import ChatModel
from assistant.summarizer import summarizer_for
from memory import FailOpenStore
from personas import PersonaRegistry

SPACE_DATA_DIR = Path("/data")


def app_data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Where the app keeps its data: argument, else $MNEMO_DATA_DIR, else /data on a Hugging
    Face Space with persistent storage, else ./data."""
    if (
        path is None
        and not os.environ.get("MNEMO_DATA_DIR", "").strip()
        and os.environ.get("SPACE_ID")
        and SPACE_DATA_DIR.is_dir()
    ):
        return SPACE_DATA_DIR
    return config.data_dir(path)


def server_host(value: str | None = None) -> str:
    """Listen address: argument, else $MNEMO_HOST, else 0.0.0.0 on a Space, else 127.0.0.1."""
    if value is None and not os.environ.get("MNEMO_HOST") and os.environ.get("SPACE_ID"):
        return "0.0.0.0"
    return config.host(value)


class Runtime:
    """Everything the handlers need, created once per app."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        model: ChatModel | None = None,
        quota_per_hour: int | None = None,
    ) -> None:
        self.data_dir = app_data_dir(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.registry = PersonaRegistry(data_dir=self.data_dir)
        self.model = model if model is not None else config.select_model()
        self.quota_per_hour = (
            quota_per_hour if quota_per_hour is not None else config.quota_per_hour()
        )
        self._store: FailOpenStore | None = None
        self._service: ChatService | None = None
        self._opening = asyncio.Lock()
        self._turn_locks: dict[str, asyncio.Lock] = {}

    @property
    def model_name(self) -> str:
        return self.model.name

    async def service(self) -> ChatService:
        """The chat service, opening the database on first use."""
        if self._service is None:
            async with self._opening:
                if self._service is None:
                    # Fail open from the start: an unreadable database leaves the app
                    # answering without memory (the badge says so) and is retried later.
                    self._store = await FailOpenStore.open(
                        self.data_dir, summarizer=summarizer_for(self.model)
                    )
                    self._service = ChatService(
                        self._store,
                        self.registry,
                        self.model,
                        quota_per_hour=self.quota_per_hour,
                    )
        return self._service

    async def store(self) -> FailOpenStore:
        await self.service()
        assert self._store is not None
        return self._store

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str) -> AsyncIterator[None]:
        """Held while a reply streams, so a refresh after Stop sees the saved partial reply."""
        lock = self._turn_locks.setdefault(conversation_id, asyncio.Lock())
        async with lock:
            yield

    async def settled(self, conversation_id: str | None, wait_s: float = 10.0) -> None:
        """Wait until no reply is streaming into this conversation (or the timeout passes)."""
        lock = self._turn_locks.get(conversation_id or "")
        if lock is None or not lock.locked():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                await lock.acquire()
                lock.release()

    async def close(self) -> None:
        if self._store is not None:
            await self._store.close()
        self._store = None
        self._service = None
