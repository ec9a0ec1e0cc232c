"""The seam for a second storage backend: what every store offers, and one way to open one.

`MemoryBackend` lists the verbs the assistant calls on a store; `ConversationStore` (SQLite)
is the first implementation, `PostgresStore` (memory/postgres/) the second. A backend
reuses memory's pure parts (validation, context assembly, rendering) and owns only its
storage. `open_store()` picks the backend from a path or URL.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote

from .edits import ConversationEdit
from .errors import UnsupportedStore
from .policy import MemoryPolicy
from .records import (
    ApiToken,
    ContextWindow,
    Conversation,
    MemoryStatus,
    MetricsRow,
    Origin,
    Outcome,
    OwnerSettings,
    PinnedFact,
    ResetResult,
    SearchHit,
    Turn,
    TurnMetrics,
)
from .store import ConversationStore

SQLITE_URL_PREFIX = "sqlite:///"
POSTGRES_SCHEMES = ("postgresql", "postgres")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@runtime_checkable
class MemoryBackend(Protocol):
    """A conversation store: every call takes the owner; another owner's conversation, or an
    expired one, raises ConversationNotFound exactly like a missing one."""

    policy: MemoryPolicy

    async def close(self) -> None: ...

    async def create_conversation(
        self,
        owner: str,
        title: str | None = None,
        persona_id: str = "assistant",
        persona_version: int | None = None,
        retention_minutes: int | None = None,
    ) -> Conversation: ...

    async def get_conversation(self, owner: str, conv_id: str) -> Conversation: ...

    async def list_conversations(self, owner: str, limit: int = 100) -> list[Conversation]: ...

    async def update_conversation(
        self, owner: str, conv_id: str, edit: ConversationEdit
    ) -> Conversation: ...

    async def rename_conversation(self, owner: str, conv_id: str, title: str) -> Conversation: ...

    async def set_persona(
        self, owner: str, conv_id: str, persona_id: str, persona_version: int | None = None
    ) -> Conversation: ...

    async def set_retention(
        self, owner: str, conv_id: str, minutes: int | None
    ) -> Conversation: ...

    async def delete_conversation(self, owner: str, conv_id: str) -> None: ...

    async def append(
        self,
        owner: str,
        conv_id: str,
        role: str,
        content: str,
        *,
        incomplete: bool = False,
        created_at: float | None = None,
        speaker: str | None = None,
        origin: Origin | None = None,
        outcome: Outcome | None = None,
        outcome_note: str | None = None,
        draft: bool = False,
    ) -> Turn: ...

    async def set_outcome(
        self,
        owner: str,
        conv_id: str,
        turn_id: int,
        outcome: Outcome | None,
        note: str | None = None,
    ) -> None: ...

    async def update_reply(
        self,
        owner: str,
        conv_id: str,
        turn_id: int,
        content: str,
        *,
        outcome: Outcome | None = None,
        outcome_note: str | None = None,
        draft: bool = False,
    ) -> Turn: ...

    async def flush_vectors(self) -> None:
        """Until the vectors queued so far (and the backfill of older turns) are written."""
        ...

    async def import_conversation(
        self,
        owner: str,
        messages: Iterable[tuple[str, str, float]],
        title: str | None = None,
        persona_id: str = "assistant",
        persona_version: int | None = None,
    ) -> Conversation: ...

    async def transcript(
        self,
        owner: str,
        conv_id: str,
        limit: int | None = None,
        *,
        before_id: int | None = None,
    ) -> list[Turn]: ...

    async def undo(self, owner: str, conv_id: str) -> list[Turn]: ...

    async def drop_last_reply(self, owner: str, conv_id: str) -> Turn | None: ...

    async def reset(self, owner: str, conv_id: str) -> ResetResult: ...

    async def expect(self, owner: str, conv_id: str, query: str) -> None: ...

    async def context(
        self, owner: str, conv_id: str, query: str | None = None
    ) -> ContextWindow: ...

    async def search(
        self,
        owner: str,
        text: str,
        limit: int = 20,
        mark: tuple[str, str] = ("**", "**"),
    ) -> list[SearchHit]: ...

    async def find_conversations(
        self, owner: str, text: str, limit: int = 20
    ) -> list[Conversation]: ...

    async def status(self, owner: str, conv_id: str) -> MemoryStatus: ...

    def is_summarizing(self, conv_id: str) -> bool: ...

    async def summarize_if_needed(self, owner: str, conv_id: str) -> bool: ...

    async def record_metrics(
        self, owner: str, conv_id: str | None, metrics: TurnMetrics
    ) -> None: ...

    async def count_turn_requests(self, owner: str, since: float) -> int: ...

    async def conversation_metrics(
        self, owner: str, conv_id: str, limit: int = 200
    ) -> list[MetricsRow]: ...

    async def pin(
        self,
        owner: str,
        conv_id: str | None,
        text: str | None = None,
        *,
        source_turn_id: int | None = None,
    ) -> PinnedFact: ...

    async def unpin(self, owner: str, fact_id: int) -> None: ...

    async def pinned(self, owner: str, conv_id: str) -> list[PinnedFact]: ...

    async def about_me(self, owner: str) -> list[PinnedFact]: ...

    async def settings(self, owner: str) -> OwnerSettings: ...

    async def set_about_me(self, owner: str, enabled: bool) -> OwnerSettings: ...

    async def set_time_zone(self, owner: str, zone: str | None) -> OwnerSettings: ...

    async def write_summary(self, owner: str, conv_id: str, text: str | None) -> Turn | None: ...

    async def export(self, owner: str, conv_ids: list[str] | None = None) -> dict[str, object]: ...

    async def import_archive(self, owner: str, raw: bytes | str) -> list[Conversation]: ...

    async def delete_owner(self, owner: str) -> int: ...

    async def purge_expired(self, max_conversations: int = 20, chunk: int = 500) -> int: ...

    # API tokens: stored by SHA-256 only; revoked ones stay listed.
    async def add_token(self, owner: str, name: str, token_hash: str, hint: str) -> ApiToken: ...

    async def list_tokens(self, owner: str) -> list[ApiToken]: ...

    async def revoke_token(self, owner: str, token_id: str) -> ApiToken: ...

    async def token_by_hash(self, token_hash: str) -> ApiToken | None: ...


async def open_store(target: str | os.PathLike[str], **kwargs: object) -> MemoryBackend:
    """Open the store `target` names: a directory or .db file, or a `sqlite:///path` URL
    (SQLite), or a `postgresql://` / `postgres://` URL. `kwargs` go to the backend's open()
    (policy, summarizer, clock). Raises UnsupportedStore for a target no backend handles,
    StorageUnavailable when the store cannot be opened.
    """
    if isinstance(target, os.PathLike):
        return await ConversationStore.open(Path(target), **kwargs)  # type: ignore[arg-type]
    if not isinstance(target, str) or not target.strip():
        raise UnsupportedStore(
            f"Storage target is {target!r}; pass a directory, a .db file, a sqlite:///path "
            "URL or a postgresql:// URL."
        )
    url = _URL.match(target)
    if url is None:
        return await ConversationStore.open(Path(target), **kwargs)  # type: ignore[arg-type]
    scheme = url.group(1).lower()
    if scheme == "sqlite":
        return await ConversationStore.open(sqlite_path(target), **kwargs)  # type: ignore[arg-type]
    if scheme in POSTGRES_SCHEMES:
        # Imported here: psycopg loads only for a PostgreSQL URL.
        from .postgres import PostgresStore

        # libpq reads only the lower-case scheme.
        return await PostgresStore.open("postgresql" + target[len(scheme) :], **kwargs)  # type: ignore[arg-type]
    raise UnsupportedStore(
        f"Storage URL scheme {scheme!r} is not supported; use a directory, a .db file, "
        "sqlite:///path or postgresql://user@host/dbname."
    )


def sqlite_path(url: str) -> Path:
    """The file or directory of a `sqlite:///path` URL: `sqlite:///data/m.db` is relative,
    `sqlite:////srv/m.db` absolute (SQLAlchemy's convention)."""
    if not url.lower().startswith(SQLITE_URL_PREFIX):
        raise UnsupportedStore(
            f"SQLite URL {url!r} has no path; write sqlite:///relative/path or "
            "sqlite:////absolute/path."
        )
    raw = url[len(SQLITE_URL_PREFIX) :]
    rest = unquote(raw)
    if not rest or "?" in raw or rest == ":memory:":
        raise UnsupportedStore(
            f"SQLite URL {url!r} does not name a file; write sqlite:///relative/path or "
            "sqlite:////absolute/path (no query string, no in-memory database)."
        )
    return Path(rest)
