"""Tools the model may call during a chat turn, and the notes they leave in the history.

    remember(fact, about_me=False)  pins a fact the user asked to remember (the memory panel
                                    lists it; "about me" only when the user turned that on)
    search_memory(query)            the user's other conversations, the sidebar's search
    today()                         date and time in the user's time zone

A `Toolbox` serves one turn of one owner and conversation: the model client sends its
`declarations()` (Gemini function calling; the offline model has none) and runs `call()` for
each function call. Every call returns a `ToolCall`: the result the model reads, and a short
`note` (name, key arguments, status) that the chat turn stores on the user's side of the
history, so later turns and summaries know what was looked up. A tool never raises: a failure
is a result with status "error" the model can explain.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memory import MemoryStoreError

log = logging.getLogger(__name__)

NOTE_PREFIX = "Tool note: "
ARG_CHARS = 80  # an argument as it appears in a note
SEARCH_HITS = 5

# (owner, query, conversation to leave out) -> hits as {"conversation", "role", "snippet", "date"}
Search = Callable[[str, str, str | None], Awaitable[list[dict[str, str]]]]


@dataclass(frozen=True)
class ToolCall:
    """One tool call: what the model asked, what it got back, and the note for the history."""

    name: str
    args: dict[str, Any]
    status: Literal["ok", "error"]
    result: dict[str, Any]
    note: str  # stored as a user-side turn: never replayed as the assistant's words


DECLARATIONS: list[dict[str, Any]] = [
    {
        "name": "remember",
        "description": (
            "Pin a fact the user explicitly asked you to remember, so it stays in your memory "
            "of this conversation. Only call it when the user asks you to remember something."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "fact": {"type": "string", "description": "The fact, in a short sentence."},
                "about_me": {
                    "type": "boolean",
                    "description": "True when it is about the user and should reach all "
                    "their conversations.",
                },
            },
            "required": ["fact"],
        },
    },
    {
        "name": "search_memory",
        "description": (
            "Search the user's other conversations for words, when they refer to something "
            "said in another chat. (What matters from this chat is already in your memory.)"
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to look for."}},
            "required": ["query"],
        },
    },
    {
        "name": "today",
        "description": "The current date, weekday and time in the user's time zone.",
        "parameters": {"type": "object", "properties": {}},
    },
]


def note_for(name: str, args: dict[str, Any], status: str, outcome: str) -> str:
    """`Tool note: search_memory(query="Kestrel") → ok, 2 matches`: name, key args, status."""
    shown = ", ".join(f"{k}={_short(v)}" for k, v in args.items() if v not in (None, False, ""))
    return f"{NOTE_PREFIX}{name}({shown}) → {status}, {outcome}"


def _short(value: Any) -> str:
    text = " ".join(str(value).split())
    if len(text) > ARG_CHARS:
        text = text[: ARG_CHARS - 1] + "…"
    return f'"{text}"' if isinstance(value, str) else text


def zone_of(name: str | None) -> ZoneInfo:
    """The IANA zone `name`, or UTC when it is missing or unknown."""
    try:
        return ZoneInfo(name) if name else ZoneInfo("UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


@dataclass
class Toolbox:
    """The tools of one turn, bound to its owner and conversation."""

    store: Any  # the memory store (MemoryBackend)
    owner: str
    conv_id: str
    search: Search
    clock: Callable[[], float]
    calls: list[ToolCall] = field(default_factory=list)

    def declarations(self) -> list[dict[str, Any]]:
        return DECLARATIONS

    async def call(self, name: str, args: dict[str, Any] | None) -> ToolCall:
        """Run one function call; never raises (an unknown tool or bad argument is an error
        result the model reads)."""
        args = dict(args or {})
        handler = _HANDLERS.get(name)
        if handler is None:
            call = self._error(name, args, f"there is no tool named {name!r}")
        else:
            try:
                call = await handler(self, args)
            except MemoryStoreError as exc:
                call = self._error(name, args, str(exc))
            except Exception as exc:  # a tool bug must not kill the turn; the model says so
                log.warning("tool %s failed: %s", name, type(exc).__name__, exc_info=True)
                call = self._error(name, args, "the tool failed unexpectedly")
        self.calls.append(call)
        return call

    def _error(self, name: str, args: dict[str, Any], message: str) -> ToolCall:
        return ToolCall(
            name, args, "error", {"error": message}, note_for(name, args, "error", message)
        )

    async def _remember(self, args: dict[str, Any]) -> ToolCall:
        fact = args.get("fact")
        if not isinstance(fact, str):
            return self._error("remember", args, "give the fact as text")
        about_me = args.get("about_me") is True
        if about_me and not (await self.store.settings(self.owner)).about_me:
            # "About me" is the user's choice (off by default): pin here instead.
            about_me = False
        pinned = await self.store.pin(self.owner, None if about_me else self.conv_id, fact)
        where = "about me" if about_me else "this conversation"
        shown = {"fact": pinned.content, "about_me": about_me}
        return ToolCall(
            "remember",
            shown,
            "ok",
            {"pinned": pinned.content, "where": where},
            note_for("remember", shown, "ok", f"pinned to {where}"),
        )

    async def _search_memory(self, args: dict[str, Any]) -> ToolCall:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return self._error("search_memory", args, "give words to search for")
        # This conversation's own turns reach the model through recall; the message being
        # answered would always be the first hit.
        hits = (await self.search(self.owner, query, self.conv_id))[:SEARCH_HITS]
        shown = {"query": query}
        outcome = f"{len(hits)} match{'' if len(hits) == 1 else 'es'}"
        return ToolCall(
            "search_memory",
            shown,
            "ok",
            {"matches": hits},
            note_for("search_memory", shown, "ok", outcome),
        )

    async def _today(self, args: dict[str, Any]) -> ToolCall:
        settings = await self.store.settings(self.owner)
        zone = zone_of(settings.time_zone)
        now = dt.datetime.fromtimestamp(self.clock(), zone)
        result = {
            "date": now.date().isoformat(),
            "weekday": now.strftime("%A"),
            "time": now.strftime("%H:%M"),
            "time_zone": str(zone),
        }
        said = f"{result['weekday']} {result['date']} {result['time']} ({result['time_zone']})"
        return ToolCall("today", {}, "ok", result, note_for("today", {}, "ok", said))


async def search_messages(
    store: Any, owner: str, query: str, leave_out: str | None = None
) -> list[dict[str, str]]:
    """The owner's messages matching `query`, newest first, except those of the conversation
    `leave_out`, as the search_memory tool returns them."""
    hits = await store.search(owner, query, limit=20, mark=("", ""))
    return [
        {
            "conversation": h.conversation_title or "Untitled",
            "role": h.role,
            "snippet": h.snippet,
            "date": dt.datetime.fromtimestamp(h.created_at, dt.UTC).strftime("%Y-%m-%d"),
        }
        for h in hits
        if h.conversation_id != leave_out
    ]


async def save_note(store: Any, owner: str, conv_id: str, note: str) -> None:
    """Store a tool call's note on the user's side of the history; a failure leaves it on
    screen only (the turn goes on)."""
    try:
        await store.append(owner, conv_id, "user", note, origin="tool")
    except MemoryStoreError as exc:
        log.warning("tool note not saved: %s", type(exc).__name__)


_HANDLERS: dict[str, Callable[[Toolbox, dict[str, Any]], Awaitable[ToolCall]]] = {
    "remember": Toolbox._remember,
    "search_memory": Toolbox._search_memory,
    "today": Toolbox._today,
}
