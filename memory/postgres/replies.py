"""Rewriting a turn after it was written, on PostgreSQL: a streaming reply's progress and how
a turn ended. The same verbs and rules as SQLite's (memory/replies.py). A mixin of
`PostgresStore`; each verb is one transaction under the conversation's row lock."""

from __future__ import annotations

from ..errors import NOT_FOUND_MESSAGE, ConversationNotFound
from ..records import Outcome, Turn
from ..validation import check_outcome, validate_message
from ..vector_fill import VectorFiller
from .text import check_text, index_cjk, index_words
from .vector_rows import DELETE_VECTOR_SQL

# Only a live reply is rewritten, never a summary or a folded turn; its search text moves with
# it. Returns the old length (for the counters) and when it was written.
UPDATE_REPLY_SQL = (
    "UPDATE turns t SET content = %(content)s, outcome = %(outcome)s, outcome_note = %(note)s, "
    "incomplete = %(incomplete)s, words = mnemo_stem(%(words)s::tsvector), cjk = %(cjk_text)s "
    "FROM (SELECT id, char_length(content) AS old FROM turns WHERE id = %(turn)s) o "
    "WHERE t.id = o.id AND t.conversation_id = %(conv)s AND t.role = 'assistant' "
    "AND NOT t.compacted RETURNING o.old, t.created_at"
)
REPLY_COUNTERS_SQL = (
    "UPDATE conversations SET chars = chars + %(delta)s, last_active_at = %(now)s "
    "WHERE id = %(conv)s"
)
SET_OUTCOME_SQL = (
    "UPDATE turns SET outcome = %(outcome)s, outcome_note = %(note)s, "
    "incomplete = %(incomplete)s WHERE id = %(turn)s AND conversation_id = %(conv)s "
    "AND NOT is_summary RETURNING 1"
)


class Replies:
    _vectors: VectorFiller

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
        outcome: one transaction moves its counters and its search text and drops its old
        vector, so a crash keeps the last saved text; the new vector is made in the
        background unless it is a `draft` (as on SQLite). ConversationNotFound when the
        conversation or the reply is gone."""
        validate_message("assistant", content)
        outcome_note = check_outcome(outcome, outcome_note)
        check_text(content, outcome_note)
        now = self._clock()
        async with self._write() as conn:
            await self._locked(conn, owner, conv_id)
            cur = await conn.execute(
                UPDATE_REPLY_SQL,
                {
                    "content": content,
                    "outcome": outcome,
                    "note": outcome_note,
                    "incomplete": outcome is not None,
                    "words": index_words(content),
                    "cjk_text": index_cjk(content),
                    "turn": turn_id,
                    "conv": conv_id,
                },
            )
            row = await cur.fetchone()
            if row is None:
                raise ConversationNotFound(NOT_FOUND_MESSAGE)
            old, created_at = row
            await conn.execute(
                REPLY_COUNTERS_SQL, {"delta": len(content) - old, "now": now, "conv": conv_id}
            )
            await conn.execute(DELETE_VECTOR_SQL, {"turn": turn_id})
        if draft:  # after the commit: the filler writes only over the text it was made of
            self._vectors.forget(turn_id)  # an older text queued: this one is not final
        else:
            self._vectors.submit(conv_id, turn_id, content)
        return Turn(
            id=turn_id,
            conversation_id=conv_id,
            role="assistant",
            content=content,
            created_at=created_at,
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
        the chat shows; None clears it. ConversationNotFound when the conversation or the turn
        is not there."""
        note = check_outcome(outcome, note)
        check_text(note)
        async with self._write() as conn:
            await self._locked(conn, owner, conv_id)
            cur = await conn.execute(
                SET_OUTCOME_SQL,
                {
                    "outcome": outcome,
                    "note": note,
                    "incomplete": outcome is not None,
                    "turn": turn_id,
                    "conv": conv_id,
                },
            )
            if await cur.fetchone() is None:
                raise ConversationNotFound(NOT_FOUND_MESSAGE)
