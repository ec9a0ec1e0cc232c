"""The composition root: data dir, store, persona registry, model, chat service and the
`Conversations` facade, built once per app (the UI and the API share one Runtime).

The store is opened lazily, on the first call, because aiosqlite (and psycopg's async pool)
must be used from the event loop that serves the app (Gradio's), not the one that built the
Blocks. The store is SQLite in the data dir, or PostgreSQL when MNEMO_DATABASE_URL is set.

`drain()` is the graceful half of stopping the app (SIGTERM, Ctrl-C; api/server.py runs it
once it has stopped listening): no new reply starts, replies streaming get a grace period to
finish, the rest are stopped as the Stop button does (the chat service saves what arrived,
marked incomplete), then background work gets a few seconds and the store is closed, which
checkpoints the WAL away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from personas import PersonaRegistry, RoundtableRegistry
from personas.postgres import PostgresVersions

from . import config
from .chat import ChatService
from .conversations import Conversations
from .embedding import Embedder, select_embedder
from .errors import SHUTTING_DOWN, ShuttingDown
from .failopen import FailOpenStore
from .models import ChatModel
from .summarizer import summarizer_for

log = logging.getLogger(__name__)

BACKGROUND_S = 3.0  # on shutdown, after the replies: metrics and summaries may finish
CANCEL_S = 3.0  # on shutdown, a stopped reply's save of what had arrived


def one_blas_thread() -> None:
    """One BLAS thread for the whole process (threadpoolctl), as USE already takes for its
    own calls. Recall's matrix products on the event loop (a question against every turn of a
    600+ message conversation) ran on OpenBLAS's default of one thread per core, and on this
    shared 2-core machine the second thread cost more than it saved: context assembly CPU
    p50 10.5 -> 7.4 ms and p99 100-130 -> 14-17 ms over long_memory's conversations
    (bench/results/turn_million.md, 2026-12-02)."""
    import numpy  # noqa: F401 (its OpenBLAS must be loaded to be limited)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


@dataclass(frozen=True)
class Drained:
    """What a shutdown did with the replies that were streaming when it began."""

    finished: int  # completed within the grace period
    stopped: int  # stopped after it; what had arrived is saved, marked incomplete


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
        database_url: str | None = None,
    ) -> None:
        one_blas_thread()
        self.data_dir: Path = config.data_dir(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # With a database URL, everything replicas share lives there: conversations, metrics
        # (so the quota), and saved persona versions. The browser secret comes from
        # MNEMO_SECRET (see ui/sessions.py).
        self.database_url = config.database_url(database_url)
        # Only PostgreSQL has the choice (SQLite's WAL commits without waiting for fsync).
        self._backend_options = (
            {"append_commit": config.pg_append_commit()} if self.database_url else {}
        )
        versions = roundtable_versions = None
        # The persona version stores with a pool of their own, closed with the store.
        self._version_pools: list[PostgresVersions] = []
        if self.database_url:
            # Roundtables reuse the persona storage, in a namespace of their own.
            versions = PostgresVersions(self.database_url)
            roundtable_versions = PostgresVersions(
                self.database_url, namespace=RoundtableRegistry.folder
            )
            self._version_pools = [versions, roundtable_versions]
        self.registry = PersonaRegistry(data_dir=self.data_dir, versions=versions)
        self.roundtables = RoundtableRegistry(data_dir=self.data_dir, versions=roundtable_versions)
        self.model = model if model is not None else config.select_model()
        self.quota_per_hour = config.quota_per_hour(quota_per_hour)
        # Recall by meaning as well as words: wordllama unless MNEMO_EMBEDDER says otherwise;
        # None means words only.
        self.embedder = select_embedder() if embedder == "default" else embedder
        self._store: FailOpenStore | None = None
        self._service: ChatService | None = None
        self._conversations: Conversations | None = None
        self._opening = asyncio.Lock()
        self.draining = False

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
                        self.database_url or self.data_dir,
                        summarizer=summarizer_for(self.model),
                        embedder=self.embedder,
                        **self._backend_options,
                    )
                    service = ChatService(
                        self._store,
                        self.registry,
                        self.model,
                        quota_per_hour=self.quota_per_hour,
                    )
                    self._conversations = Conversations(service, self.roundtables)
                    self._service = service
        return self._service

    def accept_turn(self) -> None:
        """Raise ShuttingDown once the app has begun to stop: no new reply starts."""
        if self.draining:
            raise ShuttingDown(SHUTTING_DOWN)

    async def drain(self, grace_s: float) -> Drained:
        """Stop the app's chat gracefully (see the module docstring); then close."""
        self.draining = True
        streaming: set[asyncio.Task[Any]] = set()
        stopped: set[asyncio.Task[Any]] = set()
        if self._conversations is not None:
            self._conversations.draining = True
            streaming = set(self._conversations.replies)
        if streaming:
            _, stopped = await asyncio.wait(streaming, timeout=grace_s)
            for task in stopped:
                task.cancel()  # what Stop does: chat.py saves the partial reply, shielded
            if stopped:
                await asyncio.wait(stopped, timeout=CANCEL_S)
        if self._service is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(BACKGROUND_S):
                    await self._service.wait_background()
        await self.close()
        drained = Drained(finished=len(streaming) - len(stopped), stopped=len(stopped))
        log.info("shutdown: %d replies finished, %d saved as incomplete", *astuple(drained))
        return drained

    async def store(self) -> FailOpenStore:
        """The fail-open store (tests and tools; the UI goes through `conversations()`)."""
        await self.service()
        assert self._store is not None
        return self._store

    async def close(self) -> None:
        """Finish background work, then close the store and the persona version pools, so
        no database connection is left open (the model client stays usable: the Runtime
        may reopen the store and the pools on the next call)."""
        if self._service is not None:
            await self._service.wait_background()
        if self._store is not None:
            await self._store.close()
        for versions in self._version_pools:
            # psycopg's sync pool joins its worker threads: not on the event loop.
            await asyncio.to_thread(versions.close)
        self._store = None
        self._service = None
        self._conversations = None

    async def aclose(self) -> None:
        """`close()`, then the model client too: the runtime's end (the server shutting down).
        A client left open is closed by the garbage collector later, on whatever event loop
        runs then, while its connections belong to this one: "Event loop is closed"."""
        await self.close()
        closer = getattr(self.model, "aclose", None)
        if closer is not None:
            await closer()
