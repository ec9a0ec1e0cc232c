"""Gemini through google-genai: async streaming with a system instruction and usage counts.

SDK and transport errors are turned into `AssistantError`s here, at the boundary, with messages
that say what to do next. The SDK's own retries are left off (one attempt): the user has a Retry
button, and a stuck retry loop would only delay an error they can act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import re
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from .errors import (
    AssistantError,
    BlockedBySafety,
    InvalidKey,
    InvalidRequest,
    ModelUnavailable,
    RateLimited,
)
from .models import Message, ReplyStream, Settings, clip_reply, merge_same_roles
from .tools import Toolbox, ToolCall

DEFAULT_MODEL = "gemini-2.5-flash"
# ~4 characters per token in English: 2,500 tokens stay under the 10,000-character storage
# limit; text in scripts with fewer characters per token ends far below it. Replies are also
# clipped by characters, so this only keeps the model from writing what we would throw away.
DEFAULT_MAX_OUTPUT_TOKENS = 2_500
THINKING_HEADROOM = 8_192
TIMEOUT_MS = 120_000
MAX_TOOL_ROUNDS = 3  # function-call rounds in one reply; then the model must answer
KEY_HELP = "Set GEMINI_API_KEY (or GOOGLE_API_KEY); get a key at https://aistudio.google.com/apikey"

_SAFETY_REASONS = {
    "SAFETY",
    "PROHIBITED_CONTENT",
    "BLOCKLIST",
    "SPII",
    "IMAGE_SAFETY",
    "JAILBREAK",
    "MODEL_ARMOR",
    "RECITATION",
}


def _transports() -> list[ModuleType]:
    # google-genai uses httpx2 (a fork of httpx under another name) when it is installed, else
    # httpx: errors may come from either.
    found = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            continue
    return found


_HTTP_ERRORS: tuple[type[Exception], ...] = tuple(m.HTTPError for m in _transports())
_CONNECT_ERRORS: tuple[type[Exception], ...] = tuple(m.ConnectError for m in _transports())
_TIMEOUT_ERRORS: tuple[type[Exception], ...] = tuple(m.TimeoutException for m in _transports())
_SDK_ERRORS = (genai_errors.APIError, genai_errors.UnknownApiResponseError, *_HTTP_ERRORS)


def display_name(model_id: str) -> str:
    """'gemini-2.5-flash' -> 'Gemini 2.5 Flash' (unknown shapes are returned as given)."""
    bare = model_id.removeprefix("models/")
    if not bare.startswith("gemini-"):
        return bare
    words = [w if re.fullmatch(r"[\d.]+", w) else w.capitalize() for w in bare.split("-")]
    return " ".join(words)


def to_contents(messages: list[Message]) -> list[types.Content]:
    """Our messages -> Gemini contents (assistant -> model), same-role neighbours joined."""
    return [
        types.Content(
            role="model" if m["role"] == "assistant" else "user",
            parts=[types.Part(text=m["content"])],
        )
        for m in merge_same_roles(messages)
    ]


class GeminiModel:
    """A Gemini model behind google-genai's async client."""

    supports_tools = True

    def __init__(
        self,
        api_key: str,
        model: str = DEFAULT_MODEL,
        *,
        base_url: str | None = None,
        timeout_ms: int = TIMEOUT_MS,
    ) -> None:
        self.model_id = model
        self.name = display_name(model)
        self.base_url = base_url
        http_options = types.HttpOptions(base_url=base_url, timeout=timeout_ms)
        self._client = genai.Client(api_key=api_key, http_options=http_options)

    def __repr__(self) -> str:
        return f"GeminiModel({self.model_id!r})"

    def _config(
        self,
        system: str | None,
        temperature: float | None,
        max_output_tokens: int,
        tools: list[dict[str, Any]] | None = None,
    ) -> types.GenerateContentConfig:
        # Thinking tokens count against max_output_tokens and delay the first token. A chat
        # reply does not need them, but only 2.5 Flash models accept a budget of 0; other models
        # think as they like and get headroom so the visible reply is not starved.
        thinking = None
        if self.model_id.removeprefix("models/").startswith("gemini-2.5-flash"):
            thinking = types.ThinkingConfig(thinking_budget=0)
        else:
            max_output_tokens += THINKING_HEADROOM
        declared = None
        if tools:
            declared = [
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=d["name"],
                            description=d["description"],
                            parameters_json_schema=d["parameters"],
                        )
                        for d in tools
                    ]
                )
            ]
        return types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=temperature,
            max_output_tokens=max_output_tokens,
            thinking_config=thinking,
            tools=declared,
            # We run the function calls ourselves (chat.py stores a note of each): the SDK's
            # client-side function-calling loop stays off.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    def stream(
        self,
        system: str,
        messages: list[Message],
        settings: Settings,
        tools: Toolbox | None = None,
    ) -> ReplyStream:
        """Stream a reply; see ReplyStream. With `tools`, the model may call them: each call
        is run, yielded as a ToolCall between the text chunks, and its result sent back."""
        return ReplyStream(lambda reply: self._produce(reply, system, messages, settings, tools))

    async def _produce(
        self,
        reply: ReplyStream,
        system: str,
        messages: list[Message],
        settings: Settings,
        tools: Toolbox | None,
    ) -> AsyncIterator[str | ToolCall]:
        max_tokens = settings.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        declared = tools.declarations() if tools is not None else None
        contents = to_contents(messages)
        sent = 0
        earlier = (0, 0)  # tokens of the finished rounds: a tool turn costs all of them
        for round_ in range(MAX_TOOL_ROUNDS + 1):
            # The last round offers no tools, so the model has to answer in words.
            offer = declared if round_ < MAX_TOOL_ROUNDS else None
            config = self._config(system, settings.temperature, max_tokens, offer)
            model_parts: list[types.Part] = []
            calls: list[types.FunctionCall] = []
            async for response in self._responses(contents, config):
                _raise_if_blocked(response)
                usage = _round_usage(response)
                if usage is not None:  # the last count of a round is the round's total
                    reply.usage.input_tokens = earlier[0] + usage[0]
                    reply.usage.output_tokens = earlier[1] + usage[1]
                if response.candidates and response.candidates[0].finish_reason:
                    reply.finish_reason = str(response.candidates[0].finish_reason.value)
                for part in _parts_of(response):
                    if part.function_call is not None:
                        calls.append(part.function_call)
                        model_parts.append(part)  # replayed whole: it may carry a signature
                text, cut = clip_reply(_text_of(response), sent, settings.max_reply_chars)
                if text:
                    model_parts.append(types.Part(text=text))
                    sent += len(text)
                    yield text
                if cut:
                    reply.truncated = True
                    reply.finish_reason = "MAX_CHARS"
                    return
            if not calls or tools is None:
                return
            earlier = (reply.usage.input_tokens or 0, reply.usage.output_tokens or 0)
            answers = []
            for call in calls:
                done = await tools.call(call.name or "", dict(call.args or {}))
                yield done
                answers.append(
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=call.id, name=call.name, response=done.result
                        )
                    )
                )
            contents.append(types.Content(role="model", parts=model_parts))
            contents.append(types.Content(role="user", parts=answers))

    async def _responses(
        self, contents: list[types.Content], config: types.GenerateContentConfig
    ) -> AsyncIterator[types.GenerateContentResponse]:
        """One streamed generateContent call's responses, SDK errors mapped to ours."""
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        async def pump() -> None:
            # The SDK's stream is a chain of nested async generators that do not close their
            # inner ones. Reading it in its own task means stopping is a plain cancel that
            # unwinds the whole chain (and closes the HTTP response) in order, instead of
            # leaving half-read generators to the garbage collector.
            try:
                responses = await self._client.aio.models.generate_content_stream(
                    model=self.model_id, contents=contents, config=config
                )
                async for response in responses:
                    queue.put_nowait(("response", response))
            except Exception as exc:
                queue.put_nowait(("error", exc))
            else:
                queue.put_nowait(("end", None))

        reader = asyncio.get_running_loop().create_task(pump())
        try:
            while True:
                kind, value = await queue.get()
                if kind == "end":
                    return
                if kind == "error":
                    if isinstance(value, _SDK_ERRORS):
                        raise self.error_for(value) from value
                    raise value
                yield value
        finally:
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader

    async def complete(
        self,
        system: str | None,
        prompt: str,
        *,
        temperature: float | None = 0.2,
        max_output_tokens: int = 1_500,
    ) -> str:
        """One non-streamed answer (used by the summarizer)."""
        try:
            response = await self._client.aio.models.generate_content(
                model=self.model_id,
                contents=prompt,
                config=self._config(system, temperature, max_output_tokens),
            )
        except _SDK_ERRORS as exc:
            raise self.error_for(exc) from exc
        _raise_if_blocked(response)
        return _text_of(response)

    async def count_tokens(self, messages: list[Message]) -> int:
        """Tokens Gemini counts for these messages (the system instruction is not accepted by
        countTokens on the Developer API, so it is not included)."""
        try:
            result = await self._client.aio.models.count_tokens(
                model=self.model_id, contents=to_contents(messages)
            )
        except _SDK_ERRORS as exc:
            raise self.error_for(exc) from exc
        return result.total_tokens or 0

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    def error_for(self, exc: Exception) -> AssistantError:
        """Map an SDK or transport error to ours, with a message that says what to do."""
        if isinstance(exc, genai_errors.APIError):
            code = exc.code or 0
            detail = (exc.message or exc.status or "").strip()
            if code == 429:
                wait = _retry_delay(exc.details)
                return RateLimited(
                    "Gemini is rate-limiting requests (429: too many requests or the key's quota "
                    "is used up). "
                    + (f"Retry in {wait}." if wait else "Wait a minute, then retry.")
                )
            if code in (401, 403) or (code == 400 and "api key" in detail.lower()):
                return InvalidKey(
                    f"Gemini rejected the API key ({code}: {detail}). {KEY_HELP}, then restart."
                )
            if code == 404:
                return InvalidRequest(
                    f"Gemini has no model '{self.model_id}' ({detail}). Set GEMINI_MODEL to an "
                    f"available model such as {DEFAULT_MODEL}."
                )
            if 400 <= code < 500:
                return InvalidRequest(f"Gemini refused the request ({code}: {detail}).")
            return ModelUnavailable(
                f"Gemini is having trouble right now ({code} {exc.status or ''}). "
                "Retry in a moment."
            )
        if isinstance(exc, _CONNECT_ERRORS):
            where = self.base_url or "generativelanguage.googleapis.com"
            return ModelUnavailable(
                f"Could not reach Gemini at {where}. Check the network connection "
                "(or GEMINI_BASE_URL), then retry."
            )
        if isinstance(exc, _TIMEOUT_ERRORS):
            return ModelUnavailable("Gemini took too long to answer. Retry in a moment.")
        if isinstance(exc, _HTTP_ERRORS):
            return ModelUnavailable(
                "The connection to Gemini broke off mid-reply; what arrived is kept. "
                "Retry for a complete answer."
            )
        return ModelUnavailable(f"Gemini sent a response that could not be read ({exc}). Retry.")


