"""Pinned facts, "about me", the user's own summary, and per-owner memory settings.

A pinned fact is a row of `pinned_facts`, not a turn: summarization only ever folds turns, so
a pin is never folded away, and the context query adds every pin of the conversation (and the
owner's "about me" pins, when the owner turned them on) to what the model receives. Pins count
against the memory budget, so their size is capped when they are written: for every
conversation, its own pins plus the owner's "about me" pins fit `MemoryPolicy.pin_budget`
(checked in the same transaction as the insert). Pins belong to one owner; a pin of another
owner behaves like a missing one.

The user's summary (memory panel, "edit" or "clear") replaces the latest summary by a new
summary turn marked `origin = 'edited'`, or, to clear, compacts it so none is in the context.
"""

from __future__ import annotations

from collections.abc import Callable

import aiosqlite

from . import sql
from .connection import Connections
from .errors import NOT_FOUND_MESSAGE, ConversationNotFound, InvalidSummary, PinRefused
from .policy import MemoryPolicy
from .records import OwnerSettings, PinnedFact, Turn
from .validation import check_owner

MAX_PIN_CHARS = 500  # one fact; fixed by the schema's CHECK constraint
MAX_PINS = 50  # per conversation, and "about me"
MAX_TIME_ZONE_CHARS = 64

PIN_NOT_FOUND = "That pinned fact does not exist any more (deleted in another tab?)."


def clean_fact(text: str) -> str:
    """A fact as stored: whitespace collapsed; PinRefused when empty or too long."""
    cleaned = " ".join(str(text or "").split())
    if not cleaned:
        raise PinRefused("The fact is empty. Type what the assistant should keep in mind.")
    if len(cleaned) > MAX_PIN_CHARS:
        raise PinRefused(
            f"The fact is {len(cleaned):,} characters; a pinned fact holds at most "
            f"{MAX_PIN_CHARS}. Shorten it to the part worth remembering."
        )
    return cleaned


async def visible(db: aiosqlite.Connection, clock: Callable[[], float], owner: str, conv_id: str):
    rows = await db.execute_fetchall(sql.VISIBLE_CONVERSATION, (conv_id, owner, clock()))
    if not rows:
        raise ConversationNotFound(NOT_FOUND_MESSAGE)
    return sql.conversation_from_row(rows[0])


async def check_room(
    db: aiosqlite.Connection, policy: MemoryPolicy, owner: str, conv_id: str | None, size: int
) -> None:
    """PinRefused unless `size` more characters pinned in the scope still fit every
    conversation's pin budget (a conversation's pins + the owner's "about me" pins)."""
    count, chars = (await db.execute_fetchall(sql.PIN_TALLY, (owner, conv_id)))[0]
    if conv_id is None:
        beside = (await db.execute_fetchall(sql.LARGEST_CONVERSATION_PINS, (owner,)))[0][0]
    else:
        beside = (await db.execute_fetchall(sql.PIN_TALLY, (owner, None)))[0][1]
    refuse_unless_room(policy, conv_id, count, chars, beside, size)


def refuse_unless_room(
    policy: MemoryPolicy, conv_id: str | None, count: int, chars: int, beside: int, size: int
) -> None:
    """PinRefused unless a fact of `size` fits beside the scope's `count` facts of `chars`
    characters and the `beside` characters pinned in the other scope (any backend)."""
    if count >= MAX_PINS:
        where = "this conversation" if conv_id else "“about me”"
        raise PinRefused(f"{where} already has {MAX_PINS} pinned facts; delete one first.")
    budget = policy.pin_budget
    if chars + beside + size > budget:
        raise PinRefused(
            f"Pinned facts may take {budget:,} characters of the memory budget; "
            f"{chars + beside:,} are used, and this fact needs {size:,}. Delete or shorten a "
            "pinned fact first."
        )


async def pin(
    db: Connections,
    policy: MemoryPolicy,
    clock: Callable[[], float],
    owner: str,
    conv_id: str | None,
    text: str | None = None,
    *,
    source_turn_id: int | None = None,
) -> PinnedFact:
    """Pin `text` (or the message `source_turn_id`, clipped) to the conversation, or to
    "about me" when `conv_id` is None."""
    check_owner(owner)
    if text is not None:
        content = clean_fact(text)
    elif source_turn_id is None:
        raise PinRefused("Say what to pin: type a fact, or pin one of the messages.")
    async with db.write() as conn:
        if conv_id is not None:
            await visible(conn, clock, owner, conv_id)
        if text is None:
            content = await _message_text(conn, clock, owner, conv_id, source_turn_id)
        await check_room(conn, policy, owner, conv_id, len(content))
        rows = await conn.execute_fetchall(
            sql.INSERT_PIN, (owner, conv_id, content, clock(), source_turn_id)
        )
    return sql.pinned_from_row(rows[0])


