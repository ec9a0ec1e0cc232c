"""SQL text of the PostgreSQL backend (named %(params)s for psycopg)."""

from __future__ import annotations

from ..sql import (
    KIND_HIT,
    KIND_NEXT,
    KIND_PINNED,
    KIND_PREV,
    KIND_RECENT,
    KIND_SUMMARY,
    METRICS_COLUMNS,
)

CONVERSATION_COLUMNS = (
    "id, owner, title, persona_id, persona_version, retention_minutes, created_at, "
    "last_active_at, message_count, active_count, chars, expires_at"
)
TURN_NAMES = (
    "id",
    "conversation_id",
    "role",
    "content",
    "created_at",
    "is_summary",
    "compacted",
    "covers_from_id",
    "covers_to_id",
    "covers_count",
    "incomplete",
    "speaker",
    "origin",
    "outcome",
    "outcome_note",
)
TURN_COLUMNS = ", ".join(TURN_NAMES)


def turn_columns(alias: str) -> str:
    return ", ".join(f"{alias}.{c}" for c in TURN_NAMES)


VISIBLE = "(expires_at IS NULL OR expires_at > %(now)s)"
VISIBLE_SQL = (
    f"SELECT {CONVERSATION_COLUMNS} FROM conversations "
    f"WHERE id = %(conv)s AND owner = %(owner)s AND {VISIBLE}"
)
# Row-locks the conversation: every write to a conversation's turns takes it first, so writes
# to one conversation are serialized across replicas and turn ids rise in commit order.
LOCK_VISIBLE_SQL = VISIBLE_SQL + " FOR UPDATE"

# A visible conversation's rows in one statement: no rows when it is not visible (missing,
# expired, another owner's), one row of NULLs when it is visible but `inner` finds nothing.
_OUTER = (
    "SELECT c.message_count, c.active_count, r.* FROM conversations c "
    "LEFT JOIN LATERAL ({inner}) r ON true "
    "WHERE c.id = %(conv)s AND c.owner = %(owner)s AND (c.expires_at IS NULL "
    "OR c.expires_at > %(now)s)"
)

TRANSCRIPT_SQL = _OUTER.format(
    inner=f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = c.id AND id < %(before)s "
    "ORDER BY id DESC LIMIT %(limit)s"
)

# context(): every row is (message_count, active_count, kind, 15 turn columns, rank,
# neighbour_of), like the SQLite backend's single statement.
_RECENT_CTE = (
    f"recent AS (SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = %(conv)s "
    "AND NOT compacted AND NOT is_summary ORDER BY id DESC LIMIT %(keep)s)"
)
_BASE = (
    f"SELECT * FROM (SELECT {KIND_SUMMARY} AS kind, {TURN_COLUMNS}, NULL::float8 AS rank, "
    "NULL::bigint AS neighbour_of FROM turns WHERE conversation_id = c.id AND NOT compacted "
    "AND is_summary ORDER BY id DESC LIMIT 1) s "
    f"UNION ALL SELECT {KIND_RECENT}, recent.*, NULL, NULL FROM recent "
    # The conversation's pins, and the owner's "about me" pins when the owner turned them on.
    # A UNION's columns keep one type each, so a pin's columns go where the types match (id,
    # owner, conversation, content, created_at; source turn in covers_from_id): pinned_row().
    f"UNION ALL SELECT {KIND_PINNED}, p.id, p.owner, p.conversation_id, p.content, "
    "p.created_at, NULL, NULL, p.source_turn_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL FROM pinned_facts p WHERE p.owner = c.owner AND (p.conversation_id = c.id OR "
    "(p.conversation_id IS NULL AND EXISTS (SELECT 1 FROM owner_settings o "
    "WHERE o.owner = c.owner AND o.about_me)))"
)


def pinned_row(row: tuple) -> tuple:
    """A KIND_PINNED context row in the shape SQLite's has: (kind, memory.sql.PINNED_COLUMNS)."""
    return (row[0], *row[1:6], row[8])


CONTEXT_SQL = f"WITH {_RECENT_CTE} " + _OUTER.format(inner=_BASE)


def match_sql(alias: str, cjk_count: int) -> str:
    """Whether turn `alias` matches: its words the tsquery `q.q`, or its CJK bigrams any of
    %(cjk0)s... (separate ORs, so the planner can use pg_trgm's index for each)."""
    parts = [f"{alias}.words @@ q.q"]
    parts += [f"{alias}.cjk LIKE %(cjk{i})s" for i in range(cjk_count)]
    return "(" + " OR ".join(parts) + ")"


def _score(alias: str) -> str:
    # Lower is better, like bm25 on SQLite: the words' ts_rank plus one per CJK bigram found.
    return (
        f"-(coalesce(ts_rank({alias}.words, q.q), 0) + (SELECT count(*) FROM "
        f"unnest(%(cjk)s::text[]) p WHERE {alias}.cjk LIKE p))"
    )


