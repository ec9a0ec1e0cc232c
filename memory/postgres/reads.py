"""The PostgreSQL store's reads: conversations, transcript, context with recall, search, status.

A mixin of `PostgresStore` (store.py), which provides `_read`, `_clock`, `policy`,
`embedder` and `_vectors`.
"""

from __future__ import annotations

from ..context import assemble_context, has_older, missing_candidates, semantic_scores
from ..errors import NOT_FOUND_MESSAGE, ConversationNotFound
from ..recall import (
    MAX_RECALL_TERMS,
    lone_cjk,
    matching_conversations,
    query_terms,
    snippet,
)
from ..records import ContextWindow, Conversation, MemoryStatus, SearchHit, Turn
from ..renames import NamedScan, name_terms, names_to_check, picks
from ..sql import KIND_CONVERSATION, KIND_PINNED, KIND_VECTOR, turn_from_row
from ..validation import MAX_MESSAGE_CHARS
from ..vector_fill import VectorFiller
from ..vectors import NO_QUERY_VECTOR, Meaning
from . import sql
from .text import cjk_patterns, word_query


def _term_params(terms: list[str]) -> dict[str, object]:
    patterns = cjk_patterns(terms)
    params: dict[str, object] = {"tsq": word_query(terms), "cjk": patterns}
    params.update({f"cjk{i}": p for i, p in enumerate(patterns)})
    return params


def _sqlite_shape(row: tuple) -> tuple:
    """A context row without its trailing vector column, as SQLite's statement returns it:
    a KIND_VECTOR row holds its vector where SQLite's does, in the content column; a pinned
    fact's row holds PINNED_COLUMNS (pinned_row)."""
    if row[0] == KIND_VECTOR:
        return (KIND_VECTOR, row[1], None, None, row[-1], *row[5:-1])
    if row[0] == KIND_PINNED:
        return sql.pinned_row(row)
    return tuple(row[:-1])