def _retry_delay(details: object) -> str | None:
    """The server's suggested wait from a 429's google.rpc.RetryInfo ("36s"), if any."""
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details") or []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            delay = item.get("retryDelay")
            if isinstance(delay, str) and re.fullmatch(r"\d+(\.\d+)?s", delay):
                return f"{round(float(delay[:-1]))} seconds"
    return None


def _parts_of(response: types.GenerateContentResponse) -> list[types.Part]:
    if not response.candidates or not response.candidates[0].content:
        return []
    return list(response.candidates[0].content.parts or [])


def _text_of(response: types.GenerateContentResponse) -> str:
    return "".join(p.text for p in _parts_of(response) if p.text and not p.thought)


def _round_usage(response: types.GenerateContentResponse) -> tuple[int, int] | None:
    meta = response.usage_metadata
    if meta is None:
        return None
    return meta.prompt_token_count or 0, meta.candidates_token_count or 0


def _raise_if_blocked(response: types.GenerateContentResponse) -> None:
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason:
        reason = str(feedback.block_reason.value)
        raise BlockedBySafety(
            f"Gemini's safety filters blocked this message ({reason}). Rephrase it and try again."
        )
    if response.candidates:
        finish = response.candidates[0].finish_reason
        if finish is not None and str(finish.value) in _SAFETY_REASONS:
            raise BlockedBySafety(
                f"Gemini stopped the reply for safety reasons ({finish.value}). "
                "Rephrase the message and try again."
            )
