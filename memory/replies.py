"""Rewriting a turn after it was written: a streaming reply's progress and how a turn ended
(a mixin of ConversationStore; the SQL is in sql.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import aiosqlite

from . import sql
from .connection import Connections
from .errors import NOT_FOUND_MESSAGE, ConversationNotFound
from .records import Conversation, Outcome, Turn
from .validation import check_outcome, validate_message
from .vector_fill import VectorFiller
from .vectors import Embedder


class ReplyStore:
    """The verbs that change a stored turn in place; the store provides the rest."""

    _db: Connections
    _clock: Callable[[], float]
    embedder: Embedder | None
    _vectors: VectorFiller

    async def _visible(
        self, db: aiosqlite.Connection, owner: str, conv_id: str
    ) -> Conversation: ...  # ConversationStore's

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
    ) -> Turn:
        """Rewrite a reply saved while it streams (progress, then the final text) with its
        outcome: one transaction moves its counters and both full-text entries and drops its
        old vector, so a crash keeps the last saved text, found by search and recall like any
        message. Its new vector is made in the background, unless it is a `draft` (progress:
        embedded once, when final). ConversationNotFound when the conversation or the reply
        is gone (undo, delete)."""
        validate_message("assistant", content)
        outcome_note = check_outcome(outcome, outcome_note)
        now = self._clock()
        n = len(content)

        def rewrite(db: sqlite3.Connection) -> list[tuple]:
            params = (n, turn_id, conv_id, n, now, conv_id, owner, now)
            rows = db.execute(sql.REPLY_COUNTERS, params).fetchall()
            if rows:
                row = (content, outcome, outcome_note, int(outcome is not None), turn_id, conv_id)
                rows = db.execute(sql.UPDATE_REPLY, row).fetchall()
            if not rows:  # the write rolls back: the counters stay as they were
                raise ConversationNotFound(NOT_FOUND_MESSAGE)
            db.execute(sql.DELETE_VECTOR, (conv_id, turn_id))
            return rows

        # One hop to the writer's thread for the whole transaction (Connections.transact).
        rows = await self._db.transact(rewrite)
        if draft:
            self._vectors.forget(turn_id)  # an older text queued: this one is not final
        else:
            self._vectors.submit(conv_id, turn_id, content)
        return Turn(
            id=turn_id,
            conversation_id=conv_id,
            role="assistant",
            content=content,
            created_at=rows[0][0],
            incomplete=outcome is not None,
            outcome=outcome,
            outcome_note=outcome_note,
        )

    async def set_outcome(
        self,
        owner: str,
        conv_id: str,
        turn_id: int,
        outcome: Outcome | None,
        note: str | None = None,
    ) -> None:
        """Record how a turn ended ("failed": a user message nobody answered) with the note
        the chat shows; None clears it (a retry answered it). ConversationNotFound when the
        conversation or the turn is not there."""
        note = check_outcome(outcome, note)
        async with self._db.write() as db:
            await self._visible(db, owner, conv_id)
            rows = await db.execute_fetchall(
                sql.SET_OUTCOME, (outcome, note, int(outcome is not None), turn_id, conv_id)
            )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
