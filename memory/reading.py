"""Reading a context window from SQLite: the statements context() runs, then the pure assembly.

One statement (conversation, latest summary, recent turns, keyword hits with their neighbours,
and the conversation's vectors when the question has one) is one snapshot and one trip to the
reader's thread. Turns that only the meaning side found take a second statement. Everything
after the rows is memory/context.py's pure assembly.
"""

from __future__ import annotations

import json

from . import sql
from .connection import Connections
from .context import assemble_context, missing_candidates, semantic_scores
from .policy import MemoryPolicy
from .recall import MAX_RECALL_TERMS, mostly_cjk, query_terms, recall_query
from .records import ContextWindow
from .validation import MAX_MESSAGE_CHARS
from .vectors import Embedder, embed_packed


async def read_context(
    db: Connections,
    embedder: Embedder | None,
    policy: MemoryPolicy,
    owner: str,
    conv_id: str,
    query: str | None,
    now: float,
) -> ContextWindow:
    """The ContextWindow of `conv_id`, recalling for `query` when given (see the module)."""
    terms: list[str] = []
    query_vector = None
    if query and policy.recall_k:
        terms = query_terms(query[:MAX_MESSAGE_CHARS])[:MAX_RECALL_TERMS]
        # A model that does not know CJK gives such a question a vector that is noise;
        # recall then goes by its characters alone.
        if getattr(embedder, "knows_cjk", True) or not mostly_cjk(query):
            (query_vector,) = await embed_packed(embedder, [query])
    params: dict[str, object] = {
        "conv": conv_id,
        "owner": owner,
        "now": now,
        "keep": policy.keep_recent,
    }
    if terms:
        params["match"] = recall_query(conv_id, terms)
        params["hits"] = policy.recall_k
    if query_vector is not None and embedder is not None:
        params["model"] = embedder.name
    statement = sql.context_sql(bool(terms), query_vector is not None)
    rows = await db.read_one(statement, params)
    semantic = semantic_scores(rows, query_vector)
    missing = missing_candidates(rows, semantic, policy) if semantic else []
    if missing:
        rows += await db.read_one(sql.RECALL_TURNS, {"ids": json.dumps(missing), "conv": conv_id})
    return assemble_context(rows, policy, terms, semantic=semantic, query=query or "", now=now)
