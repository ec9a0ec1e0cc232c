"""Export and import: a user's conversations as one JSON document, and deleting an owner.

The document (`FORMAT`, version 1) holds, per conversation, every turn in order with its
timestamp and flags (compacted, incomplete, origin, speaker, and how it ended: outcome and
outcome_note), each summary with the turns it covers
(as positions in that list, since ids are this database's), the pinned facts, and the persona
(id and version; the assistant adds a `snapshot` of the persona itself, which memory keeps
opaque); and the owner's "about me" facts. Importing recreates the rows exactly, so the next
message gets the same context; it never merges into an existing conversation.

`parse_archive()` checks the whole document before anything is written, and an import is one
transaction: a malformed or oversized file is refused with a message that says where, and
nothing is saved.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import pins, retention, sql
from .connection import Connections
from .errors import ArchiveRefused, InvalidInput, PinRefused
from .policy import MemoryPolicy
from .records import Conversation, PinnedFact, Turn
from .validation import (
    MAX_MESSAGE_CHARS,
    OUTCOMES,
    check_outcome,
    check_owner,
    check_retention,
    clean_title,
)

FORMAT = "mnemo-export"
VERSION = 1
MAX_ARCHIVE_BYTES = 20_000_000
MAX_CONVERSATIONS = 1_000
MAX_SNAPSHOT_CHARS = 100_000  # the persona snapshot, as JSON
EXPORT_HINT = "Export it again from Mnemo (Memory panel → Export) and import that file."


@dataclass(frozen=True)
class ArchivedTurn:
    role: str
    content: str
    created_at: float
    compacted: bool = False
    incomplete: bool = False
    origin: str | None = None
    speaker: str | None = None  # the persona that wrote a roundtable reply
    outcome: str | None = None  # how it ended when not as planned (then it is incomplete)
    outcome_note: str | None = None
    covers: tuple[int, int, int] | None = None  # a summary: (from position, to position, count)


@dataclass(frozen=True)
class ArchivedConversation:
    title: str | None
    persona: dict[str, Any]  # {"id", "version", optional "snapshot"}
    created_at: float
    retention_minutes: int | None
    turns: list[ArchivedTurn]
    pinned: list[tuple[str, float]]  # (content, created_at)


@dataclass(frozen=True)
class Archive:
    conversations: list[ArchivedConversation]
    about_me: list[tuple[str, float]]


# -- export ------------------------------------------------------------------------------


def _turn_document(turn: Turn, position: dict[int, int]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "role": turn.role,
        "content": turn.content,
        "created_at": turn.created_at,
    }
    for flag in ("compacted", "incomplete"):
        if getattr(turn, flag):
            doc[flag] = True
    for label in ("origin", "speaker", "outcome", "outcome_note"):
        if getattr(turn, label):
            doc[label] = getattr(turn, label)
    if turn.is_summary:
        # Ids are this database's; positions travel. A covered turn that is gone (undone)
        # maps to the next one still here.
        later = [p for i, p in position.items() if i >= (turn.covers_from_id or 0)]
        upto = [p for i, p in position.items() if i <= (turn.covers_to_id or 0)]
        first = min(later) if later else 0
        doc["covers"] = {
            "from": first,
            "to": max(max(upto) if upto else first, first),
            "count": turn.covers_count or 0,
        }
    return doc


async def export(
    db: Connections, clock: Callable[[], float], owner: str, conv_ids: list[str] | None
) -> dict[str, Any]:
    """The owner's conversations (all when `conv_ids` is None) as one JSON-ready document;
    "about me" facts go with an export of everything."""
    now = clock()
    async with db.read() as conn:
        if conv_ids is None:
            rows = await conn.execute_fetchall(sql.LIST_CONVERSATIONS, (owner, now, 1 << 30))
            chosen = [sql.conversation_from_row(r) for r in rows]
        else:
            chosen = [await pins.visible(conn, clock, owner, c) for c in conv_ids]
        conversations = []
        for conv in chosen:
            turns = [
                sql.turn_from_row(r) for r in await conn.execute_fetchall(sql.ALL_TURNS, (conv.id,))
            ]
            pin_rows = await conn.execute_fetchall(sql.CONVERSATION_PINS, (owner, conv.id))
            pinned = [sql.pinned_from_row(r) for r in pin_rows]
            conversations.append(conversation_document(conv, turns, pinned))
        about = await conn.execute_fetchall(sql.ABOUT_ME_PINS, (owner,)) if conv_ids is None else []
    return document(now, conversations, [sql.pinned_from_row(r) for r in about])


def document(
    now: float, conversations: list[dict[str, Any]], about_me: list[PinnedFact]
) -> dict[str, Any]:
    """The export document around its conversations' documents (any backend)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": now,
        "conversations": conversations,
        "about_me": [_pin_document(p) for p in about_me],
    }


