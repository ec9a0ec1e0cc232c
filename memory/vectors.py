"""Turn embeddings: the `Embedder` protocol memory asks for, and compact vectors.

memory never loads a model: an `Embedder` comes in from outside (assistant/ implements one
with wordllama, and one with Gemini). Vectors are stored as int8 BLOBs, scaled so the
largest component is ±127: 256 dimensions take 256 bytes, and the cosine of two int8
vectors is within about 0.01 of the float one, which ranking turns cannot notice. Everything here is
pure and backend-agnostic: SQLite stores the bytes in a BLOB, PostgreSQL in a bytea.
"""

from __future__ import annotations

import logging
import re
from collections.abc import ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .recall import STOPWORDS, mostly_cjk

log = logging.getLogger(__name__)

_SCALE = 127.0
EMBED_BATCH = 256  # texts per embedder call (an import embeds many)
# "Anna: ..." at the start of a message: static embeddings are dominated by names, and a
# speaker's own name says nothing about what the message means.
_SPEAKER = re.compile(r"^\s*[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}:\s+")
MAX_EMBED_CHARS = 2_000
# The conversation's mean vector counts as if it had this many more (zero) vectors: a few turns
# are too few to say what all of its turns share.
CENTRE_SHRINK = 10  # a static model averages tokens: more text only blurs it


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed size. `name` says which model made them:
    vectors of different names are never compared. An embedder may also say
    `knows_cjk = False`: then a question mostly in Chinese, Japanese or Korean is recalled by
    its characters alone; and `averages_tokens = True` (a static model: a text's vector is
    the mean of its tokens'): then a question is embedded without its function words
    (query_embedding_text)."""

    name: str
    dims: int

    async def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector per text, in order. May raise; memory then goes on without vectors."""
        ...


def embedding_text(content: str) -> str:
    """What is embedded for a turn: its text without a leading speaker's name, capped."""
    return _SPEAKER.sub("", content, count=1)[:MAX_EMBED_CHARS]


# Recall's stopwords, less the ones that say when: "now" asks for the newer of two facts.
_FUNCTION_WORDS = STOPWORDS - {"now", "last", "before", "after", "again", "once"}
_QUERY_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# Chinese has no spaces to find words by: its question words, pronouns and particles are
# taken out of a CJK run as they are (longest first, so 哪些 goes whole, not 哪 then 些).
_CJK_FUNCTION_WORDS = re.compile(
    "為什麼|为什么|什麼|什么|哪一種|哪一种|哪些|哪個|哪个|哪裡|哪里|哪種|哪种|哪位|哪家|哪天|"
    "怎麼|怎么|多少|我們|我们|你們|你们|他們|他们|她們|她们|哪|誰|谁|我|你|他|她|的|了|嗎|吗|呢|吧|啊|是"
)


def query_embedding_text(query: str) -> str:
    """A question's content words: without its function words ("What's my hometown?" ->
    "hometown"; "我平常做哪些運動？" -> "平常做運動"), or the question as it is when nothing
    else is left. A question is short, so "what", "my", "do", "I" are much of its vector and
    pull it towards every chatty turn; a stored turn is longer and keeps its words. Under a
    static model the question is embedded as this alone (measured on bench long_memory: the
    evidence turn of a paraphrase ranked in the top 20 by meaning for 25 of 32 questions
    instead of 22, a list item for 106 of 138 instead of 93; stripping the turns too gained
    nothing); under one that reads the whole sentence, as well as the question (query_texts).
    """
    words = []
    for w in _QUERY_WORD.findall(query):
        if _plain(w) in _FUNCTION_WORDS:
            continue
        w = _CJK_FUNCTION_WORDS.sub("", w) if mostly_cjk(w) else w
        if w:
            words.append(w)
    return " ".join(words) if words else query


def _plain(word: str) -> str:
    # "What's" -> "what": a clitic does not make a function word a content word.
    return re.split(r"['’]", word.lower(), maxsplit=1)[0]


def query_texts(embedder: Embedder | None, query: str) -> list[str]:
    """What is embedded for the new message `query` to recall by: its content words alone
    under a static model (`averages_tokens`); else the message and, when they differ, its
    content words, whose vectors recall averages (memory/vectors.embed_query)."""
    content = query_embedding_text(query)
    if getattr(embedder, "averages_tokens", False):
        return [content]
    return [query] if content == query.strip() else [query, content]


def pack(vector: Sequence[float] | np.ndarray) -> bytes | None:
    """A vector's direction as int8 bytes; None for a zero or non-finite vector."""
    v = np.asarray(vector, dtype=np.float32).ravel()
    peak = float(np.max(np.abs(v))) if v.size else 0.0
    if not np.isfinite(peak) or peak == 0.0 or not np.all(np.isfinite(v)):
        return None
    return np.round(v / peak * _SCALE).astype(np.int8).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    """The unit vector (approximately) that `pack` stored."""
    v = np.frombuffer(blob, dtype=np.int8).astype(np.float32)
    return v / float(np.linalg.norm(v))


def unpack_many(blobs: Sequence[bytes]) -> np.ndarray:
    """The unit vectors of `blobs` (all of one size) as the rows of one matrix."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    m = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(blobs), -1).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def cosines(query: bytes, blobs: Sequence[bytes]) -> np.ndarray:
    """Cosine similarity of the packed `query` with each packed vector, in order.

    Vectors of another size (written by a different embedder) score 0.
    """
    if not blobs:
        return np.zeros(0, dtype=np.float32)
    q = unpack(query)
    same = [i for i, b in enumerate(blobs) if len(b) == len(query)]
    out = np.zeros(len(blobs), dtype=np.float32)
    if same:
        joined = b"".join(blobs[i] for i in same) if len(same) < len(blobs) else b"".join(blobs)
        m = np.frombuffer(joined, dtype=np.int8).reshape(len(same), len(query))
        m = m.astype(np.float32)
        out[same] = (m @ q) / np.linalg.norm(m, axis=1)
    return out


def centred_matrix(query: bytes, blobs: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(unit rows, unit query) after removing what the conversation's turns have in common.

    A static embedding averages token vectors, so every chat message shares a large common
    direction (function words, "I", the chat register): raw cosines are dominated by it and
    rank a question close to any chatty turn. Subtracting the mean of the conversation's
    vectors from the query and each turn (the common-component removal of SIF embeddings)
    leaves what a turn says that others do not. The mean is shrunk towards zero for small
    conversations, where it would be mostly the turns themselves. Rows of vectors of another
    size are zero.
    """
    dims = len(query)
    same = [i for i, b in enumerate(blobs) if len(b) == dims]
    if not same:
        return np.zeros((len(blobs), dims), dtype=np.float32), unpack(query)
    whole = len(same) == len(blobs)  # the usual case: one model's vectors, no copy needed
    joined = b"".join(blobs) if whole else b"".join(blobs[i] for i in same)
    part = np.frombuffer(joined, dtype=np.int8).reshape(len(same), dims).astype(np.float32)
    part /= _row_norms(part)
    mean = part.sum(axis=0) / (len(same) + CENTRE_SHRINK)
    part -= mean
    part /= np.maximum(_row_norms(part), 1e-6)
    if whole:
        m = part
    else:
        m = np.zeros((len(blobs), dims), dtype=np.float32)
        m[same] = part
    q = unpack(query) - mean
    return m, q / max(float(np.linalg.norm(q)), 1e-6)


def _row_norms(m: np.ndarray) -> np.ndarray:
    # einsum reads the matrix once; np.linalg.norm squares it into a temporary first.
    return np.sqrt(np.einsum("ij,ij->i", m, m))[:, None]


def centred_cosines(query: bytes, blobs: Sequence[bytes]) -> np.ndarray:
    """The cosine of `query` with each vector, centred (centred_matrix); another size: 0."""
    m, q = centred_matrix(query, blobs)
    return m @ q


class Meaning(Mapping[int, float]):
    """The new message's centred cosine with each older turn, by turn id (a read-only
    mapping), keeping the centred vectors so recall can also ask which later turn is most
    like a given one (`later_like`)."""

    def __init__(self, ids: Sequence[int], query: bytes | None, blobs: Sequence[bytes]) -> None:
        order = sorted(range(len(ids)), key=lambda k: ids[k])  # turn ids run in time order
        self._ids = [ids[k] for k in order]
        self._row = {t: k for k, t in enumerate(self._ids)}
        self._scores: dict[int, float] = {}
        self._later: dict[tuple[int, float, float], int | None] = {}
        if not blobs:
            self._matrix = np.zeros((len(ids), 0), dtype=np.float32)
            return
        # Without a query vector (a language the embedder does not know) the turns' own
        # vectors still tell which later turn repeats an earlier one's words.
        self._matrix, q = centred_matrix(query or blobs[order[-1]], [blobs[k] for k in order])
        if query is not None:
            self._scores = dict(zip(self._ids, (self._matrix @ q).tolist(), strict=True))

    @property
    def ids(self) -> list[int]:
        """Every turn with a vector (oldest first), a cosine with the query or not."""
        return self._ids

    def __getitem__(self, tid: int) -> float:
        return self._scores[tid]

    def __iter__(self) -> Iterator[int]:
        return iter(self._scores)

    def __len__(self) -> int:
        return len(self._scores)

    # The dict's own views and lookups: Mapping's mixins go through __getitem__ one key at a
    # time, and recall walks these cosines several times per context.
    def __contains__(self, tid: object) -> bool:
        return tid in self._scores

    def get(self, tid: int, default: float | None = None) -> float | None:  # type: ignore[override]
        return self._scores.get(tid, default)

    def keys(self) -> KeysView[int]:
        return self._scores.keys()

    def values(self) -> ValuesView[float]:
        return self._scores.values()

    def items(self) -> ItemsView[int, float]:
        return self._scores.items()

    def distinct(self, ranked: Sequence[int], n: int, ceiling: float) -> list[int]:
        """The first `n` of `ranked` that do not repeat an earlier one (centred cosine at
        least `ceiling`): the same message said twice is one hit."""
        out: list[int] = []
        dims = self._matrix.shape[1]
        # The vectors of those taken, as the rows of one matrix: one product per candidate.
        taken = np.empty((min(n, len(ranked)), dims), dtype=np.float32)
        count = 0
        for tid in ranked:
            if len(out) >= n:
                break
            k = self._row.get(tid) if dims else None
            if k is None:
                out.append(tid)
                continue
            v = self._matrix[k]
            if count and float((taken[:count] @ v).max()) >= ceiling:
                continue
            out.append(tid)
            taken[count] = v
            count += 1
        return out

    def similarity(self, a: int, b: int) -> float | None:
        """The centred cosine of turns `a` and `b`; None when either has no vector."""
        ka, kb = self._row.get(a), self._row.get(b)
        if ka is None or kb is None or not self._matrix.shape[1]:
            return None
        return float(self._matrix[ka] @ self._matrix[kb])

    def later_like(self, tid: int, floor: float, ceiling: float) -> int | None:
        """The turn after `tid` whose centred cosine with it is highest, within [floor,
        ceiling) (above the ceiling it only says the same again); None when none is."""
        key = (tid, floor, ceiling)
        if key not in self._later:  # asked again when the context is assembled
            self._later[key] = self._later_like(tid, floor, ceiling)
        return self._later[key]

    def _later_like(self, tid: int, floor: float, ceiling: float) -> int | None:
        k = self._row.get(tid)
        if k is None or k + 1 >= len(self._ids) or not self._matrix.shape[1]:
            return None
        sims = self._matrix[k + 1 :] @ self._matrix[k]
        sims[sims >= ceiling] = -np.inf
        best = int(sims.argmax())
        return self._ids[k + 1 + best] if sims[best] >= floor else None


async def embed_packed(embedder: Embedder | None, texts: Sequence[str]) -> list[bytes | None]:
    """Packed vectors for `texts`; Nones without an embedder or when it fails (logged: the
    messages are saved all the same and recall finds them by their words)."""
    if embedder is None or not texts:
        return [None] * len(texts)
    out: list[bytes | None] = []
    for i in range(0, len(texts), EMBED_BATCH):
        batch = [embedding_text(t) for t in texts[i : i + EMBED_BATCH]]
        try:
            vectors = await embedder.embed(batch)
            if len(vectors) != len(batch):
                raise ValueError(f"{len(vectors)} vectors for {len(batch)} texts")
            out += [pack(v) for v in vectors]
        except Exception:
            log.warning("Embedder %s failed; saving without vectors", embedder.name, exc_info=True)
            out += [None] * len(batch)
    return out


@dataclass(frozen=True)
class QueryVector:
    """The new message's vectors: `recall`, what older turns are compared with, and `own`,
    the message's vector as a stored turn gets it (None when the embedder stores it another
    way: a static model's recall vector is of the content words only)."""

    recall: bytes | None
    own: bytes | None


NO_QUERY_VECTOR = QueryVector(None, None)


async def embed_query(embedder: Embedder | None, query: str) -> QueryVector:
    """The vectors recall compares turns with, for the new message `query` (query_texts),
    all from one embedder call: None without an embedder, when it fails, or for a question
    mostly in Chinese, Japanese or Korean when the embedder does not know them (its vector
    would be noise: recall then goes by the characters alone).

    A sentence model gets the message and its content words, and recall takes the mean of
    the two (unit) vectors: the whole question keeps what its wording says, the content words
    alone are not pulled towards every chatty turn by "what do I ..." (on bench long_memory
    the items of a Chinese list question, 我平常做哪些運動？ against 買了新的桌球鞋, ranked in
    the top 20 by meaning 20 of 42 times for the question, 23 for the mean; English list items
    111 -> 127 of 138, paraphrases 28 -> 31 of 32)."""
    if not getattr(embedder, "knows_cjk", True) and mostly_cjk(query):
        return NO_QUERY_VECTOR
    texts = query_texts(embedder, query)
    vectors = await embed_packed(embedder, texts)
    if any(v is None for v in vectors):
        return NO_QUERY_VECTOR
    if getattr(embedder, "averages_tokens", False):
        return QueryVector(vectors[0], None)
    if len(vectors) == 1:
        return QueryVector(vectors[0], vectors[0])
    mean = pack(sum(unpack(v) for v in vectors))
    return QueryVector(mean or vectors[0], vectors[0])