async def _message_text(
    conn: aiosqlite.Connection,
    clock: Callable[[], float],
    owner: str,
    conv_id: str | None,
    turn_id: int | None,
) -> str:
    """The text of a message of a visible conversation, as a fact (clipped to fit)."""
    if conv_id is None:
        raise PinRefused("A message is pinned from its conversation; open it first.")
    rows = await conn.execute_fetchall(sql.TURN_OF_CONVERSATION, (turn_id, conv_id))
    return fact_of_message(sql.turn_from_row(rows[0]) if rows else None)


def fact_of_message(turn: Turn | None) -> str:
    """A message's text as a fact (clipped to fit); PinRefused for a summary or none."""
    if turn is None:
        raise PinRefused("That message is no longer in this conversation (undone or reset?).")
    if turn.is_summary:
        raise PinRefused("A summary cannot be pinned; edit it in the memory panel instead.")
    text = " ".join(turn.content.split())
    if len(text) > MAX_PIN_CHARS:
        text = text[: MAX_PIN_CHARS - 1].rstrip() + "…"
    return text


async def unpin(db: Connections, owner: str, fact_id: int) -> None:
    """Delete one of the owner's pins; PinRefused when there is no such pin."""
    async with db.write() as conn:
        rows = await conn.execute_fetchall(sql.DELETE_PIN, (fact_id, owner))
    if not rows:
        raise PinRefused(PIN_NOT_FOUND)


async def conversation_pins(
    db: Connections, clock: Callable[[], float], owner: str, conv_id: str
) -> list[PinnedFact]:
    async with db.read() as conn:
        await visible(conn, clock, owner, conv_id)
        rows = await conn.execute_fetchall(sql.CONVERSATION_PINS, (owner, conv_id))
    return [sql.pinned_from_row(r) for r in rows]


async def about_me_pins(db: Connections, owner: str) -> list[PinnedFact]:
    rows = await db.read_one(sql.ABOUT_ME_PINS, (owner,))
    return [sql.pinned_from_row(r) for r in rows]


async def settings(db: Connections, owner: str) -> OwnerSettings:
    rows = await db.read_one(sql.OWNER_SETTINGS, (owner,))
    if not rows:
        return OwnerSettings()
    return OwnerSettings(about_me=bool(rows[0][0]), time_zone=rows[0][1])


async def set_about_me(db: Connections, owner: str, enabled: bool) -> OwnerSettings:
    check_owner(owner)
    async with db.write() as conn:
        await conn.execute(sql.SET_ABOUT_ME, (owner, int(bool(enabled))))
    return await settings(db, owner)


async def set_time_zone(db: Connections, owner: str, zone: str | None) -> OwnerSettings:
    """Record the owner's IANA time zone name (checked by the caller, which knows zoneinfo)."""
    check_owner(owner)
    check_time_zone(zone)
    async with db.write() as conn:
        await conn.execute(sql.SET_TIME_ZONE, (owner, zone))
    return await settings(db, owner)


def check_time_zone(zone: str | None) -> None:
    if zone is not None and not 1 <= len(zone) <= MAX_TIME_ZONE_CHARS:
        raise PinRefused(f"A time zone name is 1 to {MAX_TIME_ZONE_CHARS} characters.")


def check_summary(policy: MemoryPolicy, text: str | None) -> str:
    """The user's summary as stored ("" to clear); InvalidSummary when it is too long."""
    text = (text or "").strip()
    if len(text) > policy.summary_chars:
        raise InvalidSummary(
            f"The summary is {len(text):,} characters; the limit is {policy.summary_chars:,}. "
            "Shorten it: what does not fit would not reach the model."
        )
    return text


NO_SUMMARY_YET = (
    "This conversation has no summary yet; one is written when it grows long. "
    "To make the assistant keep something in mind now, pin it as a fact."
)


async def write_summary(
    db: Connections,
    policy: MemoryPolicy,
    clock: Callable[[], float],
    owner: str,
    conv_id: str,
    text: str | None,
) -> Turn | None:
    """Replace the latest summary with the user's `text` (None or blank: clear it, so the
    model gets no summary until the next one is written). Returns the new summary turn."""
    text = check_summary(policy, text)
    now = clock()
    async with db.write() as conn:
        await visible(conn, clock, owner, conv_id)
        rows = await conn.execute_fetchall(sql.LATEST_SUMMARY, (conv_id,))
        latest = sql.turn_from_row(rows[0]) if rows else None
        if latest is None and not text:
            return None  # nothing to clear
        if latest is None:
            raise InvalidSummary(NO_SUMMARY_YET)
        await conn.execute(sql.COMPACT_TURN, (latest.id,))
        if not text:
            return None
        cursor = await conn.execute(
            sql.INSERT_EDITED_SUMMARY,
            (
                conv_id,
                text,
                now,
                latest.covers_from_id,
                latest.covers_to_id,
                latest.covers_count,
            ),
        )
        await conn.execute(sql.SUMMARY_WRITTEN, (conv_id,))
        rows = await conn.execute_fetchall(sql.TURN_OF_CONVERSATION, (cursor.lastrowid, conv_id))
    return sql.turn_from_row(rows[0])
