"""SQL text of the PostgreSQL backend (named %(params)s for psycopg)."""

from __future__ import annotations

from ..sql import (
    KIND_HIT,
    KIND_NEXT,
    KIND_PINNED,
    KIND_PREV,
    KIND_RECENT,
    KIND_SUMMARY,
    KIND_VECTOR,
    METRICS_COLUMNS,
    NAMED_SCAN_ROWS,
    NAMED_SCAN_TURNS,
    TURN_WIDTH,
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
# neighbour_of, vector), like the SQLite backend's single statement plus a bytea column: a
# KIND_VECTOR row carries a turn's vector there (SQLite's puts it in the content column, which
# is text here).
_RECENT_CTE = (
    f"recent AS (SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = %(conv)s "
    "AND NOT compacted AND NOT is_summary ORDER BY id DESC LIMIT %(keep)s)"
)
_BEFORE_RECENT = "(SELECT coalesce(min(id), 9223372036854775807) FROM recent)"
_BASE = (
    f"SELECT * FROM (SELECT {KIND_SUMMARY} AS kind, {TURN_COLUMNS}, NULL::float8 AS rank, "
    "NULL::bigint AS neighbour_of, NULL::bytea AS vector FROM turns WHERE conversation_id = c.id "
    "AND NOT compacted AND is_summary ORDER BY id DESC LIMIT 1) s "
    f"UNION ALL SELECT {KIND_RECENT}, recent.*, NULL, NULL, NULL FROM recent "
    # The conversation's pins, and the owner's "about me" pins when the owner turned them on.
    # A UNION's columns keep one type each, so a pin's columns go where the types match (id,
    # owner, conversation, content, created_at; source turn in covers_from_id): pinned_row().
    f"UNION ALL SELECT {KIND_PINNED}, p.id, p.owner, p.conversation_id, p.content, "
    "p.created_at, NULL, NULL, p.source_turn_id, "
    + ", ".join(["NULL"] * (TURN_WIDTH - 8 + 3))
    + " FROM pinned_facts p WHERE p.owner = c.owner AND (p.conversation_id = c.id OR "
    "(p.conversation_id IS NULL AND EXISTS (SELECT 1 FROM owner_settings o "
    "WHERE o.owner = c.owner AND o.about_me)))"
)


def pinned_row(row: tuple) -> tuple:
    """A KIND_PINNED context row in the shape SQLite's has: (kind, memory.sql.PINNED_COLUMNS)."""
    return (row[0], *row[1:6], row[8])


# Each hit with the turns just after and just before it (a snippet is built from them).
_HITS_AND_NEIGHBOURS = (
    f"SELECT {KIND_HIT}, hits.*, NULL, NULL FROM hits "
    f"UNION ALL SELECT {KIND_NEXT}, {turn_columns('n')}, NULL, h.id, NULL FROM hits h "
    "JOIN turns n ON n.id = (SELECT id FROM turns WHERE conversation_id = %(conv)s "
    "AND id > h.id AND NOT is_summary ORDER BY id LIMIT 1) "
    f"UNION ALL SELECT {KIND_PREV}, {turn_columns('n')}, NULL, h.id, NULL FROM hits h "
    "JOIN turns n ON n.id = (SELECT id FROM turns WHERE conversation_id = %(conv)s "
    "AND id < h.id AND NOT is_summary ORDER BY id DESC LIMIT 1)"
)
# The vectors of the embedder %(model)s of every turn older than the recent window; the
# cosines are computed in Python (memory/context.py), exactly as on SQLite.
_VECTORS = (
    f"SELECT {KIND_VECTOR}, v.turn_id, "
    + ", ".join(["NULL"] * (TURN_WIDTH - 1))
    + ", NULL, NULL, v.vector FROM turn_vectors v WHERE v.conversation_id = %(conv)s "
    f"AND v.model = %(model)s AND v.turn_id < {_BEFORE_RECENT}"
)


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


def context_sql(cjk_count: int | None, vectors: bool) -> str:
    """The context statement: with keyword recall when `cjk_count` is not None (%(tsq)s,
    %(cjk)s, %(cjk0)s..., %(hits)s), with the conversation's vectors when `vectors`
    (%(model)s)."""
    ctes = [_RECENT_CTE]
    inner = _BASE
    if cjk_count is not None:
        ctes += [
            "q AS (SELECT mnemo_query(%(tsq)s::tsvector) AS q)",
            f"hits AS (SELECT {turn_columns('t')}, {_score('t')} AS rank FROM turns t "
            "CROSS JOIN q WHERE t.conversation_id = %(conv)s AND NOT t.is_summary "
            # Only turns older than the recent window are candidates.
            f"AND t.id < {_BEFORE_RECENT} AND {match_sql('t', cjk_count)} "
            "ORDER BY rank, t.id LIMIT %(hits)s)",
        ]
        inner += f" UNION ALL {_HITS_AND_NEIGHBOURS}"
    if vectors:
        inner += f" UNION ALL {_VECTORS}"
    return f"WITH {', '.join(ctes)} " + _OUTER.format(inner=inner)


# context_sql(None, False) as a call of the function m011_context_function made of it: the
# server parses and plans a short call instead of the whole statement, whose plan it keeps.
CONTEXT_CALL_SQL = "SELECT * FROM mnemo_context(%(conv)s, %(owner)s, %(now)s, %(keep)s)"


# The turns found by meaning that the keywords did not find (%(ids)s), with their neighbours;
# rows as context_sql's without the two counters.
RECALL_TURNS_SQL = (
    f"WITH hits AS (SELECT {TURN_COLUMNS}, NULL::float8 AS rank FROM turns "
    f"WHERE id = ANY(%(ids)s) AND conversation_id = %(conv)s) {_HITS_AND_NEIGHBOURS}"
)


# The later turns that may rename a hit's slot (memory/renames.py NamedScan): of the newest
# %(limit)s between %(after)s and %(before)s, the newest %(rows)s with one of the slot words
# (%(named)s, an alternation of lowercase words) then a capitalised word; checked exactly by
# the pure side. Rows as SQLite's sql.later_named, bounded alike (sql.NAMED_SCAN_TURNS).
LATER_NAMED_SQL = (
    "SELECT id, role, content, speaker FROM (SELECT id, role, content, speaker, is_summary "
    "FROM turns WHERE conversation_id = %(conv)s AND id > %(after)s AND id < %(before)s "
    "ORDER BY id DESC LIMIT %(limit)s) t WHERE NOT is_summary AND content ~ %(named)s "
    "ORDER BY id DESC LIMIT %(rows)s"
)


def later_named_params(conv_id: str, after: int, before: int, words) -> dict[str, object]:
    """LATER_NAMED_SQL's parameters (the words are lowercase letters: no escaping needed)."""
    pattern = r"\m(" + "|".join(words) + r") [A-Z][a-z]"
    return {
        "conv": conv_id,
        "after": after,
        "before": before,
        "named": pattern,
        "limit": NAMED_SCAN_TURNS,
        "rows": NAMED_SCAN_ROWS,
    }


def named_first_sql(count: int) -> str:
    """As SQLite's sql.named_first: for `count` names (%(m0)s..., word_query literals), rows
    (i, the id of the first turn of %(conv)s holding name i, or NULL), by the words' GIN
    index or the conversation's, as the planner finds cheaper."""
    return " UNION ALL ".join(
        f"SELECT {i}, (SELECT min(id) FROM turns WHERE conversation_id = %(conv)s "
        f"AND NOT is_summary AND words @@ mnemo_query(%(m{i})s::tsvector))"
        for i in range(count)
    )


def search_sql(cjk_count: int, char_count: int = 0) -> str:
    """An owner's matching messages, newest first. Lone CJK characters (%(ch0)s...), which no
    bigram holds, are looked for in the text itself (strpos: no wildcard syntax)."""
    match = match_sql("t", cjk_count)
    if char_count:
        chars = " OR ".join(f"strpos(t.content, %(ch{i})s) > 0" for i in range(char_count))
        match = f"({match} OR {chars})"
    return (
        "SELECT t.id, t.conversation_id, c.title, t.role, t.content, t.created_at, t.speaker "
        "FROM (SELECT mnemo_query(%(tsq)s::tsvector) AS q) q, turns t "
        "JOIN conversations c ON c.id = t.conversation_id "
        "WHERE c.owner = %(owner)s AND (c.expires_at IS NULL OR c.expires_at > %(now)s) "
        f"AND {match} ORDER BY t.id DESC LIMIT %(limit)s"
    )


APPEND_SQL = (
    # The counters, title and expiry first: the UPDATE is also the visibility check (owner,
    # not expired) and takes the conversation's row lock, so a missing conversation inserts
    # nothing. Then the turn with its search text, and its vector when there is one (%(model)s
    # and %(vector)s NULL without). One statement: one round trip, atomic on its own.
    "WITH c AS (UPDATE conversations SET message_count = message_count + 1, "
    "active_count = active_count + 1, chars = chars + %(chars)s, last_active_at = %(now)s, "
    "expires_at = CASE WHEN retention_minutes IS NULL THEN NULL "
    "ELSE %(now)s + retention_minutes * 60.0 END, title = coalesce(title, %(title)s) "
    f"WHERE id = %(conv)s AND owner = %(owner)s AND {VISIBLE} RETURNING id), "
    "t AS (INSERT INTO turns (conversation_id, role, content, created_at, incomplete, speaker, "
    "origin, outcome, outcome_note, words, cjk) SELECT c.id, %(role)s, %(content)s, %(when)s, "
    "%(incomplete)s, %(speaker)s, %(origin)s, %(outcome)s, %(outcome_note)s, "
    "mnemo_stem(%(words)s::tsvector), %(cjk_text)s FROM c RETURNING id, conversation_id), "
    "v AS (INSERT INTO turn_vectors (turn_id, conversation_id, model, vector) "
    "SELECT t.id, t.conversation_id, %(model)s, %(vector)s::bytea FROM t "
    "WHERE %(vector)s::bytea IS NOT NULL) "
    "SELECT id FROM t"
)
# Appends that arrived together (memory/postgres/appends.py), in one statement: one parse,
# one plan and one commit for the batch. Each parameter is an array with one element per
# append (APPEND_SQL's names, plus %(ord)s: the append's place in the batch); returns
# (ord, turn id) for each append written; an append whose conversation is not visible to its
# owner writes nothing and returns no row.
APPEND_BATCH_SQL = (
    "WITH i AS MATERIALIZED (SELECT * FROM unnest(%(ord)s::int[], %(conv)s::text[], "
    "%(owner)s::text[], %(now)s::float8[], %(chars)s::int[], %(title)s::text[], "
    "%(role)s::text[], %(content)s::text[], %(when)s::float8[], %(incomplete)s::bool[], "
    "%(speaker)s::text[], %(origin)s::text[], %(outcome)s::text[], %(outcome_note)s::text[], "
    "%(words)s::tsvector[], %(cjk_text)s::text[], %(model)s::text[], %(vector)s::bytea[]) "
    "AS i(ord, conv, owner, now, chars, title, role, content, created_at, incomplete, speaker, "
    "origin, outcome, outcome_note, words, cjk, model, vector)), "
    # Per conversation (and owner: a wrong owner's append must not count): how many, how
    # long, the first title.
    "p AS (SELECT conv, owner, max(now) AS now, count(*) AS n, sum(chars) AS chars, "
    "(array_agg(title ORDER BY ord) FILTER (WHERE title IS NOT NULL))[1] AS title "
    "FROM i GROUP BY conv, owner), "
    # Row locks in id order, so two batches (two replicas) never wait for each other in a
    # cycle; the visibility check as APPEND_SQL's.
    "locked AS MATERIALIZED (SELECT c.id, p.owner FROM conversations c JOIN p "
    "ON c.id = p.conv AND c.owner = p.owner WHERE c.expires_at IS NULL OR c.expires_at > p.now "
    "ORDER BY c.id FOR UPDATE OF c), "
    "c AS (UPDATE conversations SET message_count = message_count + p.n, "
    "active_count = active_count + p.n, chars = conversations.chars + p.chars, "
    "last_active_at = p.now, expires_at = CASE WHEN retention_minutes IS NULL THEN NULL "
    "ELSE p.now + retention_minutes * 60.0 END, title = coalesce(conversations.title, p.title) "
    "FROM locked JOIN p ON p.conv = locked.id AND p.owner = locked.owner "
    "WHERE conversations.id = locked.id RETURNING conversations.id, conversations.owner), "
    # Ids taken in the order the appends were called (the sorted subquery is read in order),
    # after the locks: one conversation's turn ids rise in call and commit order.
    "ids AS (SELECT s.ord, nextval(pg_get_serial_sequence('turns', 'id')) AS id FROM "
    "(SELECT i.ord FROM i JOIN c ON c.id = i.conv AND c.owner = i.owner ORDER BY i.ord) s), "
    "t AS (INSERT INTO turns (id, conversation_id, role, content, created_at, incomplete, "
    "speaker, origin, outcome, outcome_note, words, cjk) OVERRIDING SYSTEM VALUE SELECT ids.id, "
    "i.conv, i.role, i.content, i.created_at, i.incomplete, i.speaker, i.origin, i.outcome, "
    "i.outcome_note, mnemo_stem(i.words), i.cjk FROM ids JOIN i USING (ord) RETURNING id), "
    "v AS (INSERT INTO turn_vectors (turn_id, conversation_id, model, vector) "
    "SELECT ids.id, i.conv, i.model, i.vector FROM ids JOIN i USING (ord) "
    "WHERE i.vector IS NOT NULL) "
    "SELECT ids.ord, t.id FROM ids JOIN t USING (id)"
)
# The opt-in `append_commit="async"` (PostgresStore.open): the append's own transaction commits
# without waiting for its WAL flush (synchronous_commit off for that transaction only, as SET
# LOCAL would, without the extra round trips of an explicit transaction; set_config's last
# argument makes it local, so nothing carries over to the next use of the connection).
_ASYNC_COMMIT = " CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS commit_mode"


def append_sql(batch: bool, async_commit: bool) -> str:
    """APPEND_SQL or APPEND_BATCH_SQL, committing without its WAL flush when `async_commit`."""
    statement = APPEND_BATCH_SQL if batch else APPEND_SQL
    return statement + _ASYNC_COMMIT if async_commit else statement


# A turn's vector, written or replaced (a reply rewritten while it streams).
UPSERT_VECTOR_SQL = (
    "INSERT INTO turn_vectors (turn_id, conversation_id, model, vector) "
    "VALUES (%(turn)s, %(conv)s, %(model)s, %(vector)s) ON CONFLICT (turn_id) "
    "DO UPDATE SET model = excluded.model, vector = excluded.vector"
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
