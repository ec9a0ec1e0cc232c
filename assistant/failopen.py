"""Fail-open: a chat that keeps answering when its memory fails (DESIGN.md, "The chat turn").

`FailOpenStore` wraps a store (a `MemoryBackend`: SQLite or PostgreSQL), or an opener that makes
one (so a database that will not even open degrades too). What may degrade, and to what, is one
table: `FALLBACKS` maps a store verb to the fallback it answers with when storage fails
(`StorageUnavailable`) — an empty, degraded context, a "not saved" turn (id None), a status with
`degraded=True` for the badge, an unsaved conversation to chat in. Every other verb passes
through and raises: the user asked for a change that cannot be made (rename, delete, reset,
undo), or a check must fail closed (the quota's `count_turn_requests`). Validation errors and
`ConversationNotFound` always raise.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

from memory import (
    ContextWindow,
    Conversation,
    Embedder,
    MemoryBackend,
    MemoryPolicy,
    MemoryStatus,
    OwnerSettings,
    StorageUnavailable,
    Summarizer,
    Turn,
    check_retention,
    clean_title,
    open_store,
    validate_message,
)

log = logging.getLogger(__name__)

Opener = Callable[[], Awaitable[MemoryBackend]]
UNSAVED_PREFIX = "unsaved-"
REOPEN_AFTER_S = 30.0  # after a failed open, wait this long before trying again


def is_unsaved(conv_id: str) -> bool:
    """True for a conversation created while storage was down: it exists only on screen."""
    return conv_id.startswith(UNSAVED_PREFIX)


@dataclass(frozen=True)
class Degrade:
    """How one store verb degrades. `fallback` takes the wrapper and the verb's arguments."""

    kind: Literal["read", "write"]  # which part of storage failed, for `degraded`
    fallback: Callable[..., Any]
    # The verb takes (owner, conv_id, ...): an unsaved conversation never reaches the store.
    per_conversation: bool = False
    # Applied to a result that storage did return while something else is failing.
    while_degraded: Callable[[Any], Any] | None = None


def _unsaved_conversation(
    wrapper: FailOpenStore,
    owner: str,
    title: str | None = None,
    persona_id: str = "assistant",
    persona_version: int | None = None,
    retention_minutes: int | None = None,
) -> Conversation:
    # Memory's own checks: a bad title or retention is refused, storage or not.
    title = clean_title(title) if title is not None else None
    check_retention(retention_minutes)
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


def _unsaved_turn(
    wrapper: FailOpenStore,
    owner: str,
    conv_id: str,
    role: str,
    content: str,
    *,
    incomplete: bool = False,
    created_at: float | None = None,
    speaker: str | None = None,
    origin: str | None = None,
    outcome: str | None = None,
    outcome_note: str | None = None,
    draft: bool = False,
) -> Turn:
    validate_message(role, content)  # a bad message is refused, storage or not
    return Turn(
        id=None,
        conversation_id=conv_id,
        role=role,  # type: ignore[arg-type]
        content=content,
        created_at=time.time() if created_at is None else created_at,
        incomplete=incomplete or outcome is not None,
        speaker=speaker,
        origin=origin,  # type: ignore[arg-type]
        outcome=outcome,  # type: ignore[arg-type]
        outcome_note=outcome_note,
    )


def _empty_context(wrapper: FailOpenStore, *args: Any, **kwargs: Any) -> ContextWindow:
    budget = wrapper.policy.history_chars
    return ContextWindow(summary=None, turns=[], chars=0, budget=budget, degraded=True)


def _empty_status(wrapper: FailOpenStore, *args: Any, **kwargs: Any) -> MemoryStatus:
    return MemoryStatus(
        total=0,
        active=0,
        compacted=0,
        summaries=0,
        summary_covers=0,
        context_chars=0,
        budget=wrapper.policy.history_chars,
        summarizing=False,
        retention_minutes=None,
        expires_at=None,
        degraded=True,
    )


def _constant(value: Any) -> Callable[..., Any]:
    def fallback(wrapper: FailOpenStore, *args: Any, **kwargs: Any) -> Any:
        return value() if callable(value) else value

    return fallback


