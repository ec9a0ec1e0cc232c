"""Full-text recall: turning text into FTS5 index text and safe FTS5 queries.

The index uses FTS5's `unicode61` tokenizer with Porter stemming, which splits on spaces and
punctuation. Chinese, Japanese and Korean text has no spaces, so before indexing (and in
queries) every run of CJK characters becomes its overlapping bigrams: "拉面店" -> "拉面 面店".
tests/helpers/fts_tokenizer_compare.py measures this against the `trigram` tokenizer.

User text never reaches FTS5 as syntax: a query is rebuilt from the words and bigrams found in
it, each one double-quoted, joined with OR. Operators (`NEAR`, `AND`, `*`, `^`, `:`, quotes)
become plain words or vanish; text with no words gives no query at all.

Two indexes: `turns_fts` (search over an owner's conversations) holds the bigrammed text
with owner and conversation key columns; `recall_fts` (recall within one conversation) holds
`recall_text`: each searchable term prefixed by a short conversation key, so a recall query
reads only that conversation's doclists and its cost does not grow with the database.

The key is made of digits only. FTS5 stems each token whole, key included, and Porter's rules
count vowels and consonants from the token's start: a key with letters changed the stem with
the conversation id ("events" -> "ev" under one key, "event" under another), so recall quality
depended on a random id. To Porter every digit is the same consonant, so every key stems alike.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterator

# Han (incl. extension A and compatibility), kana, Hangul syllables and jamo.
_CJK_CLASS = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
# Python counts a few New Tai Lue and Vedic signs as word characters where FTS5's unicode61
# splits on them; excluding them keeps every query term a single FTS5 token.
_SPLITS = "\u19b0-\u19c0\u19c8\u19c9\u1cf2\u1cf3"
_WORD = re.compile(f"[^\\W_{_CJK_CLASS}{_SPLITS}]+")
MAX_QUERY_TERMS = 32
MAX_QUERY_CHARS = 10_000
# Recall reads a chat message: past a dozen or so informative words it is a pasted document,
# and every extra term is one more doclist to read for little gain in ranking.
MAX_RECALL_TERMS = 16

# Words that carry no memory: question words, fillers, pronouns, "remember"-type verbs.
_STOPWORDS_TEXT = """
a about above after again against all also am an and any are aren as at be because been
before being below between both but by can could did didn do does doing don down during
each few for from further had has have having he her here hers herself him himself his how
i if in into is isn it its itself just know last let me mentioned more most my myself name
named no nor not now of off on once only or other our ours ourselves out over own please
remember remind said same say she should so some such tell than that the their theirs them
themselves then there these they thing things think this those through to told too under
until up us very was wasn we were what when where which while who whom why will with would
you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
# CJK question words and particles, as bigrams, that would otherwise match everywhere.
_CJK_STOP_TEXT = """
什么 什麼 哪里 哪裡 哪天 怎么 怎麼 我们 我們 你们 是什 叫什 在哪 放在 でし です ます すか 何で
"""
CJK_STOP_BIGRAMS = frozenset(_CJK_STOP_TEXT.split())


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def mostly_cjk(text: str) -> bool:
    """Whether most of the letters in `text` are Chinese, Japanese or Korean."""
    cjk = sum(len(m) for m in _CJK_RUN.findall(text))
    other = sum(len(m) for m in _WORD.findall(text))
    return cjk > other


def bigram_text(text: str) -> str:
    """Index text: CJK runs become space-separated overlapping bigrams; the rest is kept."""
    return _CJK_RUN.sub(lambda m: " " + " ".join(_bigrams(m.group())) + " ", text)


def _bigram_terms(text: str) -> Iterator[str]:
    """Every searchable word (lowercased) and CJK bigram of `text`, in order, repeats kept."""
    for m in re.finditer(f"{_WORD.pattern}|{_CJK_RUN.pattern}", text):
        token = m.group()
        if _CJK_RUN.fullmatch(token):
            if len(token) > 1:  # a lone CJK character matches almost everything
                yield from (b for b in _bigrams(token) if b not in CJK_STOP_BIGRAMS)
        else:
            word = token.lower()
            if word not in STOPWORDS and len(word) >= 2:
                yield word


