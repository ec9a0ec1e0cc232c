"""What PostgreSQL indexes for a turn, and the queries that find it.

The terms are the SQLite index's (memory/recall.py): words lowercased, stopwords and one-letter
words left out, CJK runs split into overlapping bigrams. So both backends find the same turns.

- Words go into a `tsvector` built here as a literal (`'lexeme':positions`) rather than by
  `to_tsvector`: PostgreSQL's parser would split "3.14" or "e-mail" its own way and depend on the
  server's locale. Diacritics are folded on both sides ("Reykjavík" finds "reykjavik"), as
  FTS5's `remove_diacritics` does. The statement that writes the literal stems it on the server
  (`mnemo_stem()`, migration m010: Snowball's Porter, no stop words), and a query's words, a
  `tsvector` literal too, become the OR of their stems (`mnemo_query()`): "hiking" finds "hike",
  as with FTS5's `porter` tokenizer on SQLite.
- CJK bigrams go into `cjk` as space-separated words (" 拉面 面店 "), indexed by pg_trgm. A
  query bigram becomes `cjk LIKE '% 拉面 %'`: the spaces make it a whole word, so pg_trgm has
  padded trigrams to look up in its index, and a bigram never matches across two words.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict

from ..errors import InvalidInput
from ..recall import MAX_QUERY_TERMS, is_cjk, searchable_terms

# PostgreSQL refuses lexemes over 2,047 bytes, keeps at most 256 positions per lexeme, and
# positions above 16,383.
MAX_LEXEME_BYTES = 2_047
MAX_POSITIONS = 256
MAX_POSITION = 16_383


def fold(word: str) -> str:
    """`word` without diacritics: "reykjavík" -> "reykjavik"."""
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize(
        "NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    )


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def index_words(content: str) -> str:
    """The `tsvector` literal for a turn's words, with positions (for ts_rank)."""
    positions: dict[str, list[int]] = defaultdict(list)
    for pos, term in enumerate(searchable_terms(content), start=1):
        if is_cjk(term):
            continue
        word = fold(term)
        if len(word.encode()) <= MAX_LEXEME_BYTES and len(positions[word]) < MAX_POSITIONS:
            positions[word].append(min(pos, MAX_POSITION))
    return " ".join(
        _quote(word) + ":" + ",".join(map(str, sorted(set(p)))) for word, p in positions.items()
    )


def index_cjk(content: str) -> str | None:
    """The turn's CJK bigrams as space-separated words, or None when it has none."""
    bigrams = dict.fromkeys(t for t in searchable_terms(content) if is_cjk(t))
    return " " + " ".join(bigrams) + " " if bigrams else None


def word_query(terms: list[str]) -> str | None:
    """The word terms (from query_terms) as a `tsvector` literal, unstemmed: the SQL's
    `mnemo_query()` makes it the OR of their stems. None if there are none."""
    words = dict.fromkeys(
        fold(t) for t in terms[:MAX_QUERY_TERMS] if not is_cjk(t)
    )  # folding can merge two
    words = [w for w in words if len(w.encode()) <= MAX_LEXEME_BYTES]
    return " ".join(_quote(w) for w in words) or None


def cjk_patterns(terms: list[str]) -> list[str]:
    """LIKE patterns over `cjk`, one per CJK bigram in `terms`."""
    return [f"% {t} %" for t in terms[:MAX_QUERY_TERMS] if is_cjk(t)]


def check_text(*values: str | None) -> None:
    """PostgreSQL's text cannot hold NUL: refuse it with advice instead of a driver error."""
    if any(v is not None and "\x00" in v for v in values):
        raise InvalidInput("The text contains a NUL character (\\x00); remove it and try again.")