# The chat turn's policy: these verbs never fail a turn. Anything not listed raises.
FALLBACKS: dict[str, Degrade] = {
    "create_conversation": Degrade("write", _unsaved_conversation),
    "context": Degrade("read", _empty_context, per_conversation=True),
    "append": Degrade("write", _unsaved_turn, per_conversation=True),
    # The note stays on screen only; the reply itself never depended on it.
    "set_outcome": Degrade("write", _constant(None), per_conversation=True),
    "status": Degrade(
        "read",
        _empty_status,
        per_conversation=True,
        while_degraded=lambda status: replace(status, degraded=True),
    ),
    "transcript": Degrade("read", _constant(list), per_conversation=True),
    "summarize_if_needed": Degrade("write", _constant(False), per_conversation=True),
    "list_conversations": Degrade("read", _constant(list)),
    "search": Degrade("read", _constant(list)),
    "find_conversations": Degrade("read", _constant(list)),
    "purge_expired": Degrade("write", _constant(0)),
    "record_metrics": Degrade("write", _constant(None)),
    # The memory panel shows what it can while storage is down (the badge says degraded);
    # the tools read settings and fall back to "about me" off and UTC.
    "pinned": Degrade("read", _constant(list), per_conversation=True),
    "about_me": Degrade("read", _constant(list)),
    "settings": Degrade("read", _constant(OwnerSettings)),
    "conversation_metrics": Degrade("read", _constant(list), per_conversation=True),
}


class FailOpenStore:
    """Wraps a store, or an opener that makes one, so storage failures degrade as
    `FALLBACKS` says. Has every verb of the store; `degraded` says whether one failed lately."""

    def __init__(
        self,
        store_or_opener: MemoryBackend | Opener,
        *,
        policy: MemoryPolicy | None = None,
        reopen_after: float = REOPEN_AFTER_S,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        if isinstance(store_or_opener, MemoryBackend):
            self._store: MemoryBackend | None = store_or_opener
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
        target: str | os.PathLike[str],
        policy: MemoryPolicy | None = None,
        summarizer: Summarizer | None = None,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
        **backend_options: object,
    ) -> FailOpenStore:
        """Like `memory.open_store(target)` (a data dir, a .db file or a postgresql:// URL),
        but never raises StorageUnavailable: a database that cannot be opened leaves the store
        degraded, and it tries again later. `backend_options` go to the backend's open()
        (PostgreSQL's append_commit)."""
        opener = partial(
            open_store,
            target,
            policy=policy,
            summarizer=summarizer,
            clock=clock,
            embedder=embedder,
            **backend_options,
        )
        wrapper = cls(opener, policy=policy)
        with contextlib.suppress(StorageUnavailable):
            await wrapper._get()
        return wrapper

    @property
    def degraded(self) -> bool:
        """True while the last open, read or write attempt failed."""
        return bool(self._failing)

    @property
    def store(self) -> MemoryBackend | None:
        """The underlying store, or None while the database cannot be opened."""
        return self._store

    async def _get(self) -> MemoryBackend:
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

    def __getattr__(self, verb: str) -> Callable[..., Awaitable[Any]]:
        # Only the store's async verbs are forwarded; anything else is a typo, not a verb.
        if verb.startswith("_") or not inspect.iscoroutinefunction(
            getattr(MemoryBackend, verb, None)
        ):
            raise AttributeError(f"FailOpenStore has no verb {verb!r}")
        rule = FALLBACKS.get(verb)
        if rule is None:
            return partial(self._call, verb)
        return partial(self._degrading, verb, rule)

    async def _call(self, verb: str, *args: Any, **kwargs: Any) -> Any:
        return await getattr(await self._get(), verb)(*args, **kwargs)

    async def _degrading(self, verb: str, rule: Degrade, *args: Any, **kwargs: Any) -> Any:
        if rule.per_conversation and is_unsaved(args[1] if len(args) > 1 else kwargs["conv_id"]):
            return rule.fallback(self, *args, **kwargs)
        try:
            result = await self._call(verb, *args, **kwargs)
        except StorageUnavailable as exc:
            self._failing.add(rule.kind)
            log.warning("Memory %s failed, continuing without it: %s", verb, exc)
            return rule.fallback(self, *args, **kwargs)
        self._failing.discard(rule.kind)
        if rule.while_degraded is not None and self.degraded:
            return rule.while_degraded(result)
        return result

    async def expect(self, owner: str, conv_id: str, query: str) -> None:
        """The store's head start on a question's embedding, when the store is open. It reads
        and writes nothing, so it never fails and leaves `degraded` as it is."""
        if self._store is not None and not is_unsaved(conv_id):
            await self._store.expect(owner, conv_id, query)

    async def close(self) -> None:
        if self._store is not None:
            await self._store.close()
