"""Changing a conversation's title, persona and retention together: all of it, or nothing.

`edit_columns()` checks every change before anything is written and turns the edit into the
columns to set; each backend writes them in one UPDATE, so a change that is refused (a bad
title, a bad retention, the database failing) leaves the others unmade too (issue 14).
"""

from __future__ import annotations

from dataclasses import dataclass

from .retention import expires_at
from .validation import check_retention, clean_title


@dataclass(frozen=True)
class ConversationEdit:
    """Changes to one conversation; a field left None stays as it is. Retention can be set
    to None (keep until deleted), so whether it changes is said apart: `change_retention`."""

    title: str | None = None
    persona_id: str | None = None
    persona_version: int | None = None
    retention_minutes: int | None = None
    change_retention: bool = False


def edit_columns(edit: ConversationEdit, now: float) -> dict[str, object]:
    """The `conversations` columns `edit` sets and their values; raises InvalidTitle or
    InvalidRetention (nothing written) for a change that cannot be made. Retention counts
    from `now`, as `set_retention` does."""
    columns: dict[str, object] = {}
    if edit.title is not None:
        columns["title"] = clean_title(edit.title)
    if edit.persona_id is not None:
        columns["persona_id"] = edit.persona_id
        columns["persona_version"] = edit.persona_version
    if edit.change_retention:
        check_retention(edit.retention_minutes)
        columns["retention_minutes"] = edit.retention_minutes
        columns["expires_at"] = expires_at(edit.retention_minutes, now)
    return columns
