"""The SQLite backend's SQL text, and the two functions that turn its rows into records.

Every statement the store, compaction and retention run is here, named for what it does, so
the queries can be read (and EXPLAINed) together. Column lists are in table order: the row
converters below depend on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .recall import RECALL_TEXT_FUNCTION
from .records import Conversation, MetricsRow, PinnedFact, Turn, TurnMetrics

CONVERSATION_COLUMNS = (
    "id, owner, title, persona_id, persona_version, retention_minutes, created_at, "
    "last_active_at, message_count, active_count, chars, expires_at"
)
TURN_COLUMNS = (
    "id, conversation_id, role, content, created_at, is_summary, compacted, covers_from_id, "
    "covers_to_id, covers_count, incomplete, speaker, origin, outcome, outcome_note"
)
TURN_WIDTH = 15  # columns in TURN_COLUMNS
_TURN_COLUMNS_T = ", ".join("t." + c.strip() for c in TURN_COLUMNS.split(","))
_TURN_COLUMNS_N = ", ".join("n." + c.strip() for c in TURN_COLUMNS.split(","))
_VISIBLE = "(expires_at IS NULL OR expires_at > ?)"  # not past its retention

# -- conversations ----------------------------------------------------------------------

VISIBLE_CONVERSATION = (
    f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ? AND owner = ? AND {_VISIBLE}"
)
CONVERSATION_WITH_SUMMARY_COUNT = (
    f"SELECT {CONVERSATION_COLUMNS}, summary_count FROM conversations "
    f"WHERE id = ? AND owner = ? AND {_VISIBLE}"
)
LIST_CONVERSATIONS = (
    f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE owner = ? AND {_VISIBLE} "
    "ORDER BY last_active_at DESC, rowid DESC LIMIT ?"
)
INSERT_CONVERSATION = (
    "INSERT INTO conversations (id, owner, title, persona_id, persona_version, "
    "retention_minutes, created_at, last_active_at, expires_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
DELETE_CONVERSATION = "DELETE FROM conversations WHERE id = ?"


# -- turns ------------------------------------------------------------------------------

# The counters, title and expiry of an append in one statement that is also the visibility
# check (owner, not expired): RETURNING yields no row for a missing conversation.
APPEND_COUNTERS = (
    "UPDATE conversations SET message_count = message_count + 1, "
    "active_count = active_count + 1, chars = chars + ?, last_active_at = ?, "
    "expires_at = CASE WHEN retention_minutes IS NULL THEN NULL "
    "ELSE ? + retention_minutes * 60.0 END, title = coalesce(title, ?) "
    f"WHERE id = ? AND owner = ? AND {_VISIBLE} RETURNING 1"
)
INSERT_TURN = (
    "INSERT INTO turns (conversation_id, role, content, created_at, incomplete, speaker, "
    "origin, outcome, outcome_note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# A turn's outcome (a user message nobody answered; a retry clears it): params outcome, note,
# incomplete, turn id, conversation id.
SET_OUTCOME = (
    "UPDATE turns SET outcome = ?, outcome_note = ?, incomplete = ? "
    "WHERE id = ? AND conversation_id = ? AND is_summary = 0 RETURNING 1"
)
TURN_IDS = "SELECT id FROM turns WHERE conversation_id = ? ORDER BY id"
# An import: the conversation's counters set once for all its turns.
IMPORTED_COUNTERS = (
    "UPDATE conversations SET message_count = ?, active_count = ?, chars = ? WHERE id = ?"
)
TRANSCRIPT_PAGE = (
    f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND id < ? "
    "ORDER BY id DESC LIMIT ?"
)
TRAILING_ACTIVE = (
    f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND compacted = 0 "
    "AND is_summary = 0 ORDER BY id DESC LIMIT ?"
)
REMOVED_COUNTERS = (
    "UPDATE conversations SET message_count = message_count - ?, "
    "active_count = active_count - ?, chars = chars - ? WHERE id = ?"
)
RESET_TALLY = (
    "SELECT count(*) FILTER (WHERE is_summary = 0), count(*) FILTER (WHERE is_summary = 1), "
    "coalesce(sum(length(content)) FILTER (WHERE is_summary = 0), 0) "
    "FROM turns WHERE conversation_id = ?"
)
DELETE_ALL_TURNS = "DELETE FROM turns WHERE conversation_id = ?"
# Reset means forget: the title was taken from the first message, so it goes too.
RESET_COUNTERS = (
    "UPDATE conversations SET message_count = 0, active_count = 0, chars = 0, "
    "summary_count = 0, title = NULL WHERE id = ?"
)
DELETE_CONVERSATION_PINS = "DELETE FROM pinned_facts WHERE conversation_id = ?"
# The plots restart after a reset; the rows stay (ownerless of a conversation) for the quota.
DETACH_METRICS = "UPDATE turn_metrics SET conversation_id = NULL WHERE conversation_id = ?"


def delete_turns(count: int) -> str:
    """`DELETE FROM turns WHERE id IN (?, ...)` for `count` ids."""
    return f"DELETE FROM turns WHERE id IN ({','.join('?' * count)})"


# -- context: one statement --------------------------------------------------------------

# Every row of a context statement is (kind, 15 turn columns, rank, of): the conversation row
# carries only its counters (message_count, active_count); a hit its FTS5 rank (NULL for a
# hit found by meaning); the turn after / before a hit names the hit in `of`; a vector row
# is (kind, turn id, NULL, NULL, vector, NULL ...); a pinned fact's row carries
# PINNED_COLUMNS in the first turn columns.
(
    KIND_CONVERSATION,
    KIND_SUMMARY,
    KIND_RECENT,
    KIND_HIT,
    KIND_NEXT,
    KIND_PREV,
    KIND_VECTOR,
    KIND_PINNED,
    KIND_OLDER,
) = range(9)
PINNED_COLUMNS = "id, owner, conversation_id, content, created_at, source_turn_id"
_PINNED_WIDTH = 6
# The conversation's pins, and the owner's "about me" pins when the owner turned them on.
_PINNED_IN_CONTEXT = (
    f"SELECT {KIND_PINNED}, {PINNED_COLUMNS}, "
    + ", ".join(["NULL"] * (TURN_WIDTH - _PINNED_WIDTH + 2))
    + " FROM pinned_facts WHERE owner = :owner AND (conversation_id = :conv "
    "OR (conversation_id IS NULL AND EXISTS (SELECT 1 FROM owner_settings "
    "WHERE owner = :owner AND about_me = 1)))"
)
# A conversation of at most this many messages sends all its older turns with the context
# (KIND_OLDER rows) instead of each keyword hit with its neighbours: fewer rows than 120 hits
# with two neighbours each, and the turns found by meaning need no second statement.
WHOLE_RECALL_MESSAGES = 300
_RECENT_CTE = (
    f"recent AS (SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = :conv "
    "AND compacted = 0 AND is_summary = 0 ORDER BY id DESC LIMIT :keep)"
)
_CONTEXT_BASE = (
    f"SELECT {KIND_CONVERSATION}, message_count, active_count, "
    + ", ".join(["NULL"] * TURN_WIDTH)
    + " FROM conversations WHERE id = :conv AND owner = :owner "
    "AND (expires_at IS NULL OR expires_at > :now) "
    f"UNION ALL SELECT * FROM (SELECT {KIND_SUMMARY}, {TURN_COLUMNS}, NULL, NULL FROM turns "
    "WHERE conversation_id = :conv AND compacted = 0 AND is_summary = 1 ORDER BY id DESC LIMIT 1) "
    f"UNION ALL SELECT {KIND_RECENT}, *, NULL, NULL FROM recent "
    f"UNION ALL {_PINNED_IN_CONTEXT}"
)
_BEFORE_RECENT = "(SELECT coalesce(min(id), 1 << 62) FROM recent)"
_KEYWORD_HITS_CTE = (
    f"hits AS (SELECT {_TURN_COLUMNS_T}, recall_fts.rank AS rank FROM recall_fts "
    # CROSS JOIN keeps recall_fts the outer loop: its MATCH reads only this conversation's
    # doclists, in rank order.
    "CROSS JOIN turns t ON t.id = recall_fts.rowid "
    # Only turns older than the recent window are candidates; the rowid bound lets FTS5 skip
    # the rest of the doclists. Two conversations can share a key in the index, hence the
    # conversation_id check.
    f"WHERE recall_fts MATCH :match AND recall_fts.rowid < {_BEFORE_RECENT} "
    "AND t.conversation_id = :conv AND t.is_summary = 0 ORDER BY recall_fts.rank LIMIT :hits)"
)
# Each hit with the turns just after and just before it (a snippet is built from them).
_NEXT = (
    f"SELECT {KIND_NEXT}, {_TURN_COLUMNS_N}, NULL, h.id FROM hits h "
    "JOIN turns n ON n.id = (SELECT id FROM turns WHERE conversation_id = :conv AND id > h.id "
    "AND is_summary = 0 ORDER BY id LIMIT 1)"
)
_PREV = (
    f"SELECT {KIND_PREV}, {_TURN_COLUMNS_N}, NULL, h.id FROM hits h "
    "JOIN turns n ON n.id = (SELECT id FROM turns WHERE conversation_id = :conv AND id < h.id "
    "AND is_summary = 0 ORDER BY id DESC LIMIT 1)"
)
_HITS_AND_NEIGHBOURS = f"SELECT {KIND_HIT}, *, NULL FROM hits UNION ALL {_NEXT} UNION ALL {_PREV}"
_SMALL = "(SELECT message_count FROM conversations WHERE id = :conv) <= :whole"
# The hits, then either their neighbours or (a small conversation) every older turn: the
# branches exclude each other, and SQLite tests the constant condition before each one runs.
_HITS_AND_CONTEXT = (
    f"SELECT {KIND_HIT}, *, NULL FROM hits "
    f"UNION ALL SELECT * FROM ({_NEXT}) WHERE NOT {_SMALL} "
    f"UNION ALL SELECT * FROM ({_PREV}) WHERE NOT {_SMALL}"
)
_OLDER = (
    f"SELECT {KIND_OLDER}, {TURN_COLUMNS}, NULL, NULL FROM turns WHERE conversation_id = :conv "
    f"AND is_summary = 0 AND id < {_BEFORE_RECENT} AND {_SMALL}"
)
_VECTORS = (
    f"SELECT {KIND_VECTOR}, turn_id, NULL, NULL, vector, "
    + ", ".join(["NULL"] * (TURN_WIDTH - 2))
    + " FROM turn_vectors WHERE conversation_id = :conv AND model = :model "
    f"AND turn_id < {_BEFORE_RECENT}"
)
CONTEXT = f"WITH {_RECENT_CTE} {_CONTEXT_BASE}"
CONTEXT_WITH_RECALL = (
    f"WITH {_RECENT_CTE}, {_KEYWORD_HITS_CTE} {_CONTEXT_BASE} UNION ALL {_HITS_AND_CONTEXT} "
    f"UNION ALL {_OLDER}"
)
CONTEXT_WITH_VECTORS = f"WITH {_RECENT_CTE} {_CONTEXT_BASE} UNION ALL {_VECTORS} UNION ALL {_OLDER}"
CONTEXT_WITH_RECALL_AND_VECTORS = f"{CONTEXT_WITH_RECALL} UNION ALL {_VECTORS}"
# The turns found by meaning that the keywords did not find, with their neighbours.
RECALL_TURNS = (
    f"WITH hits AS (SELECT {TURN_COLUMNS}, NULL AS rank FROM turns "
    "WHERE id IN (SELECT value FROM json_each(:ids)) AND conversation_id = :conv) "
    f"{_HITS_AND_NEIGHBOURS}"
)


# A scan for renamed slots reads at most this many turns, newest first, and stops at
# NAMED_SCAN_ROWS that match: each slot word's GLOB costs about 0.6 µs a turn (bench
# long_memory's 720-message conversations: 0.44 ms for one word), so it stays bounded however
# long the conversation; the bench's facts change within 720 messages.
NAMED_SCAN_TURNS = 1_000
NAMED_SCAN_ROWS = 64


def later_named(words: int) -> str:
    """Of the newest :limit turns of :conv between :after and :before (exclusive), the newest
    :rows holding one of `words` slot words then a capitalised word (GLOB, case-sensitive;
    params :w0...): the candidates of renames.NamedScan, checked exactly there. Rows: id,
    role, content, speaker."""
    holds = " OR ".join(f"content GLOB :w{i}" for i in range(words))
    # No outer ORDER BY: the subquery's rows come newest first, so :rows stops the scan early.
    return (
        "SELECT id, role, content, speaker FROM (SELECT id, role, content, speaker, is_summary "
        "FROM turns WHERE conversation_id = :conv AND id > :after AND id < :before "
        f"ORDER BY id DESC LIMIT :limit) WHERE is_summary = 0 AND ({holds}) LIMIT :rows"
    )


def later_named_params(conv_id: str, after: int, before: int, words: Sequence[str]) -> dict:
    """later_named's parameters: each word as a GLOB (the words are lowercase letters)."""
    params: dict[str, object] = {
        "conv": conv_id,
        "after": after,
        "before": before,
        "limit": NAMED_SCAN_TURNS,
        "rows": NAMED_SCAN_ROWS,
    }
    params.update({f"w{i}": f"*{w} [A-Z][a-z]*" for i, w in enumerate(words)})
    return params