def lone_cjk(text: str) -> list[str]:
    """The CJK characters of `text` that stand alone (a run of one), de-duplicated, in order.

    The index holds CJK text as pairs, so a pair-less query for one character cannot use it;
    recall leaves them out (one character matches almost everything), but a person searching
    for 高 expects every message with 高 in it: the store's search looks them up directly.
    """
    runs = (m.group() for m in _CJK_RUN.finditer(text[:MAX_QUERY_CHARS]))
    return list(dict.fromkeys(run for run in runs if len(run) == 1))[:MAX_QUERY_TERMS]


def searchable_terms(text: str) -> Iterator[str]:
    """What the indexes hold for `text`: every searchable word (lowercased) and CJK bigram, in
    order, repeats kept. Queries are made of the same terms (query_terms)."""
    return _bigram_terms(text)


def is_cjk(term: str) -> bool:
    """True for a CJK term (a bigram of Han, kana or Hangul), False for a word."""
    return _CJK_RUN.fullmatch(term) is not None


def query_terms(text: str, mode: str = "bigram") -> list[str]:
    """The searchable words of `text`, lowercased and de-duplicated, in order of appearance.

    mode "bigram" (the index's tokenization) or "trigram" (for the tokenizer comparison):
    trigram cannot match terms shorter than three characters, so those are dropped there.
    """
    if mode == "bigram":
        return list(dict.fromkeys(_bigram_terms(text)))[:MAX_QUERY_TERMS]
    terms: list[str] = []
    for m in re.finditer(f"{_WORD.pattern}|{_CJK_RUN.pattern}", text):
        token = m.group()
        if _CJK_RUN.fullmatch(token):
            parts = [token[i : i + 3] for i in range(max(1, len(token) - 2))]
            parts = [p for p in parts if len(p) >= 3]
        else:
            word = token.lower()
            parts = [] if word in STOPWORDS or len(word) < 3 else [word]
        for part in parts:
            if part not in terms:
                terms.append(part)
    return terms[:MAX_QUERY_TERMS]


def fts_query(text: str, mode: str = "bigram") -> str | None:
    """A safe FTS5 MATCH expression for user text: quoted terms joined by OR; None if empty."""
    terms = query_terms(text, mode)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def owner_key(owner: str) -> str:
    """The owner as one plain index token (owner ids may hold any characters)."""
    return "o" + hashlib.blake2b(owner.encode(), digest_size=10).hexdigest()


def conversation_key(conv_id: str) -> str:
    return "c" + hashlib.blake2b(conv_id.encode(), digest_size=10).hexdigest()


RECALL_KEY_CHARS = 10
# The SQL name of `recall_text`, which recall_fts's delete trigger calls.
RECALL_TEXT_FUNCTION = "mnemo_recall_text"


def recall_key(conv_id: str) -> str:
    """10 decimal digits (about 33 bits) naming the conversation inside `recall_fts` tokens.

    Digits only, so the key cannot change how Porter stems the word behind it (see the module
    docstring). Two conversations may share a key: that only merges their statistics;
    recall still filters on turns.conversation_id.
    """
    digest = hashlib.blake2b(conv_id.encode(), digest_size=8).digest()
    return f"{int.from_bytes(digest, 'big') % 10**RECALL_KEY_CHARS:0{RECALL_KEY_CHARS}d}"


def recall_text(conv_id: str, content: str) -> str:
    """What `recall_fts` indexes for a turn: its searchable terms, each prefixed by the
    conversation's key, so every conversation has its own doclists (see m005_recall_fts).

    recall_fts is contentless: its delete trigger calls this again to say what to remove.
    Never change what this returns (key, stopwords, tokenization) without a migration that
    rebuilds recall_fts; a mismatch leaves stale entries behind (their turns are gone, so
    recall never returns them, but they take space and skew ranking).
    """
    key = recall_key(conv_id)
    return " ".join(key + term for term in _bigram_terms(content))


def recall_query(conv_id: str, terms: list[str]) -> str:
    """The MATCH expression for `terms` (from query_terms) in one conversation's doclists."""
    key = recall_key(conv_id)
    return " OR ".join('"' + (key + t).replace('"', '""') + '"' for t in terms)


_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "s", "ly", "y", "e")


def _stem(term: str) -> str:
    # Close enough to Porter for showing *why* a turn matched ("cats" -> "cat", "running" ->
    # "runn"); the ranking itself is FTS5's.
    if _CJK_RUN.fullmatch(term):
        return term
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


