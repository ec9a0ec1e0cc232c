"""How a reply is written to memory while and after it streams (DESIGN.md, "The chat turn", 4).

    save_progress(store, turn)          a draft of what has streamed, marked incomplete
    save_reply(store, turn, outcome, note) -> bool   the final save, with how the turn ended

A progress save appends the reply once and then rewrites that row, marked incomplete with the
"interrupted" note, so a killed process leaves what had arrived, saying so; it is a draft
(memory/vector_fill.py embeds the reply once, when final). The final save waits for the
progress save in flight (never two writers of one reply) and writes over its row. A turn that
ended with no text puts its outcome on the question instead, so a reload still says why it
has no answer; a retried question's outcome is cleared once it is answered. A roundtable's veto
line (`turn.veto_line`) goes with every save of the reply, progress saves included, whatever
the model wrote.
"""

from __future__ import annotations

import contextlib
import logging
import time

from memory import MemoryBackend, MemoryStoreError, Outcome, Turn

from . import outcome_notes as notes
from .failopen import FailOpenStore
from .turn_state import ReplyState

log = logging.getLogger(__name__)

Store = MemoryBackend | FailOpenStore


async def save_progress(store: Store, turn: ReplyState) -> None:
    """Save what has streamed so far, marked incomplete until the final save: after a
    crash it shows as a reply Mnemo did not finish. Failing only skips this save."""
    text, turn.saved_at = turn.text, time.monotonic()
    turn.saved_chars = len(text)  # a failed save waits for the next one, not every chunk
    if not text.strip():
        return
    interrupted = notes.with_line(notes.INTERRUPTED_NOTE.encode(), turn.veto_line)
    try:
        if turn.reply_id is None:
            reply = await store.append(
                turn.owner,
                turn.conv_id,
                "assistant",
                text,
                speaker=turn.speaker,
                outcome="incomplete",
                outcome_note=interrupted,
                draft=True,  # embedded once, when final (memory/vector_fill.py)
            )
            turn.reply_id = reply.id
        else:
            await store.update_reply(
                turn.owner,
                turn.conv_id,
                turn.reply_id,
                text,
                outcome="incomplete",
                outcome_note=interrupted,
                draft=True,
            )
    except MemoryStoreError as exc:  # storage down or the conversation gone: next time
        log.warning("reply progress not saved: %s", type(exc).__name__)


async def save_reply(
    store: Store, turn: ReplyState, outcome: Outcome | None, note: str | None
) -> bool:
    """Store the reply with its outcome; with no text, a failed or stopped turn's outcome
    goes on the question, so a reload still says why it has no answer."""
    try:
        if turn.text.strip():
            reply = await _store_reply(store, turn, outcome, notes.with_line(note, turn.veto_line))
            if reply.saved and turn.question_outcome is not None:
                await _mark_question(store, turn, None, None)  # answered now
            return reply.saved
        if outcome is not None:
            early = notes.STOPPED_EARLY_NOTE.encode() if outcome == "stopped" else note
            await _mark_question(store, turn, outcome, early)
    except MemoryStoreError as exc:  # e.g. the conversation was deleted meanwhile
        log.warning("reply not saved: %s", type(exc).__name__)
    return False


async def _store_reply(
    store: Store, turn: ReplyState, outcome: Outcome | None, note: str | None
) -> Turn:
    """The final save: over the progress row when there is one, else a new turn."""
    if turn.saving is not None:
        with contextlib.suppress(Exception):
            await turn.saving  # never two writers of one reply
    if turn.reply_id is not None:
        return await store.update_reply(
            turn.owner,
            turn.conv_id,
            turn.reply_id,
            turn.text,
            outcome=outcome,
            outcome_note=note,
        )
    return await store.append(
        turn.owner,
        turn.conv_id,
        "assistant",
        turn.text,
        speaker=turn.speaker,
        outcome=outcome,
        outcome_note=note,
    )


async def _mark_question(
    store: Store, turn: ReplyState, outcome: Outcome | None, note: str | None
) -> None:
    if turn.question_id is not None:
        await store.set_outcome(turn.owner, turn.conv_id, turn.question_id, outcome, note)