def named_first(count: int) -> str:
    """For `count` names (:m0..., recall_query MATCH expressions): rows (i, the id of the
    first turn of :conv holding name i, or NULL) (renames.names_to_check). recall_fts reads
    only this conversation's doclists of the names, in rowid order, up to the first turn
    that is this conversation's (two can share a key)."""
    return " UNION ALL ".join(
        f"SELECT {i}, (SELECT t.id FROM recall_fts CROSS JOIN turns t ON t.id = recall_fts.rowid "
        f"WHERE recall_fts MATCH :m{i} AND t.conversation_id = :conv AND t.is_summary = 0 "
        "ORDER BY recall_fts.rowid LIMIT 1)"
        for i in range(count)
    )


def context_sql(keywords: bool, vectors: bool) -> str:
    """The context statement: with recall by keywords (:match, :hits) and/or the
    conversation's vectors (:model); with either, every older turn of a conversation of at
    most :whole messages (WHOLE_RECALL_MESSAGES)."""
    if keywords:
        return CONTEXT_WITH_RECALL_AND_VECTORS if vectors else CONTEXT_WITH_RECALL
    return CONTEXT_WITH_VECTORS if vectors else CONTEXT


INSERT_VECTOR = (
    "INSERT OR REPLACE INTO turn_vectors (conversation_id, turn_id, model, vector) "
    "VALUES (?, ?, ?, ?)"
)
# A vector written after its turn (memory/vector_fill.py): only while the turn still holds the
# text it was made of, so an undone or rewritten turn never gets a stale one.
FILL_VECTOR = (
    "INSERT OR REPLACE INTO turn_vectors (conversation_id, turn_id, model, vector) "
    "SELECT conversation_id, id, ?, ? FROM turns WHERE id = ? AND content = ?"
)
# A reply rewritten: its old vector no longer says what it says.
DELETE_VECTOR = "DELETE FROM turn_vectors WHERE conversation_id = ? AND turn_id = ?"
# The backfill's step: messages (not summaries) up to a turn id lacking a vector of :model.
MISSING_VECTORS = (
    "SELECT t.id, t.conversation_id, t.content FROM turns t "
    "WHERE t.id > :after AND t.id <= :upto AND t.is_summary = 0 AND NOT EXISTS "
    "(SELECT 1 FROM turn_vectors v WHERE v.conversation_id = t.conversation_id "
    "AND v.turn_id = t.id AND v.model = :model) ORDER BY t.id LIMIT :n"
)
NEWEST_TURN = "SELECT max(id) FROM turns"
# How far a complete backfill pass got (m013_vector_backfill): one row.
BACKFILL_DONE = "SELECT done_upto FROM vector_backfill WHERE model = ?"
BACKFILL_MARK = "INSERT OR REPLACE INTO vector_backfill (one, model, done_upto) VALUES (1, ?, ?)"
BACKFILL_LOWER = "UPDATE vector_backfill SET done_upto = min(done_upto, ?)"

