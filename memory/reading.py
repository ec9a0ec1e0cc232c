"""Reading from SQLite: a context window (the statements context() runs, then the pure
assembly) and search hits.

One statement (conversation, latest summary, recent turns, keyword hits with their neighbours,
and the conversation's vectors when the question has one) is one snapshot and one trip to the
reader's thread. Turns that only the meaning side found take a second statement — except in a
conversation of at most sql.WHOLE_RECALL_MESSAGES messages, where the statement sends every
older turn instead of the hits' neighbours (fewer rows, and no second trip). Everything
after the rows is memory/context.py's pure assembly.

The question is embedded while that statement runs (the embedder works in a thread of its
own, the statement on the reader's), not before it: on a turn's path the two overlap. A chat
turn starts it earlier still, as soon as the message is known (the store's expect(), then
VectorFiller.ask), so it also overlaps the turn's other reads. Its vector is kept for the
message's append (VectorFiller.keep_fresh): embedded once. When the rows hold nothing older
than the recent window, recall has nothing to find and the context does not wait for that
vector at all: VectorFiller.keep_later gives it to the append when it comes.
"""

from __future__ import annotations

import json

from . import sql
from .connection import Connections
from .context import assemble_context, has_older, missing_candidates, semantic_scores
from .policy import MemoryPolicy
from .recall import MAX_RECALL_TERMS, owner_key, query_terms, recall_query
from .records import ContextWindow
from .renames import NamedScan, name_terms, names_to_check, picks
from .validation import MAX_MESSAGE_CHARS
from .vector_fill import VectorFiller
from .vectors import NO_QUERY_VECTOR, Meaning


async def read_context(
    db: Connections,
    vectors: VectorFiller,
    policy: MemoryPolicy,
    owner: str,
    conv_id: str,
    query: str | None,
    now: float,
) -> ContextWindow:
    """The ContextWindow of `conv_id`, recalling for `query` when given (see the module)."""
    embedder = vectors.embedder
    terms: list[str] = []
    embedding = None
    if query and policy.recall_k:
        terms = query_terms(query[:MAX_MESSAGE_CHARS])[:MAX_RECALL_TERMS]
        embedding = vectors.ask(conv_id, query)  # started by expect(), or now
    params: dict[str, object] = {
        "conv": conv_id,
        "owner": owner,
        "now": now,
        "keep": policy.keep_recent,
        "whole": sql.WHOLE_RECALL_MESSAGES,
    }
    if terms:
        params["match"] = recall_query(conv_id, terms)
        params["hits"] = policy.recall_k
    # The turns' vectors also link a hit to what was said later on its subject, so they are
    # read even when the question itself has no vector (see vectors.Meaning).
    with_vectors = embedder is not None and bool(query) and bool(policy.recall_k)
    if with_vectors:
        params["model"] = embedder.name
    statement = sql.context_sql(bool(terms), with_vectors)
    try:
        rows = await db.read_one(statement, params)
    except BaseException:
        if embedding is not None:
            embedding.cancel()
        raise
    if embedding is not None and not has_older(rows):  # nothing to recall: no vector needed
        try:
            window = assemble_context(rows, policy, terms, query=query or "", now=now)
        except BaseException:  # no such conversation: no append will want the vector
            embedding.cancel()
            raise
        vectors.keep_later(conv_id, query, embedding)
        return window
    asked = await embedding if embedding is not None else NO_QUERY_VECTOR
    vectors.keep_fresh(conv_id, query, asked.own)
    semantic = semantic_scores(rows, asked.recall)
    missing, named = (
        missing_candidates(rows, semantic, policy, terms) if with_vectors else ([], None)
    )
    renames = await _renames(db, named, conv_id, semantic) if named is not None else None
    missing += [i for i in (renames or {}).values() if i not in missing]
    if missing:
        rows += await db.read_one(sql.RECALL_TURNS, {"ids": json.dumps(missing), "conv": conv_id})
    return assemble_context(
        rows, policy, terms, semantic=semantic, query=query or "", now=now, renames=renames
    )


async def _renames(
    db: Connections, named: NamedScan, conv_id: str, semantic: Meaning
) -> dict[int, int]:
    """{hit: the later turn renaming its slot} for `named`'s hits (memory/renames.py): the
    scan, then, when it found new names, one look in the index for where each is first said."""
    scan = sql.later_named(len(named.words))
    params = sql.later_named_params(conv_id, named.after, named.before, named.words)
    cands = named.candidates(await db.read_one(scan, params), semantic.similarity)
    names = names_to_check(cands)
    if not names:
        return {}
    params = {"conv": conv_id}
    params.update({f"m{i}": recall_query(conv_id, name_terms(n)) for i, n in enumerate(names)})
    found = await db.read_one(sql.named_first(len(names)), params)
    return picks(cands, names, {names[i]: at for i, at in found if at is not None})


async def read_search(
    db: Connections, owner: str, terms: list[str], characters: list[str], now: float, limit: int
) -> list[tuple]:
    """Search rows, newest first: full-text hits for `terms`, plus the messages holding any of
    the lone CJK `characters`, which the pair index cannot find (see recall.lone_cjk)."""
    rows: list[tuple] = []
    if terms:
        match = sql.fts_match("owner_key", owner_key(owner), terms)
        rows = await db.read_one(sql.SEARCH, (match, owner, now, limit))
    if characters:
        found = await db.read_one(
            sql.search_characters(len(characters)), (owner, now, *characters, limit)
        )
        rows = sorted({r[0]: r for r in [*rows, *found]}.values(), reverse=True)[:limit]
    return rows