def context_recall_sql(cjk_count: int) -> str:
    hits = (
        f"hits AS (SELECT {turn_columns('t')}, {_score('t')} AS rank FROM turns t CROSS JOIN q "
        "WHERE t.conversation_id = %(conv)s AND NOT t.is_summary "
        # Only turns older than the recent window are candidates.
        "AND t.id < (SELECT coalesce(min(id), 9223372036854775807) FROM recent) "
        f"AND {match_sql('t', cjk_count)} ORDER BY rank, t.id LIMIT %(hits)s)"
    )
    # Each hit with the turns just after and just before it (a snippet is built from them).
    neighbours = (
        f"SELECT {KIND_NEXT}, {turn_columns('n')}, NULL, h.id FROM hits h "
        "JOIN turns n ON n.id = (SELECT id FROM turns WHERE conversation_id = %(conv)s "
        "AND id > h.id AND NOT is_summary ORDER BY id LIMIT 1) "
        f"UNION ALL SELECT {KIND_PREV}, {turn_columns('n')}, NULL, h.id FROM hits h "
        "JOIN turns n ON n.id = (SELECT id FROM turns WHERE conversation_id = %(conv)s "
        "AND id < h.id AND NOT is_summary ORDER BY id DESC LIMIT 1)"
    )
    inner = f"{_BASE} UNION ALL SELECT {KIND_HIT}, hits.*, NULL FROM hits UNION ALL {neighbours}"
    return f"WITH {_RECENT_CTE}, q AS (SELECT %(tsq)s::tsquery AS q), {hits} " + _OUTER.format(
        inner=inner
    )


def search_sql(cjk_count: int, char_count: int = 0) -> str:
    """An owner's matching messages, newest first. Lone CJK characters (%(ch0)s...), which no
    bigram holds, are looked for in the text itself (strpos: no wildcard syntax)."""
    match = match_sql("t", cjk_count)
    if char_count:
        chars = " OR ".join(f"strpos(t.content, %(ch{i})s) > 0" for i in range(char_count))
        match = f"({match} OR {chars})"
    return (
        "SELECT t.id, t.conversation_id, c.title, t.role, t.content, t.created_at "
        "FROM (SELECT %(tsq)s::tsquery AS q) q, turns t "
        "JOIN conversations c ON c.id = t.conversation_id "
        "WHERE c.owner = %(owner)s AND (c.expires_at IS NULL OR c.expires_at > %(now)s) "
        f"AND {match} ORDER BY t.id DESC LIMIT %(limit)s"
    )


APPEND_SQL = (
    # The counters, title and expiry first: the UPDATE is also the visibility check (owner,
    # not expired) and takes the conversation's row lock, so a missing conversation inserts
    # nothing. One statement: one round trip, atomic on its own.
    "WITH c AS (UPDATE conversations SET message_count = message_count + 1, "
    "active_count = active_count + 1, chars = chars + %(chars)s, last_active_at = %(now)s, "
    "expires_at = CASE WHEN retention_minutes IS NULL THEN NULL "
    "ELSE %(now)s + retention_minutes * 60.0 END, title = coalesce(title, %(title)s) "
    f"WHERE id = %(conv)s AND owner = %(owner)s AND {VISIBLE} RETURNING id) "
    "INSERT INTO turns (conversation_id, role, content, created_at, incomplete, speaker, "
    "origin, outcome, outcome_note, words, cjk) SELECT c.id, %(role)s, %(content)s, %(when)s, "
    "%(incomplete)s, %(speaker)s, %(origin)s, %(outcome)s, %(outcome_note)s, "
    "%(words)s::tsvector, %(cjk_text)s FROM c RETURNING id"
)

TRAILING_ACTIVE_SQL = (
    f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = %(conv)s AND NOT compacted "
    "AND NOT is_summary ORDER BY id DESC LIMIT %(limit)s"
)

# Summarization. The claim is a lease on the conversation row: at most one replica calls the
# summarizer for a conversation at a time, and a replica that dies mid-way loses it when the
# lease runs out.
CLAIM_SQL = (
    "UPDATE conversations SET summarizing_until = %(until)s WHERE id = %(conv)s "
    f"AND owner = %(owner)s AND {VISIBLE} AND active_count >= %(at)s "
    "AND (summarizing_until IS NULL OR summarizing_until <= %(now)s) RETURNING active_count"
)
RELEASE_SQL = (
    "UPDATE conversations SET summarizing_until = NULL "
    "WHERE id = %(conv)s AND summarizing_until = %(until)s"
)
FOLD_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('mnemo.fold:' || %(conv)s, 0))"
FOLD_TURNS_SQL = (
    f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = %(conv)s AND NOT compacted "
    "AND NOT is_summary ORDER BY id LIMIT %(fold)s"
)
LATEST_SUMMARY_SQL = (
    f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = %(conv)s AND NOT compacted "
    "AND is_summary ORDER BY id DESC LIMIT 1"
)

# One model call's numbers (never text), in memory.records.TurnMetrics order after the first 3.
INSERT_METRICS_SQL = (
    f"INSERT INTO turn_metrics (owner, conversation_id, created_at, {METRICS_COLUMNS}) "
    "VALUES (" + ", ".join(["%s"] * (3 + len(METRICS_COLUMNS.split(",")))) + ")"
)