# -- search -----------------------------------------------------------------------------

SEARCH = (
    "SELECT t.id, t.conversation_id, c.title, t.role, t.content, t.created_at, t.speaker "
    "FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid "
    "JOIN conversations c ON c.id = t.conversation_id "
    "WHERE turns_fts MATCH ? AND c.owner = ? "
    "AND (c.expires_at IS NULL OR c.expires_at > ?) "
    "ORDER BY turns_fts.rowid DESC LIMIT ?"
)


# One-character CJK terms, which the pair index cannot serve: the owner's messages that contain
# any of them (instr, not LIKE: no wildcard syntax), newest first. It reads the owner's own
# messages only, through the owner and conversation indexes.
def search_characters(count: int) -> str:
    """The SELECT for `count` characters; params: owner, now, *characters, limit."""
    contains = " OR ".join(["instr(t.content, ?) > 0"] * count)
    return (
        "SELECT t.id, t.conversation_id, c.title, t.role, t.content, t.created_at, t.speaker "
        "FROM conversations c JOIN turns t ON t.conversation_id = c.id "
        "WHERE c.owner = ? AND (c.expires_at IS NULL OR c.expires_at > ?) "
        f"AND ({contains}) ORDER BY t.id DESC LIMIT ?"
    )


def fts_match(key_column: str, key: str, terms: list[str]) -> str:
    """An FTS5 expression: the key (owner or conversation) AND any of the quoted terms."""
    quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return f'{key_column} : "{key}" AND body : ({quoted})'