def conversation_document(
    conv: Conversation, turns: list[Turn], pinned: list[PinnedFact]
) -> dict[str, Any]:
    """One conversation's part of the document: every turn (oldest first) and its pins."""
    position: dict[int, int] = {}
    docs = []
    for turn in turns:
        if not turn.is_summary:
            position[turn.id] = len(docs)
        docs.append(_turn_document(turn, position))
    return {
        "title": conv.title,
        "persona": {"id": conv.persona_id, "version": conv.persona_version},
        "created_at": conv.created_at,
        "retention_minutes": conv.retention_minutes,
        "turns": docs,
        "pinned": [_pin_document(p) for p in pinned],
    }


def _pin_document(fact: PinnedFact) -> dict[str, Any]:
    return {"content": fact.content, "created_at": fact.created_at}


# -- parsing -----------------------------------------------------------------------------


class _Check:
    """Refusals that say where in the document the problem is."""

    @staticmethod
    def fail(where: str, problem: str) -> None:
        raise ArchiveRefused(f"The file cannot be imported: {where} {problem}. {EXPORT_HINT}")

    def obj(self, value: Any, where: str, keys: set[str], required: set[str]) -> dict:
        if not isinstance(value, dict):
            self.fail(where, "is not an object")
        unknown = sorted(set(value) - keys)
        if unknown:
            self.fail(where, f"has unknown field {unknown[0]!r}")
        missing = sorted(required - set(value))
        if missing:
            self.fail(where, f"has no {missing[0]!r}")
        return value

    def items(self, value: Any, where: str, limit: int) -> list:
        if not isinstance(value, list):
            self.fail(where, "is not a list")
        if len(value) > limit:
            self.fail(where, f"has {len(value):,} entries; at most {limit:,} can be imported")
        return value

    def time(self, value: Any, where: str) -> float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value < 0:
            self.fail(where, "is not a timestamp (seconds since 1970)")
        return float(value)

    def text(self, value: Any, where: str, limit: int) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(where, "is not a non-empty text")
        if len(value) > limit:
            self.fail(where, f"is {len(value):,} characters; the limit is {limit:,}")
        return value

    def flag(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(where, "is not true or false")
        return value

    def position(self, value: Any, where: str, below: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < below:
            self.fail(where, f"is not the position of an earlier message (0 to {below - 1})")
        return value


def parse_archive(raw: bytes | str) -> Archive:
    """Check an export file completely; ArchiveRefused (saying where) when it is not one."""
    check = _Check()
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_ARCHIVE_BYTES:
        raise ArchiveRefused(
            f"The file is {size / 1e6:.1f} MB; an import takes at most "
            f"{MAX_ARCHIVE_BYTES / 1e6:.0f} MB. Export fewer conversations at a time."
        )
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if hasattr(exc, "lineno") else ""
        raise ArchiveRefused(
            f"The file is not valid JSON{where}: it is not a Mnemo export. {EXPORT_HINT}"
        ) from exc
    top = check.obj(
        doc,
        "the document",
        {"format", "version", "exported_at", "conversations", "about_me", "note"},
        {"format", "version", "conversations"},
    )
    if not isinstance(top.get("note", ""), str):
        check.fail("the document's note", "is not a text")
    if top["format"] != FORMAT or top["version"] != VERSION:
        check.fail("the document", f"is not a {FORMAT} version {VERSION} file")
    convs = check.items(top["conversations"], "conversations", MAX_CONVERSATIONS)
    about = check.items(top.get("about_me", []), "about_me", pins.MAX_PINS)
    return Archive(
        conversations=[
            _parse_conversation(check, c, f"conversations[{i}]") for i, c in enumerate(convs)
        ],
        about_me=[_parse_pin(check, p, f"about_me[{i}]") for i, p in enumerate(about)],
    )


def _parse_conversation(check: _Check, value: Any, where: str) -> ArchivedConversation:
    conv = check.obj(
        value,
        where,
        {"title", "persona", "created_at", "retention_minutes", "turns", "pinned"},
        {"persona", "created_at", "turns"},
    )
    title = conv.get("title")
    if title is not None:
        try:
            title = clean_title(check.text(title, f"{where}.title", 1_000))
        except InvalidInput as exc:
            check.fail(f"{where}.title", f"is refused ({exc})")
    persona = check.obj(conv["persona"], f"{where}.persona", {"id", "version", "snapshot"}, {"id"})
    check.text(persona["id"], f"{where}.persona.id", 40)
    version = persona.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        check.fail(f"{where}.persona.version", "is not a whole number")
    if len(json.dumps(persona.get("snapshot"))) > MAX_SNAPSHOT_CHARS:
        check.fail(f"{where}.persona.snapshot", "is too large")
    minutes = conv.get("retention_minutes")
    try:
        check_retention(minutes)
    except InvalidInput:
        check.fail(f"{where}.retention_minutes", "is not a whole number of minutes above 0")
    turns: list[ArchivedTurn] = []
    for i, item in enumerate(check.items(conv["turns"], f"{where}.turns", 1 << 20)):
        turns.append(_parse_turn(check, item, f"{where}.turns[{i}]", turns))
    pinned = [
        _parse_pin(check, p, f"{where}.pinned[{i}]")
        for i, p in enumerate(check.items(conv.get("pinned", []), f"{where}.pinned", pins.MAX_PINS))
    ]
    return ArchivedConversation(
        title=title,
        persona=persona,
        created_at=check.time(conv["created_at"], f"{where}.created_at"),
        retention_minutes=minutes,
        turns=turns,
        pinned=pinned,
    )


_ORIGIN_OF_ROLE = {"summary": (None, "edited"), "user": (None, "tool"), "assistant": (None,)}


def _parse_turn(check: _Check, value: Any, where: str, before: list[ArchivedTurn]) -> ArchivedTurn:
    turn = check.obj(
        value,
        where,
        {"role", "content", "created_at", "compacted", "incomplete", "origin", "speaker"}
        | {"outcome", "outcome_note", "covers"},
        {"role", "content", "created_at"},
    )
    role = turn["role"]
    if role not in _ORIGIN_OF_ROLE:
        check.fail(f"{where}.role", f"is {role!r}; use user, assistant or summary")
    origin = turn.get("origin")
    if origin not in _ORIGIN_OF_ROLE[role]:
        check.fail(f"{where}.origin", f"is {origin!r}, which a {role} message cannot have")
    speaker = turn.get("speaker")
    if speaker is not None and (role != "assistant" or not isinstance(speaker, str)):
        check.fail(f"{where}.speaker", f"is {speaker!r}; only a reply names its speaker")
    if speaker is not None and not 1 <= len(speaker) <= 80:
        check.fail(f"{where}.speaker", "is not a persona id (1-80 characters)")
    outcome, outcome_note = _parse_outcome(check, turn, where)
    covers = None
    if role == "summary":
        doc = check.obj(
            turn.get("covers"), f"{where}.covers", {"from", "to", "count"}, {"from", "to", "count"}
        )
        if not before:
            check.fail(where, "is a summary before any message it could cover")
        first = check.position(doc["from"], f"{where}.covers.from", len(before))
        last = check.position(doc["to"], f"{where}.covers.to", len(before))
        count = doc["count"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 0 or first > last:
            check.fail(f"{where}.covers", "is not a range of earlier messages")
        if before and "summary" in (before[first].role, before[last].role):
            check.fail(f"{where}.covers", "points at a summary, not a message")
        covers = (first, last, count)
        if outcome is not None:
            check.fail(f"{where}.outcome", "belongs only to a message, not a summary")
    elif "covers" in turn:
        check.fail(f"{where}.covers", "belongs only to a summary")
    return ArchivedTurn(
        role=role,
        content=check.text(turn["content"], f"{where}.content", MAX_MESSAGE_CHARS),
        created_at=check.time(turn["created_at"], f"{where}.created_at"),
        compacted=check.flag(turn.get("compacted", False), f"{where}.compacted"),
        incomplete=check.flag(turn.get("incomplete", False), f"{where}.incomplete")
        or outcome is not None,
        origin=origin,
        speaker=speaker,
        outcome=outcome,
        outcome_note=outcome_note,
        covers=covers,
    )


def _parse_outcome(check: _Check, turn: dict, where: str) -> tuple[str | None, str | None]:
    outcome, note = turn.get("outcome"), turn.get("outcome_note")
    if outcome is not None and outcome not in OUTCOMES:
        check.fail(f"{where}.outcome", f"is {outcome!r}; use failed, stopped or incomplete")
    if note is not None and not isinstance(note, str):  # with no outcome: a line on the turn
        check.fail(f"{where}.outcome_note", "is not a text explaining the message's outcome")
    return outcome, check_outcome(outcome, note)


def _parse_pin(check: _Check, value: Any, where: str) -> tuple[str, float]:
    pin = check.obj(value, where, {"content", "created_at"}, {"content", "created_at"})
    try:
        content = pins.clean_fact(pin["content"])
    except InvalidInput as exc:
        check.fail(f"{where}.content", f"is refused ({exc})")
    return content, check.time(pin["created_at"], f"{where}.created_at")


# -- import ------------------------------------------------------------------------------


async def import_archive(
    db: Connections,
    policy: MemoryPolicy,
    clock: Callable[[], float],
    owner: str,
    archive: Archive,
    vectors: list[list[bytes | None]],
    model: str,
) -> list[str]:
    """Create a new conversation for each one in `archive` (and add its "about me" facts),
    in one transaction; `vectors` are each conversation's turn vectors (None: none), made by
    the embedder `model`. Returns the new conversation ids, in the archive's order."""
    check_owner(owner)
    now = clock()
    created: list[str] = []
    async with db.write() as conn:
        for i, (content, at) in enumerate(archive.about_me):
            await _import_pin(conn, policy, owner, None, content, at, f"about_me[{i}]")
        for i, (conv, conv_vectors) in enumerate(zip(archive.conversations, vectors, strict=True)):
            conv_id = await _import_conversation(
                conn, policy, owner, conv, now, f"conversations[{i}]"
            )
            turn_ids = await conn.execute_fetchall(sql.TURN_IDS, (conv_id,))
            await conn.executemany(
                sql.INSERT_VECTOR,
                [
                    (conv_id, tid, model, v)
                    for (tid,), v, turn in zip(turn_ids, conv_vectors, conv.turns, strict=True)
                    if v is not None and turn.covers is None
                ],
            )
            created.append(conv_id)
    return created


async def _import_pin(conn, policy, owner, conv_id, content, at, where: str) -> None:
    try:
        await pins.check_room(conn, policy, owner, conv_id, len(content))
    except PinRefused as exc:
        raise ArchiveRefused(f"The file cannot be imported: {where}: {exc}") from exc
    await conn.execute(sql.INSERT_IMPORTED_PIN, (owner, conv_id, content, at))


async def _import_conversation(
    conn, policy: MemoryPolicy, owner: str, conv: ArchivedConversation, now: float, where: str
) -> str:
    conv_id = secrets.token_urlsafe(16)
    persona = conv.persona
    await conn.execute(
        sql.INSERT_CONVERSATION,
        (
            conv_id,
            owner,
            conv.title,
            persona["id"],
            persona.get("version"),
            conv.retention_minutes,
            conv.created_at,
            now,
            retention.expires_at(conv.retention_minutes, now),
        ),
    )
    ids: list[int | None] = []
    total = active = chars = summaries = 0
    for turn in conv.turns:
        covers = (None, None, None)
        if turn.covers is not None:
            first, last, count = turn.covers
            covers = (ids[first], ids[last], count)
            summaries += 1
        else:
            total += 1
            active += not turn.compacted
            chars += len(turn.content)
        cursor = await conn.execute(
            sql.INSERT_IMPORTED_TURN,
            (
                conv_id,
                turn.role,
                turn.content,
                turn.created_at,
                int(turn.role == "summary"),
                int(turn.compacted),
                int(turn.incomplete),
                *covers,
                turn.origin,
                turn.speaker,
                turn.outcome,
                turn.outcome_note,
            ),
        )
        ids.append(cursor.lastrowid)
    await conn.execute(sql.ARCHIVE_COUNTERS, (total, active, chars, summaries, now, conv_id))
    for i, (content, at) in enumerate(conv.pinned):
        await _import_pin(conn, policy, owner, conv_id, content, at, f"{where}.pinned[{i}]")
    return conv_id


# -- deleting an owner -------------------------------------------------------------------

QUOTA_WINDOW_S = 3_600  # metrics younger than this stay (detached) so the quota still counts


async def delete_owner(db: Connections, clock: Callable[[], float], owner: str) -> int:
    """Delete every conversation, turn, pin and setting of the owner, in one transaction.
    Returns how many conversations went. Metrics (numbers, never text) of the last hour stay,
    detached from any conversation, so deleting cannot reset a quota."""
    check_owner(owner)
    async with db.write() as conn:
        rows = await conn.execute_fetchall(sql.OWNER_CONVERSATION_IDS, (owner,))
        for (conv_id,) in rows:
            await conn.execute(sql.DELETE_CONVERSATION, (conv_id,))
        await conn.execute(sql.DELETE_OWNER_PINS, (owner,))
        await conn.execute(sql.DELETE_OWNER_SETTINGS, (owner,))
        await conn.execute(sql.DELETE_OWNER_METRICS, (owner, clock() - QUOTA_WINDOW_S))
        await conn.execute(sql.DETACH_OWNER_METRICS, (owner,))
    return len(rows)
