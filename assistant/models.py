"""What every chat model offers: stream a reply for (system prompt, messages, settings).

A model's `stream()` returns a `ReplyStream`: iterate it for text chunks; once it is exhausted its
`usage` holds the token counts. Keeping usage on the stream (not on the shared model object) keeps
two conversations streaming at once from overwriting each other's counts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol, TypedDict, runtime_checkable

# The storage limit of one message (memory's CHECK constraint); a reply never exceeds it.
MAX_REPLY_CHARS = 10_000


class Message(TypedDict):
    role: str  # "user" | "assistant"
    content: str


@dataclass
class Usage:
    """Token counts of one reply, as reported by the model (None when unknown)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class Settings:
    """Generation settings for one reply."""

    temperature: float | None = None
    max_output_tokens: int | None = None  # None: the model's own default for chat
    max_reply_chars: int = MAX_REPLY_CHARS


class ReplyStream:
    """An async iterator of text chunks that records usage and why the reply ended."""

    def __init__(self, produce: Callable[[ReplyStream], AsyncIterator[str]]) -> None:
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.truncated = False  # cut at max_reply_chars
        self._chunks = produce(self)

    def __aiter__(self) -> ReplyStream:
        return self

    async def __anext__(self) -> str:
        return await self._chunks.__anext__()

    async def aclose(self) -> None:
        """Stop generating (closes the HTTP response / signals the worker thread)."""
        await self._chunks.aclose()  # type: ignore[attr-defined]


@runtime_checkable
class ChatModel(Protocol):
    """A model the chat service can talk to."""

    name: str  # for people: "Gemini 2.5 Flash", "SmolLM2-135M (tiny offline model)"
    model_id: str  # for metrics: "gemini-2.5-flash", "smollm2-135m-instruct-q8"

    def stream(self, system: str, messages: list[Message], settings: Settings) -> ReplyStream:
        """Start streaming a reply; errors surface as AssistantError while iterating."""
        ...


def merge_same_roles(messages: list[Message]) -> list[Message]:
    """Join consecutive messages of one role (e.g. a user turn whose reply failed, then the next
    user turn), since chat templates and APIs expect roles to alternate."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {
                "role": message["role"],
                "content": merged[-1]["content"] + "\n\n" + message["content"],
            }
        else:
            merged.append({"role": message["role"], "content": message["content"]})
    return merged


def clip_reply(text: str, so_far: int, limit: int) -> tuple[str, bool]:
    """Cut a chunk so the reply stays within `limit` characters; returns (chunk, was_cut)."""
    room = limit - so_far
    if len(text) <= room:
        return text, False
    return text[: max(room, 0)], True