# The writer indexes every turn inside its INSERT: a TEMP trigger lives on that connection
# only, so the database schema stays exactly as the migrations made it.
INDEX_TURN_TRIGGER = (
    "CREATE TEMP TRIGGER index_turn AFTER INSERT ON main.turns BEGIN "
    "INSERT INTO turns_fts (rowid, body, owner_key, conversation_key) VALUES (new.id, "
    "mnemo_bigram_text(new.content), "
    "mnemo_owner_key((SELECT owner FROM conversations WHERE id = new.conversation_id)), "
    "mnemo_conversation_key(new.conversation_id)); "
    "INSERT INTO recall_fts (rowid, body) VALUES (new.id, "
    f"{RECALL_TEXT_FUNCTION}(new.conversation_id, new.content)); "
    "END"
)

# A reply saved while it streams is rewritten in place: the writer moves both FTS entries
# with it (the old text leaves the indexes, the new one enters) inside the UPDATE itself.
REINDEX_TURN_TRIGGER = (
    "CREATE TEMP TRIGGER reindex_turn AFTER UPDATE OF content ON main.turns BEGIN "
    "DELETE FROM turns_fts WHERE rowid = old.id; "
    "INSERT INTO recall_fts (recall_fts, rowid, body) VALUES ('delete', old.id, "
    f"{RECALL_TEXT_FUNCTION}(old.conversation_id, old.content)); "
    "INSERT INTO turns_fts (rowid, body, owner_key, conversation_key) VALUES (new.id, "
    "mnemo_bigram_text(new.content), "
    "mnemo_owner_key((SELECT owner FROM conversations WHERE id = new.conversation_id)), "
    "mnemo_conversation_key(new.conversation_id)); "
    "INSERT INTO recall_fts (rowid, body) VALUES (new.id, "
    f"{RECALL_TEXT_FUNCTION}(new.conversation_id, new.content)); "
    "END"
)
# A streaming reply's progress: the counters take the new length (the visibility check too),
# then the turn its text and outcome. Only a live reply is rewritten, never a summary or a
# folded turn.
REPLY_COUNTERS = (
    "UPDATE conversations SET chars = chars + ? - coalesce((SELECT length(content) FROM turns "
    "WHERE id = ? AND conversation_id = ?), ?), last_active_at = ? "
    f"WHERE id = ? AND owner = ? AND {_VISIBLE} RETURNING 1"
)
UPDATE_REPLY = (
    "UPDATE turns SET content = ?, outcome = ?, outcome_note = ?, incomplete = ? "
    "WHERE id = ? AND conversation_id = ? AND role = 'assistant' AND compacted = 0 "
    "RETURNING created_at"
)

