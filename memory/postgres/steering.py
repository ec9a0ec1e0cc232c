"""Memory the user steers, on PostgreSQL: pinned facts, "about me", the user's own summary,
per-conversation metrics, export / import and deleting an owner. The same verbs, rules and
messages as SQLite's (memory/steering.py, pins.py, archive.py), whose pure parts it reuses.

Every pin write (pin, import) takes a transaction-level advisory lock for the owner first, so
the pinned-facts budget check and the insert are one step even when two replicas pin at once.
A mixin of `PostgresStore` (store.py): `_fetch`, `_write`, `_conn`, `_locked`, `_clock`, `policy`,
`embedder`.
"""

from __future__ import annotations

import secrets
from typing import Any

from psycopg import AsyncConnection

from .. import archive
from ..errors import (
    NOT_FOUND_MESSAGE,
    ArchiveRefused,
    ConversationNotFound,
    InvalidInput,
    InvalidSummary,
    PinRefused,
)
from ..pins import (
    NO_SUMMARY_YET,
    PIN_NOT_FOUND,
    check_summary,
    check_time_zone,
    clean_fact,
    fact_of_message,
    refuse_unless_room,
)
from ..records import Conversation, MetricsRow, OwnerSettings, PinnedFact, Turn
from ..retention import expires_at
from ..sql import (
    METRICS_COLUMNS,
    PINNED_COLUMNS,
    conversation_from_row,
    metrics_from_row,
    pinned_from_row,
    turn_from_row,
)
from ..validation import check_owner
from ..vectors import embed_packed
from . import sql
from .text import check_text, index_cjk, index_words

PIN_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('mnemo.pins:' || %s, 0))"
# (count, characters) of one scope: a conversation's pins, or (conversation NULL) about me.
PIN_TALLY_SQL = (
    "SELECT count(*), coalesce(sum(char_length(content)), 0) FROM pinned_facts "
    "WHERE owner = %s AND conversation_id IS NOT DISTINCT FROM %s"
)
LARGEST_CONVERSATION_PINS_SQL = (
    "SELECT coalesce(max(chars), 0) FROM (SELECT sum(char_length(content)) AS chars "
    "FROM pinned_facts WHERE owner = %s AND conversation_id IS NOT NULL "
    "GROUP BY conversation_id) per_conversation"
)
INSERT_PIN_SQL = (
    "INSERT INTO pinned_facts (owner, conversation_id, content, created_at, source_turn_id) "
    f"VALUES (%s, %s, %s, %s, %s) RETURNING {PINNED_COLUMNS}"
)
CONVERSATION_PINS_SQL = (
    f"SELECT {PINNED_COLUMNS} FROM pinned_facts WHERE owner = %s AND conversation_id = %s "
    "ORDER BY id"
)
ABOUT_ME_SQL = (
    f"SELECT {PINNED_COLUMNS} FROM pinned_facts WHERE owner = %s AND conversation_id IS NULL "
    "ORDER BY id"
)
UPSERT_SETTING_SQL = (
    "INSERT INTO owner_settings (owner, {column}) VALUES (%s, %s) "
    "ON CONFLICT (owner) DO UPDATE SET {column} = excluded.{column}"
)
INSERT_EDITED_SUMMARY_SQL = (
    "INSERT INTO turns (conversation_id, role, content, created_at, is_summary, "
    "covers_from_id, covers_to_id, covers_count, origin, words, cjk) "
    "VALUES (%s, 'summary', %s, %s, true, %s, %s, %s, 'edited', mnemo_stem(%s::tsvector), %s) "
    f"RETURNING {sql.TURN_COLUMNS}"
)
INSERT_ARCHIVED_TURN_SQL = (
    "INSERT INTO turns (id, conversation_id, role, content, created_at, is_summary, compacted, "
    "incomplete, covers_from_id, covers_to_id, covers_count, origin, speaker, outcome, "
    "outcome_note, words, cjk) OVERRIDING SYSTEM VALUE VALUES (%s, %s, %s, %s, %s, %s, %s, "
    "%s, %s, %s, %s, %s, %s, %s, %s, mnemo_stem(%s::tsvector), %s)"
)
# Ids for an archive's turns, taken up front so a summary can name the turns it covers.
TURN_IDS_SQL = "SELECT nextval(pg_get_serial_sequence('turns', 'id')) FROM generate_series(1, %s)"