@functools.lru_cache(maxsize=64)
def term_stems(terms: tuple[str, ...]) -> tuple[str, ...]:
    """What a word starts with to match one of `terms` (as term_pattern and term_matcher
    find them): each word term's stem, lowercased; a CJK term as it is. Cached: recall asks
    for the same few terms throughout a context."""
    return tuple(t if _CJK_RUN.fullmatch(t) else _stem(t).lower() for t in terms)


def term_pattern(terms: list[str]) -> re.Pattern[str] | None:
    """Matches a word starting with any term's stem (whole word marked), or a CJK bigram."""
    parts = []
    for stem in sorted({_stem(t) for t in terms}, key=len, reverse=True):
        if _CJK_RUN.fullmatch(stem):
            parts.append(re.escape(stem))
        else:
            parts.append(r"(?<![^\W_])" + re.escape(stem) + r"[^\W_]*")
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


@functools.lru_cache(maxsize=1024)
def _term_regex(term: str) -> re.Pattern[str]:
    # Recall asks this for every term of every hit, for the same few terms each turn.
    return term_pattern([term])  # type: ignore[return-value]


@functools.lru_cache(maxsize=64)
def terms_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """term_pattern, built once for the same terms: recall clips every long turn it packs
    around the query's terms."""
    return term_pattern(list(terms))


def term_matcher(terms: list[str]) -> Callable[[str], tuple[str, ...]]:
    """matched_terms for many texts and the same terms: a word starting with a term's stem
    (case-insensitive), or a CJK term as it is. Plain substring searches in the lowercased
    text, with the word boundary checked where one is found: recall asks this for every
    chosen hit, and compiling and running a regex per query cost more than the rest of
    packing (measured on bench context_load). Each text is searched once: recall asks again
    for the hits it packs, so one matcher serves a whole context."""
    # Each term with its lowercased stem (None: a CJK term, found as it is), in order. One
    # loop, no call per term: a context asks this for about 100 hits of up to 16 terms.
    plan = [(t, None if _CJK_RUN.fullmatch(t) else _stem(t).lower()) for t in terms]
    found: dict[str, tuple[str, ...]] = {}

    def find(content: str) -> tuple[str, ...]:
        matched = found.get(content)
        if matched is not None:
            return matched
        lowered = content.lower()
        hits = []
        for term, stem in plan:
            if stem is None:
                if term in content:
                    hits.append(term)
                continue
            at = lowered.find(stem)
            # Found inside a word (after a letter, digit or underscore): look further on.
            while at > 0 and (lowered[at - 1].isalnum() or lowered[at - 1] == "_"):
                at = lowered.find(stem, at + 1)
            if at >= 0:
                hits.append(term)
        matched = found[content] = tuple(hits)
        return matched

    return find


def matching_conversations(
    conversations: list, hit_conversation_ids: set[str], terms: list[str], limit: int
) -> list:
    """For a sidebar search: the conversations (newest activity first) that have a matching
    message (`hit_conversation_ids`) or whose title matches `terms`, at most `limit`."""
    pattern = term_pattern(terms)
    return [
        c
        for c in conversations
        if c.id in hit_conversation_ids or (c.title and pattern and pattern.search(c.title))
    ][:limit]


def matched_terms(terms: list[str], content: str) -> tuple[str, ...]:
    """Which of the query `terms` occur in `content` (case-insensitive, by stem)."""
    return tuple(t for t in terms if _term_regex(t).search(content))


def snippet(content: str, terms: list[str], mark: tuple[str, str], width: int = 160) -> str:
    """About `width` characters of `content` around the first match, matches marked."""
    pattern = term_pattern(terms)
    spans = [m.span() for m in pattern.finditer(content)] if pattern else []
    if not spans:
        text = " ".join(content.split())
        return text[:width] + ("…" if len(text) > width else "")
    lo = max(0, spans[0][0] - width // 3)
    hi = min(len(content), lo + width)
    out, pos = [], lo
    for a, b in spans:
        if b > hi:
            break
        out.append(content[pos:a])
        out.append(mark[0] + content[a:b] + mark[1])
        pos = b
    out.append(content[pos:hi])
    body = " ".join("".join(out).split())
    return ("…" if lo > 0 else "") + body + ("…" if hi < len(content) else "")