# -- compaction -------------------------------------------------------------------------

OLDEST_ACTIVE = (
    f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND compacted = 0 "
    "AND is_summary = 0 ORDER BY id LIMIT ?"
)
LATEST_SUMMARY = (
    f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = ? AND compacted = 0 "
    "AND is_summary = 1 ORDER BY id DESC LIMIT 1"
)
LATEST_SUMMARY_ID = (
    "SELECT id FROM turns WHERE conversation_id = ? AND compacted = 0 "
    "AND is_summary = 1 ORDER BY id DESC LIMIT 1"
)
COUNT_ACTIVE_BETWEEN = (
    "SELECT count(*) FROM turns WHERE conversation_id = ? AND id BETWEEN ? AND ? "
    "AND is_summary = 0 AND compacted = 0"
)
INSERT_SUMMARY = (
    "INSERT INTO turns (conversation_id, role, content, created_at, is_summary, "
    "covers_from_id, covers_to_id, covers_count) VALUES (?, 'summary', ?, ?, 1, ?, ?, ?)"
)
COMPACT_BETWEEN = (
    "UPDATE turns SET compacted = 1 WHERE conversation_id = ? AND id BETWEEN ? AND ? "
    "AND is_summary = 0 AND compacted = 0"
)
COMPACT_TURN = "UPDATE turns SET compacted = 1 WHERE id = ?"
FOLDED_COUNTERS = (
    "UPDATE conversations SET active_count = active_count - ?, "
    "summary_count = summary_count + 1 WHERE id = ?"
)