class Steering:
    # -- metrics for the plots -----------------------------------------------------------

    async def conversation_metrics(
        self, owner: str, conv_id: str, limit: int = 200
    ) -> list[MetricsRow]:
        """The newest `limit` model calls of the conversation since its last reset, oldest
        first: numbers only, for the memory panel's plots."""
        await self.get_conversation(owner, conv_id)  # ConversationNotFound when not visible
        rows = await self._fetch(
            f"SELECT id, created_at, {METRICS_COLUMNS} FROM turn_metrics "
            "WHERE conversation_id = %(conv)s AND owner = %(owner)s ORDER BY id DESC "
            "LIMIT %(limit)s",
            {"conv": conv_id, "owner": owner, "limit": max(0, int(limit))},
        )
        return [metrics_from_row(r) for r in reversed(rows)]

    # -- pinned facts -------------------------------------------------------------------

    async def pin(
        self,
        owner: str,
        conv_id: str | None,
        text: str | None = None,
        *,
        source_turn_id: int | None = None,
    ) -> PinnedFact:
        """Pin a fact (`text`, or the message `source_turn_id`) to the conversation, or to
        "about me" when `conv_id` is None. PinRefused when it is empty, too long, or over
        the pinned-facts budget."""
        check_owner(owner)
        content = None
        if text is not None:
            content = clean_fact(text)
            check_text(content)
        elif source_turn_id is None:
            raise PinRefused("Say what to pin: type a fact, or pin one of the messages.")
        async with self._write() as conn:
            await conn.execute(PIN_LOCK_SQL, (owner,))
            if conv_id is not None:
                await self._locked(conn, owner, conv_id)
            if content is None:
                content = await self._message_fact(conn, conv_id, source_turn_id)
            await self._check_room(conn, owner, conv_id, len(content))
            cur = await conn.execute(
                INSERT_PIN_SQL, (owner, conv_id, content, self._clock(), source_turn_id)
            )
            return pinned_from_row(await cur.fetchone())

    async def _message_fact(
        self, conn: AsyncConnection, conv_id: str | None, turn_id: int | None
    ) -> str:
        if conv_id is None:
            raise PinRefused("A message is pinned from its conversation; open it first.")
        if isinstance(turn_id, bool) or not isinstance(turn_id, int):
            return fact_of_message(None)
        cur = await conn.execute(
            f"SELECT {sql.TURN_COLUMNS} FROM turns WHERE id = %s AND conversation_id = %s",
            (turn_id, conv_id),
        )
        row = await cur.fetchone()
        return fact_of_message(turn_from_row(row) if row else None)

    async def _check_room(
        self, conn: AsyncConnection, owner: str, conv_id: str | None, size: int
    ) -> None:
        count, chars = await (await conn.execute(PIN_TALLY_SQL, (owner, conv_id))).fetchone()
        if conv_id is None:
            cur = await conn.execute(LARGEST_CONVERSATION_PINS_SQL, (owner,))
            (beside,) = await cur.fetchone()
        else:
            cur = await conn.execute(PIN_TALLY_SQL, (owner, None))
            beside = (await cur.fetchone())[1]
        refuse_unless_room(self.policy, conv_id, count, int(chars), int(beside), size)

    async def unpin(self, owner: str, fact_id: int) -> None:
        """Delete one of the owner's pins; PinRefused when there is no such pin."""
        if isinstance(fact_id, bool) or not isinstance(fact_id, int):
            raise PinRefused(PIN_NOT_FOUND)
        rows = await self._fetch(
            "DELETE FROM pinned_facts WHERE id = %(id)s AND owner = %(owner)s RETURNING 1",
            {"id": fact_id, "owner": owner},
        )
        if not rows:
            raise PinRefused(PIN_NOT_FOUND)

    async def pinned(self, owner: str, conv_id: str) -> list[PinnedFact]:
        """The conversation's own pinned facts, oldest first."""
        rows = await self._fetch(
            f"SELECT p.* FROM conversations c LEFT JOIN LATERAL ({CONVERSATION_PINS_SQL}) p "
            f"ON true WHERE c.id = %s AND c.owner = %s AND (c.expires_at IS NULL "
            "OR c.expires_at > %s)",
            (owner, conv_id, conv_id, owner, self._clock()),
        )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return [pinned_from_row(r) for r in rows if r[0] is not None]

    async def about_me(self, owner: str) -> list[PinnedFact]:
        """The owner's "about me" facts, oldest first (whether or not they are turned on)."""
        return [pinned_from_row(r) for r in await self._fetch(ABOUT_ME_SQL, (owner,))]

    # -- settings -----------------------------------------------------------------------

    async def settings(self, owner: str) -> OwnerSettings:
        rows = await self._fetch(
            "SELECT about_me, time_zone FROM owner_settings WHERE owner = %s", (owner,)
        )
        return OwnerSettings(*rows[0]) if rows else OwnerSettings()

    async def _set(self, owner: str, column: str, value: object) -> OwnerSettings:
        check_owner(owner)
        async with self._write() as conn:
            await conn.execute(UPSERT_SETTING_SQL.format(column=column), (owner, value))
        return await self.settings(owner)

    async def set_about_me(self, owner: str, enabled: bool) -> OwnerSettings:
        """Turn "about me" facts on (they reach every conversation of the owner) or off."""
        return await self._set(owner, "about_me", bool(enabled))

    async def set_time_zone(self, owner: str, zone: str | None) -> OwnerSettings:
        check_time_zone(zone)
        check_text(zone)
        return await self._set(owner, "time_zone", zone)

    # -- the user's summary -------------------------------------------------------------

    async def write_summary(self, owner: str, conv_id: str, text: str | None) -> Turn | None:
        """Replace the conversation's summary with the user's text, or clear it (None): a
        new summary turn over the same range, marked edited; the old one is compacted (out
        of the context, still in the transcript). A running fold sees it and gives up."""
        text = check_summary(self.policy, text)
        check_text(text)
        async with self._write() as conn:
            await self._locked(conn, owner, conv_id)
            cur = await conn.execute(sql.LATEST_SUMMARY_SQL, {"conv": conv_id})
            row = await cur.fetchone()
            if row is None:
                if not text:
                    return None  # nothing to clear
                raise InvalidSummary(NO_SUMMARY_YET)
            latest = turn_from_row(row)
            await conn.execute("UPDATE turns SET compacted = true WHERE id = %s", (latest.id,))
            if not text:
                return None
            cur = await conn.execute(
                INSERT_EDITED_SUMMARY_SQL,
                (conv_id, text, self._clock(), latest.covers_from_id, latest.covers_to_id,
                 latest.covers_count, index_words(text), index_cjk(text)),
            )  # fmt: skip
            written = turn_from_row(await cur.fetchone())
            await conn.execute(
                "UPDATE conversations SET summary_count = summary_count + 1 WHERE id = %s",
                (conv_id,),
            )
        return written

    # -- export, import, deleting an owner ------------------------------------------------

    async def export(self, owner: str, conv_ids: list[str] | None = None) -> dict[str, object]:
        """The conversations (all of the owner's when None) as one JSON-ready document, read
        from one snapshot; "about me" facts go with an export of everything."""
        now = self._clock()
        async with self._conn() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            if conv_ids is None:
                cur = await conn.execute(
                    f"SELECT {sql.CONVERSATION_COLUMNS} FROM conversations WHERE owner = %s "
                    "AND (expires_at IS NULL OR expires_at > %s) "
                    "ORDER BY last_active_at DESC, seq DESC",
                    (owner, now),
                )
                chosen = [conversation_from_row(r) for r in await cur.fetchall()]
            else:
                chosen = [await self._visible_in(conn, owner, c, now) for c in conv_ids]
            docs = []
            for conv in chosen:
                cur = await conn.execute(
                    f"SELECT {sql.TURN_COLUMNS} FROM turns WHERE conversation_id = %s ORDER BY id",
                    (conv.id,),
                )
                turns = [turn_from_row(r) for r in await cur.fetchall()]
                cur = await conn.execute(CONVERSATION_PINS_SQL, (owner, conv.id))
                pinned = [pinned_from_row(r) for r in await cur.fetchall()]
                docs.append(archive.conversation_document(conv, turns, pinned))
            about: list[PinnedFact] = []
            if conv_ids is None:
                cur = await conn.execute(ABOUT_ME_SQL, (owner,))
                about = [pinned_from_row(r) for r in await cur.fetchall()]
        return archive.document(now, docs, about)

    async def _visible_in(
        self, conn: AsyncConnection, owner: str, conv_id: str, now: float
    ) -> Conversation:
        cur = await conn.execute(sql.VISIBLE_SQL, {"conv": conv_id, "owner": owner, "now": now})
        row = await cur.fetchone()
        if row is None:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return conversation_from_row(row)

    async def import_archive(self, owner: str, raw: bytes | str) -> list[Conversation]:
        """Check an export file, then create its conversations in one transaction; nothing
        is saved when it is refused (ArchiveRefused says why)."""
        parsed = archive.parse_archive(raw)
        check_owner(owner)
        _check_archive_text(parsed)
        # Embedded before the transaction, as append does: recall by meaning finds them too.
        vectors = [
            await embed_packed(self.embedder, [t.content for t in c.turns])
            for c in parsed.conversations
        ]
        now = self._clock()
        created: list[str] = []
        async with self._write() as conn:
            await conn.execute(PIN_LOCK_SQL, (owner,))
            for i, (content, at) in enumerate(parsed.about_me):
                await self._import_pin(conn, owner, None, content, at, f"about_me[{i}]")
            pairs = zip(parsed.conversations, vectors, strict=True)
            for i, (conv, conv_vectors) in enumerate(pairs):
                where = f"conversations[{i}]"
                conv_id = await self._import_conversation(conn, owner, conv, now, where)
                await self._import_vectors(conn, conv_id, conv_vectors)
                created.append(conv_id)
        return [await self.get_conversation(owner, c) for c in created]

    async def _import_pin(
        self, conn: AsyncConnection, owner: str, conv_id: str | None, content: str, at: float,
        where: str,
    ) -> None:  # fmt: skip
        try:
            await self._check_room(conn, owner, conv_id, len(content))
        except PinRefused as exc:
            raise ArchiveRefused(f"The file cannot be imported: {where}: {exc}") from exc
        await conn.execute(INSERT_PIN_SQL, (owner, conv_id, content, at, None))

    async def _import_conversation(
        self,
        conn: AsyncConnection,
        owner: str,
        conv: archive.ArchivedConversation,
        now: float,
        where: str,
    ) -> str:
        conv_id = secrets.token_urlsafe(16)
        persona = conv.persona
        await conn.execute(
            "INSERT INTO conversations (id, owner, title, persona_id, persona_version, "
            "retention_minutes, created_at, last_active_at, expires_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (conv_id, owner, conv.title, persona["id"], persona.get("version"),
             conv.retention_minutes, conv.created_at, now,
             expires_at(conv.retention_minutes, now)),
        )  # fmt: skip
        cur = await conn.execute(TURN_IDS_SQL, (len(conv.turns),))
        ids = sorted(r[0] for r in await cur.fetchall())
        rows: list[tuple[Any, ...]] = []
        for turn_id, turn in zip(ids, conv.turns, strict=True):
            first, last, count = turn.covers or (None, None, None)
            covers = (None, None, None) if first is None else (ids[first], ids[last], count)
            rows.append(
                (turn_id, conv_id, turn.role, turn.content, turn.created_at, first is not None,
                 turn.compacted, turn.incomplete, *covers, turn.origin, turn.speaker, turn.outcome,
                 turn.outcome_note, index_words(turn.content), index_cjk(turn.content))
            )  # fmt: skip
        async with conn.cursor() as cursor:
            await cursor.executemany(INSERT_ARCHIVED_TURN_SQL, rows)
        messages = [t for t in conv.turns if t.covers is None]
        await conn.execute(
            "UPDATE conversations SET message_count = %s, active_count = %s, chars = %s, "
            "summary_count = %s WHERE id = %s",
            (len(messages), sum(not t.compacted for t in messages),
             sum(len(t.content) for t in messages), len(conv.turns) - len(messages), conv_id),
        )  # fmt: skip
        for i, (content, at) in enumerate(conv.pinned):
            await self._import_pin(conn, owner, conv_id, content, at, f"{where}.pinned[{i}]")
        return conv_id

    async def _import_vectors(
        self, conn: AsyncConnection, conv_id: str, vectors: list[bytes | None]
    ) -> None:
        """The imported messages' vectors (a summary has none), in turn order."""
        cur = await conn.execute(
            "SELECT id, is_summary FROM turns WHERE conversation_id = %s ORDER BY id", (conv_id,)
        )
        rows = [
            (tid, conv_id, self.embedder.name, v)
            for (tid, is_summary), v in zip(await cur.fetchall(), vectors, strict=True)
            if v is not None and not is_summary
        ]
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO turn_vectors (turn_id, conversation_id, model, vector) "
                "VALUES (%s, %s, %s, %s)",
                rows,
            )

    async def delete_owner(self, owner: str) -> int:
        """Delete every conversation, turn, pin and setting of the owner, in one transaction.
        Returns how many conversations went. Metrics of the last hour stay, detached, so
        deleting cannot reset a quota."""
        check_owner(owner)
        async with self._write() as conn:
            cur = await conn.execute("DELETE FROM conversations WHERE owner = %s", (owner,))
            removed = cur.rowcount  # their turns and pins go with them (ON DELETE CASCADE)
            await conn.execute("DELETE FROM pinned_facts WHERE owner = %s", (owner,))
            await conn.execute("DELETE FROM owner_settings WHERE owner = %s", (owner,))
            await conn.execute(
                "DELETE FROM turn_metrics WHERE owner = %s AND created_at < %s",
                (owner, self._clock() - archive.QUOTA_WINDOW_S),
            )
            await conn.execute(
                "UPDATE turn_metrics SET conversation_id = NULL WHERE owner = %s", (owner,)
            )
        return removed


def _check_archive_text(parsed: archive.Archive) -> None:
    """PostgreSQL's text holds no NUL: refuse the whole file before writing anything."""
    values: list[str | None] = [content for content, _ in parsed.about_me]
    for conv in parsed.conversations:
        values += [conv.title, str(conv.persona.get("id"))]
        values += [content for content, _ in conv.pinned]
        for turn in conv.turns:
            values += [turn.content, turn.speaker, turn.outcome_note]
    try:
        check_text(*values)
    except InvalidInput as exc:
        raise ArchiveRefused(f"The file cannot be imported: {exc} {archive.EXPORT_HINT}") from exc