class Reads:
    _vectors: VectorFiller

    async def get_conversation(self, owner: str, conv_id: str) -> Conversation:
        rows = await self._read(
            sql.VISIBLE_SQL, {"conv": conv_id, "owner": owner, "now": self._clock()}
        )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return Conversation(*rows[0])

    async def list_conversations(self, owner: str, limit: int = 100) -> list[Conversation]:
        """The owner's conversations, newest activity first."""
        rows = await self._read(
            f"SELECT {sql.CONVERSATION_COLUMNS} FROM conversations WHERE owner = %(owner)s "
            f"AND {sql.VISIBLE} ORDER BY last_active_at DESC, seq DESC "
            "LIMIT %(limit)s",
            {"owner": owner, "now": self._clock(), "limit": max(0, int(limit))},
        )
        return [Conversation(*r) for r in rows]

    async def transcript(
        self,
        owner: str,
        conv_id: str,
        limit: int | None = None,
        *,
        before_id: int | None = None,
    ) -> list[Turn]:
        """Everything the user can scroll, oldest first: compacted turns and summaries too.

        `limit` keeps the newest `limit` rows (None: all); `before_id` pages back from there.
        """
        rows = await self._read(
            sql.TRANSCRIPT_SQL,
            {
                "conv": conv_id,
                "owner": owner,
                "now": self._clock(),
                "before": (1 << 62) if before_id is None else before_id,
                "limit": None if limit is None else max(0, int(limit)),
            },
        )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        return [
            turn_from_row(r[2:]) for r in sorted(rows, key=lambda r: r[2] or 0) if r[2] is not None
        ]

    async def expect(self, owner: str, conv_id: str, query: str) -> None:
        """Start embedding `query`, the coming message of `conv_id`, for the context() that
        recalls by it: a turn with other reads to make first lets the embedding run meanwhile.
        Returns at once; nothing is read or written."""
        if query and self.policy.recall_k:
            self._vectors.expect(conv_id, query)

    async def context(self, owner: str, conv_id: str, query: str | None = None) -> ContextWindow:
        """What the model should see: latest summary + the newest turns under the budget.

        With `query` (the new message), older turns that match it by words or meaning are
        recalled too, as snippets packed into `recall_chars` (memory/packing.py) — ranked by
        the same pure functions as SQLite's, over the same rows and cosines.
        """
        policy, now = self.policy, self._clock()
        terms: list[str] = []
        embedding = None
        if query and policy.recall_k:
            terms = query_terms(query[:MAX_MESSAGE_CHARS])[:MAX_RECALL_TERMS]
            # Embedded while the statement runs, kept for the append (memory/reading.py).
            embedding = self._vectors.ask(conv_id, query)  # started by expect(), or now
        params: dict[str, object] = {
            "conv": conv_id,
            "owner": owner,
            "now": now,
            "keep": policy.keep_recent,
        }
        cjk_count = None
        if terms:
            params.update(_term_params(terms), hits=policy.recall_k)
            cjk_count = len(params["cjk"])
        # As SQLite's reader: the turns' vectors are read even when the question has none
        # (see memory/reading.py).
        with_vectors = self.embedder is not None and bool(query) and bool(policy.recall_k)
        if with_vectors:
            params["model"] = self.embedder.name
        if cjk_count is None and not with_vectors:
            statement = sql.CONTEXT_CALL_SQL  # the same rows, from a plan the server keeps
        else:
            statement = sql.context_sql(cjk_count, with_vectors)
        try:
            rows = await self._read(statement, params)
        except BaseException:
            if embedding is not None:
                embedding.cancel()
            raise
        if not rows:
            if embedding is not None:
                embedding.cancel()  # no append will want it
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        # Every row carries the counters; the rest is the SQLite backend's row shape, so the
        # same pure assembly applies.
        shaped = [(KIND_CONVERSATION, rows[0][0], rows[0][1])]
        shaped += [_sqlite_shape(r[2:]) for r in rows if r[2] is not None]
        if embedding is not None and not has_older(shaped):  # as SQLite's: no vector needed
            self._vectors.keep_later(conv_id, query, embedding)
            return assemble_context(shaped, policy, terms, query=query or "", now=now)
        asked = await embedding if embedding is not None else NO_QUERY_VECTOR
        self._vectors.keep_fresh(conv_id, query, asked.own)
        semantic = semantic_scores(shaped, asked.recall)
        missing, named = ([], None)
        if with_vectors:
            missing, named = missing_candidates(shaped, semantic, policy, terms)
        renames = await self._renames(named, conv_id, semantic) if named is not None else None
        missing += [i for i in (renames or {}).values() if i not in missing]
        if missing:
            found = await self._read(sql.RECALL_TURNS_SQL, {"ids": missing, "conv": conv_id})
            shaped += [_sqlite_shape(r) for r in found]
        return assemble_context(
            shaped, policy, terms, semantic=semantic, query=query or "", now=now, renames=renames
        )

    async def _renames(self, named: NamedScan, conv_id: str, semantic: Meaning) -> dict[int, int]:
        """As SQLite's reading._renames: the scan, then one look for where each new name is
        first said."""
        params = sql.later_named_params(conv_id, named.after, named.before, named.words)
        cands = named.candidates(await self._read(sql.LATER_NAMED_SQL, params), semantic.similarity)
        names = names_to_check(cands)
        if not names:
            return {}
        params = {"conv": conv_id}
        params.update({f"m{i}": word_query(name_terms(n)) for i, n in enumerate(names)})
        found = await self._read(sql.named_first_sql(len(names)), params)
        return picks(cands, names, {names[i]: at for i, at in found if at is not None})

    async def search(
        self,
        owner: str,
        text: str,
        limit: int = 20,
        mark: tuple[str, str] = ("**", "**"),
    ) -> list[SearchHit]:
        """The owner's messages (and summaries) matching `text`, newest first, with snippets.

        `text` is plain user input, never query syntax; text without words returns [].
        Snippets are raw message text with matches wrapped in `mark`: escape before HTML.
        """
        terms = query_terms(text[:MAX_MESSAGE_CHARS])
        characters = lone_cjk(text)  # 高 alone: in no bigram (memory/recall.py)
        if not (terms or characters) or limit <= 0:
            return []
        params = _term_params(terms)
        params.update({f"ch{i}": ch for i, ch in enumerate(characters)})
        params.update(owner=owner, now=self._clock(), limit=int(limit))
        statement = sql.search_sql(len(params["cjk"]), len(characters))
        rows = await self._read(statement, params)
        terms = [*terms, *characters]
        return [
            SearchHit(
                conversation_id=cid,
                conversation_title=title,
                turn_id=tid,
                role=role,
                snippet=snippet(content, terms, mark),
                created_at=created,
                speaker=speaker,
            )
            for tid, cid, title, role, content, created, speaker in rows
        ]

    async def find_conversations(
        self, owner: str, text: str, limit: int = 20
    ) -> list[Conversation]:
        """The owner's conversations whose title or messages match `text`, newest activity
        first: for a sidebar search box. Looks at the newest 200 matching messages."""
        terms = query_terms(text[:MAX_MESSAGE_CHARS])
        if not terms or limit <= 0:
            return []
        hits = {h.conversation_id for h in await self.search(owner, text, limit=200)}
        conversations = await self.list_conversations(owner, limit=1000)
        return matching_conversations(conversations, hits, terms, limit)

    async def status(self, owner: str, conv_id: str) -> MemoryStatus:
        """What the memory badge shows. `summarizing` is true while any replica folds it."""
        window = await self.context(owner, conv_id)
        now = self._clock()
        rows = await self._read(
            f"SELECT {sql.CONVERSATION_COLUMNS}, summary_count, summarizing_until, "
            "coalesce((SELECT about_me FROM owner_settings WHERE owner = %(owner)s), false) "
            f"FROM conversations WHERE id = %(conv)s AND owner = %(owner)s AND {sql.VISIBLE}",
            {"conv": conv_id, "owner": owner, "now": now},
        )
        if not rows:
            raise ConversationNotFound(NOT_FOUND_MESSAGE)
        conv = Conversation(*rows[0][:-3])
        summary_count, leased_until, about_me_on = rows[0][-3:]
        return MemoryStatus(
            total=conv.message_count,
            active=conv.active_count,
            compacted=conv.message_count - conv.active_count,
            summaries=summary_count,
            summary_covers=(window.summary.covers_count or 0) if window.summary else 0,
            context_chars=window.chars,
            budget=window.budget,
            summarizing=conv_id in self._summarizing
            or (leased_until is not None and leased_until > now),
            retention_minutes=conv.retention_minutes,
            expires_at=conv.expires_at,
            pinned=len(window.pinned),
            pinned_chars=window.part_chars()["pinned"],
            summary_edited=bool(window.summary and window.summary.edited),
            about_me_on=about_me_on,
            about_me_pins=sum(p.about_me for p in window.pinned),
        )