# -- metrics ----------------------------------------------------------------------------

METRICS_COLUMNS = (
    "model, input_tokens, output_tokens, latency_ms, first_token_ms, status, error_kind, "
    "persona_chars, pinned_chars, summary_chars, recalled_chars, recent_chars, budget_chars, "
    "persona_id"
)
INSERT_METRICS = (
    f"INSERT INTO turn_metrics (owner, conversation_id, created_at, {METRICS_COLUMNS}) "
    "VALUES (" + ", ".join(["?"] * (3 + len(METRICS_COLUMNS.split(",")))) + ")"
)
# The newest `limit` calls of one conversation, returned oldest first by the store.
CONVERSATION_METRICS = (
    f"SELECT id, created_at, {METRICS_COLUMNS} FROM turn_metrics "
    "WHERE conversation_id = ? AND owner = ? ORDER BY id DESC LIMIT ?"
)

COUNT_TURN_REQUESTS = "SELECT count(*) FROM turn_metrics WHERE owner = ? AND created_at >= ?"

# -- retention --------------------------------------------------------------------------

EXPIRED_CONVERSATIONS = (
    "SELECT id FROM conversations WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?"
)
DELETE_TURNS_CHUNK = (
    "DELETE FROM turns WHERE id IN (SELECT id FROM turns WHERE conversation_id = ? "
    "ORDER BY id LIMIT ?)"
)
# Re-checks expiry inside the transaction: a write may have revived the conversation.
DELETE_IF_EXPIRED = "DELETE FROM conversations WHERE id = ? AND expires_at <= ?"

# -- pinned facts and owner settings ------------------------------------------------------

INSERT_PIN = (
    "INSERT INTO pinned_facts (owner, conversation_id, content, created_at, source_turn_id) "
    f"VALUES (?, ?, ?, ?, ?) RETURNING {PINNED_COLUMNS}"
)
CONVERSATION_PINS = (
    f"SELECT {PINNED_COLUMNS} FROM pinned_facts WHERE owner = ? AND conversation_id = ? ORDER BY id"
)
ABOUT_ME_PINS = (
    f"SELECT {PINNED_COLUMNS} FROM pinned_facts WHERE owner = ? AND conversation_id IS NULL "
    "ORDER BY id"
)
# (count, characters) of one scope: a conversation's pins, or (conv NULL) the about-me ones.
PIN_TALLY = (
    "SELECT count(*), coalesce(sum(length(content)), 0) FROM pinned_facts "
    "WHERE owner = ? AND conversation_id IS ?"
)
# The most characters any one of the owner's conversations has pinned.
LARGEST_CONVERSATION_PINS = (
    "SELECT coalesce(max(chars), 0) FROM (SELECT sum(length(content)) AS chars "
    "FROM pinned_facts WHERE owner = ? AND conversation_id IS NOT NULL "
    "GROUP BY conversation_id)"
)
DELETE_PIN = "DELETE FROM pinned_facts WHERE id = ? AND owner = ? RETURNING conversation_id"
TURN_OF_CONVERSATION = f"SELECT {TURN_COLUMNS} FROM turns WHERE id = ? AND conversation_id = ?"
OWNER_SETTINGS = "SELECT about_me, time_zone FROM owner_settings WHERE owner = ?"
SET_ABOUT_ME = (
    "INSERT INTO owner_settings (owner, about_me) VALUES (?, ?) "
    "ON CONFLICT (owner) DO UPDATE SET about_me = excluded.about_me"
)
SET_TIME_ZONE = (
    "INSERT INTO owner_settings (owner, time_zone) VALUES (?, ?) "
    "ON CONFLICT (owner) DO UPDATE SET time_zone = excluded.time_zone"
)

# -- the user's summary --------------------------------------------------------------------

