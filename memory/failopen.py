"""`FailOpenStore`: a chat that keeps answering when its memory fails.

Storage errors (locked, disk full, read-only, corrupt, or a database that will not even open)
never escape `context()`, `append()`, `status()` and the other calls a chat turn needs: they log
a warning and return an empty, degraded context, a "not saved" turn (id None), or a status with
`degraded=True` for the badge. Validation errors and `ConversationNotFound` still raise, and so
does `count_turn_requests()`: a quota fails closed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial

from .errors import StorageUnavailable
from .policy import MemoryPolicy
from .records import (
    ContextWindow,
    Conversation,
    MemoryStatus,
    ResetResult,
    SearchHit,
    Turn,
    TurnMetrics,
)
from .store import ConversationStore
from .summarize import Summarizer
from .validation import check_retention as _check_retention
from .validation import clean_title as _clean_title
from .validation import validate_message

log = logging.getLogger(__name__)

Opener = Callable[[], Awaitable[ConversationStore]]
UNSAVED_PREFIX = "unsaved-"
REOPEN_AFTER_S = 30.0  # after a failed open, wait this long before trying again


class FailOpenStore:
    """Wraps a ConversationStore, or an opener that makes one, so storage failures degrade."""

    def __init__(
        self,
        store_or_opener: ConversationStore | Opener,
        *,
        policy: MemoryPolicy | None = None,
        reopen_after: float = REOPEN_AFTER_S,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        if isinstance(store_or_opener, ConversationStore):
            self._store: ConversationStore | None = store_or_opener
            self._opener: Opener | None = None
            self.policy = store_or_opener.policy
        else:
            self._store = None
            self._opener = store_or_opener
            self.policy = policy or MemoryPolicy()
        self._reopen_after = reopen_after
        self._monotonic = monotonic
        self._last_attempt = float("-inf")
        self._open_error: StorageUnavailable | None = None
        self._failing: set[str] = set()  # "open", "read", "write": what failed last time

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        policy: MemoryPolicy | None = None,
        summarizer: Summarizer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> FailOpenStore:
        """Like ConversationStore.open, but never raises: a database that cannot be opened
        leaves the store degraded, and it tries again later."""
        wrapper = cls(
            partial(ConversationStore.open, path, policy, summarizer, clock), policy=policy
        )
        with contextlib.suppress(StorageUnavailable):
            await wrapper._get()
        return wrapper

    @property
    def degraded(self) -> bool:
        """True while the last open, read or write attempt failed."""
        return bool(self._failing)

    @property
    def store(self) -> ConversationStore | None:
        """The underlying store, or None while the database cannot be opened."""
        return self._store

    async def _get(self) -> ConversationStore:
        if self._store is not None:
            return self._store
        assert self._opener is not None
        now = self._monotonic()
        if self._open_error is not None and now - self._last_attempt < self._reopen_after:
            raise self._open_error
        self._last_attempt = now
        try:
            self._store = await self._opener()
        except StorageUnavailable as exc:
            log.warning("Memory database unavailable, answering without memory: %s", exc)
            self._open_error = exc
            self._failing.add("open")
            raise
        self._open_error = None
        self._failing.discard("open")
        return self._store

    def _failed(self, kind: str, what: str, exc: Exception) -> None:
        self._failing.add(kind)
        log.warning("Memory %s failed, continuing without it: %s", what, exc)

    def _worked(self, kind: str) -> None:
        self._failing.discard(kind)

    def _empty_context(self) -> ContextWindow:
        return ContextWindow(
            summary=None, turns=[], chars=0, budget=self.policy.history_chars, degraded=True
        )

    # -- fail-open calls ----------------------------------------------------------------

    async def create_conversation(
        self,
        owner: str,
        title: str | None = None,
        persona_id: str = "assistant",
        persona_version: int | None = None,
        retention_minutes: int | None = None,
    ) -> Conversation:
        """On storage failure: an unsaved conversation (id starts "unsaved-") to chat in."""
        title = _clean_title(title) if title is not None else None
        _check_retention(retention_minutes)
        try:
            store = await self._get()
            conv = await store.create_conversation(
                owner, title, persona_id, persona_version, retention_minutes
            )
        except StorageUnavailable as exc:
            self._failed("write", "create_conversation", exc)
            now = time.time()
            return Conversation(
                id=UNSAVED_PREFIX + secrets.token_urlsafe(16),
                owner=owner,
                title=title,
                persona_id=persona_id,
                persona_version=persona_version,
                retention_minutes=retention_minutes,
                created_at=now,
                last_active_at=now,
                message_count=0,
                active_count=0,
                chars=0,
                expires_at=None,
            )
        self._worked("write")
        return conv

    async def context(self, owner: str, conv_id: str, query: str | None = None) -> ContextWindow:
        if conv_id.startswith(UNSAVED_PREFIX):
            return self._empty_context()
        try:
            store = await self._get()
            window = await store.context(owner, conv_id, query=query)
        except StorageUnavailable as exc:
            self._failed("read", "context", exc)
            return self._empty_context()
        self._worked("read")
        return window

    async def append(
        self, owner: str, conv_id: str, role: str, content: str, *, incomplete: bool = False
    ) -> Turn:
        """On storage failure: a Turn with id None (`turn.saved` is False)."""
        validate_message(role, content)
        if not conv_id.startswith(UNSAVED_PREFIX):
            try:
                store = await self._get()
                turn = await store.append(owner, conv_id, role, content, incomplete=incomplete)
            except StorageUnavailable as exc:
                self._failed("write", "append", exc)
            else:
                self._worked("write")
                return turn
        return Turn(
            id=None,
            conversation_id=conv_id,
            role=role,  # type: ignore[arg-type]
            content=content,
            created_at=time.time(),
            incomplete=incomplete,
        )

    async def status(self, owner: str, conv_id: str) -> MemoryStatus:
        if not conv_id.startswith(UNSAVED_PREFIX):
            try:
                store = await self._get()
                status = await store.status(owner, conv_id)
            except StorageUnavailable as exc:
                self._failed("read", "status", exc)
            else:
                self._worked("read")
                return _degraded(status) if self.degraded else status
        return MemoryStatus(
            total=0,
            active=0,
            compacted=0,
            summaries=0,
            summary_covers=0,
            context_chars=0,
            budget=self.policy.history_chars,
            summarizing=False,
            retention_minutes=None,
            expires_at=None,
            degraded=True,
        )

    async def list_conversations(self, owner: str, limit: int = 100) -> list[Conversation]:
        try:
            return await (await self._get()).list_conversations(owner, limit)
        except StorageUnavailable as exc:
            self._failed("read", "list_conversations", exc)
            return []

    async def transcript(
        self, owner: str, conv_id: str, limit: int | None = None, *, before_id: int | None = None
    ) -> list[Turn]:
        if conv_id.startswith(UNSAVED_PREFIX):
            return []
        try:
            return await (await self._get()).transcript(owner, conv_id, limit, before_id=before_id)
        except StorageUnavailable as exc:
            self._failed("read", "transcript", exc)
            return []

    async def search(
        self, owner: str, text: str, limit: int = 20, mark: tuple[str, str] = ("**", "**")
    ) -> list[SearchHit]:
        try:
            return await (await self._get()).search(owner, text, limit, mark)
        except StorageUnavailable as exc:
            self._failed("read", "search", exc)
            return []

    async def find_conversations(
        self, owner: str, text: str, limit: int = 20
    ) -> list[Conversation]:
        try:
            return await (await self._get()).find_conversations(owner, text, limit)
        except StorageUnavailable as exc:
            self._failed("read", "find_conversations", exc)
            return []

    async def purge_expired(self) -> int:
        try:
            return await (await self._get()).purge_expired()
        except StorageUnavailable as exc:
            self._failed("write", "purge_expired", exc)
            return 0

    async def summarize_if_needed(self, owner: str, conv_id: str) -> bool:
        if conv_id.startswith(UNSAVED_PREFIX):
            return False
        try:
            return await (await self._get()).summarize_if_needed(owner, conv_id)
        except StorageUnavailable as exc:
            self._failed("write", "summarize_if_needed", exc)
            return False

    async def record_metrics(self, owner: str, conv_id: str | None, metrics: TurnMetrics) -> None:
        try:
            await (await self._get()).record_metrics(owner, conv_id, metrics)
        except StorageUnavailable as exc:
            self._failed("write", "record_metrics", exc)

    # -- calls that raise StorageUnavailable: the user asked for a change we cannot make -

    async def count_turn_requests(self, owner: str, since: float) -> int:
        """Raises StorageUnavailable on failure: the quota fails closed."""
        return await (await self._get()).count_turn_requests(owner, since)

    async def get_conversation(self, owner: str, conv_id: str) -> Conversation:
        return await (await self._get()).get_conversation(owner, conv_id)

    async def rename_conversation(self, owner: str, conv_id: str, title: str) -> Conversation:
        return await (await self._get()).rename_conversation(owner, conv_id, title)

    async def delete_conversation(self, owner: str, conv_id: str) -> None:
        await (await self._get()).delete_conversation(owner, conv_id)

    async def set_persona(
        self, owner: str, conv_id: str, persona_id: str, persona_version: int | None = None
    ) -> Conversation:
        return await (await self._get()).set_persona(owner, conv_id, persona_id, persona_version)

    async def set_retention(self, owner: str, conv_id: str, minutes: int | None) -> Conversation:
        return await (await self._get()).set_retention(owner, conv_id, minutes)

    async def reset(self, owner: str, conv_id: str) -> ResetResult:
        return await (await self._get()).reset(owner, conv_id)

    async def undo(self, owner: str, conv_id: str) -> list[Turn]:
        return await (await self._get()).undo(owner, conv_id)

    async def drop_last_reply(self, owner: str, conv_id: str) -> Turn | None:
        return await (await self._get()).drop_last_reply(owner, conv_id)

    async def close(self) -> None:
        if self._store is not None:
            await self._store.close()


def _degraded(status: MemoryStatus) -> MemoryStatus:
    return replace(status, degraded=True)