# The user's text replaces the summary as a new summary turn over the same range (indexed by
# the INSERT like any turn); the one it replaces is compacted, so it leaves the context but
# stays in the transcript. A running summarization sees a newer summary and gives up.
INSERT_EDITED_SUMMARY = (
    "INSERT INTO turns (conversation_id, role, content, created_at, is_summary, "
    "covers_from_id, covers_to_id, covers_count, origin) "
    "VALUES (?, 'summary', ?, ?, 1, ?, ?, ?, 'edited')"
)
SUMMARY_WRITTEN = "UPDATE conversations SET summary_count = summary_count + 1 WHERE id = ?"

# -- export, import and deleting an owner ------------------------------------------------

ALL_TURNS = f"SELECT {TURN_COLUMNS} FROM turns WHERE conversation_id = ? ORDER BY id"
INSERT_IMPORTED_TURN = (
    "INSERT INTO turns (conversation_id, role, content, created_at, is_summary, compacted, "
    "incomplete, covers_from_id, covers_to_id, covers_count, origin, speaker, outcome, "
    "outcome_note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
ARCHIVE_COUNTERS = (
    "UPDATE conversations SET message_count = ?, active_count = ?, chars = ?, "
    "summary_count = ?, last_active_at = ? WHERE id = ?"
)
INSERT_IMPORTED_PIN = (
    "INSERT INTO pinned_facts (owner, conversation_id, content, created_at) VALUES (?, ?, ?, ?)"
)
OWNER_CONVERSATION_IDS = "SELECT id FROM conversations WHERE owner = ?"
DELETE_OWNER_PINS = "DELETE FROM pinned_facts WHERE owner = ?"
DELETE_OWNER_SETTINGS = "DELETE FROM owner_settings WHERE owner = ?"
# Deleting your data must not reset your quota: the last hour's rows stay, detached.
DELETE_OWNER_METRICS = "DELETE FROM turn_metrics WHERE owner = ? AND created_at < ?"
DETACH_OWNER_METRICS = "UPDATE turn_metrics SET conversation_id = NULL WHERE owner = ?"

# -- rows -> records ----------------------------------------------------------------------


def conversation_from_row(row: tuple) -> Conversation:
    return Conversation(*row)


def pinned_from_row(row: tuple) -> PinnedFact:
    return PinnedFact(*row[:_PINNED_WIDTH])


def metrics_from_row(row: tuple) -> MetricsRow:
    return MetricsRow(id=row[0], created_at=row[1], metrics=TurnMetrics(*row[2:]))


# Turn's fields in TURN_COLUMNS order, and which of them SQLite holds as 0/1.
_TURN_FIELDS = TURN_COLUMNS.replace(" ", "").split(",")
_TURN_FLAGS = (5, 6, 10)  # is_summary, compacted, incomplete


def turn_from_row(row: tuple) -> Turn:
    """The Turn of a row of TURN_COLUMNS. A context makes one for each of up to 300 older
    turns: its fields go straight into the frozen dataclass's __dict__, without the
    generated __init__'s fifteen frozen-attribute assignments (each an object.__setattr__)."""
    turn = object.__new__(Turn)
    values = turn.__dict__
    values.update(zip(_TURN_FIELDS, row, strict=False))  # a row may go on past the turn's
    for k in _TURN_FLAGS:
        values[_TURN_FIELDS[k]] = bool(row[k])
    return turn


# -- API tokens (only their SHA-256 is stored) --------------------------------------------

TOKEN_COLUMNS = "id, owner, name, hint, created_at, last_used_at, revoked_at"
COUNT_ACTIVE_TOKENS = "SELECT count(*) FROM api_tokens WHERE owner = ? AND revoked_at IS NULL"
INSERT_TOKEN = (
    f"INSERT INTO api_tokens ({TOKEN_COLUMNS}, token_hash) VALUES (?, ?, ?, ?, ?, NULL, NULL, ?)"
)
LIST_TOKENS = (
    f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE owner = ? "
    "ORDER BY created_at DESC, rowid DESC LIMIT ?"
)
REVOKE_TOKEN = (
    "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND owner = ?"
)
OWNED_TOKEN = f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE id = ? AND owner = ?"
ACTIVE_TOKEN_BY_HASH = (
    f"SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL"
)
TOUCH_TOKEN = "UPDATE api_tokens SET last_used_at = ? WHERE id = ?"
