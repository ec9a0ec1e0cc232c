"""POST /conversations/{id}/messages: the reply as server-sent events, or as one JSON body.

    event: delta   data: {"text": "..."}          a piece of the reply, as it arrives
    event: done    data: ReplyOut                  model, usage, memory status (always last)
    event: error   data: a problem document        the model failed part-way
    : keep-alive                                   a comment: the model is still silent

A conversation whose persona is a roundtable is answered by each speaker in turn:

    event: speaker_start  data: SpeakerOut        persona id, name, role, the veto if decided
    event: delta          data: {"text", "speaker": persona id}
    event: speaker_end    data: SpeakerReplyOut   that speaker's reply, complete and saved
    ... the next speaker ...
    event: done           data: ReplyOut          the chair's reply, and `speakers`: every one

The user's message is saved before the model is called (the service does that), and the
reply runs in its own task, not in the request: a client that disconnects mid-reply loses
nothing — the reply finishes and is saved complete, and the next GET of the messages shows
it. Errors found before the first piece of the reply (bad input, quota, unknown
conversation, the model refusing to start) are a 4xx/5xx problem document instead of a
stream. Messages to one conversation are answered one at a time, in the order they came (the
facade's turn lock, shared with the UI).

Heartbeats: proxies (nginx, a Space's, a load balancer) drop a connection that stays silent for
a minute or so, and a model can think that long. After `heartbeat_s` (15 s by default,
MNEMO_SSE_HEARTBEAT) without an event, the stream sends an SSE comment, which clients ignore.
That includes the wait for the first event: the response then starts as a stream, so a model
that fails to start after that long ends the stream with `event: error`, not a status code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from assistant.chat import Cleared, Delta, Done
from assistant.conversations import Conversations
from assistant.roundtable import RoundtableDone, Speaking, Spoke

from . import schemas
from .auth import Facade, Owner
from .problems import ApiProblem, problem_of

log = logging.getLogger("mnemo.api")
router = APIRouter(tags=["messages"])

DRAIN_S = 60.0  # at shutdown, how long replies still running may take to finish and save
HEARTBEAT_S = 15.0  # silence before a stream sends a keep-alive (assistant.config.sse_heartbeat_s)
KEEP_ALIVE = b": keep-alive\n\n"


@dataclass(frozen=True)
class _Failed:
    error: BaseException


_END = object()
_SILENT = object()  # no event for a heartbeat interval


class _Events:
    """The next event of a reply's queue, or _SILENT after `heartbeat_s` without one (None:
    wait as long as it takes). A get that timed out keeps its place, so no event is lost."""

    def __init__(self, queue: asyncio.Queue[Any], heartbeat_s: float | None) -> None:
        self._queue = queue
        self._heartbeat_s = heartbeat_s
        self._get: asyncio.Future[Any] | None = None

    async def next(self) -> Any:
        if self._get is None:
            self._get = asyncio.ensure_future(self._queue.get())
        done, _ = await asyncio.wait({self._get}, timeout=self._heartbeat_s)
        if not done:
            return _SILENT
        item, self._get = self._get.result(), None
        return item

    def close(self) -> None:
        if self._get is not None:
            self._get.cancel()


class Turns:
    """Replies being produced, each in a task of its own (see the module docstring)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, events: AsyncIterator[Any]) -> asyncio.Queue[Any]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.get_running_loop().create_task(self._run(events, queue))
        self._tasks.add(task)  # the loop holds tasks weakly
        task.add_done_callback(self._tasks.discard)
        return queue

    async def _run(self, events: AsyncIterator[Any], queue: Any) -> None:
        try:
            async with contextlib.aclosing(events):  # type: ignore[type-var]
                async for event in events:
                    queue.put_nowait(event)
        except Exception as exc:
            queue.put_nowait(_Failed(exc))
        finally:
            queue.put_nowait(_END)

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout_s: float = DRAIN_S) -> None:
        """Let running replies finish and be saved (server shutdown)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout_s)


def _wants_stream(accept: str | None, stream: bool | None) -> bool:
    if stream is not None:
        return stream
    kinds = {part.split(";")[0].strip().lower() for part in (accept or "*/*").split(",")}
    if "text/event-stream" in kinds:
        return True
    if "application/json" in kinds or "application/problem+json" in kinds:
        return False
    if kinds & {"*/*", "text/*", "application/*", ""}:
        return True
    raise ApiProblem(
        "not-acceptable",
        "The reply comes as text/event-stream (the default) or application/json; ask for one "
        "of them in Accept, or pass ?stream=false for JSON.",
    )


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class _Said:
    """What a turn's events have said so far: who is speaking, and each finished reply (a
    roundtable's speakers; a single persona has none)."""

    def __init__(self) -> None:
        self.speaker: str | None = None
        self.spoke: list[Spoke] = []

    def frame(self, item: Any) -> tuple[str, dict[str, Any]] | None:
        """The event for a speaker's start, a piece of a reply or a speaker's end."""
        if isinstance(item, Speaking):
            self.speaker = item.speaker.persona_id
            return "speaker_start", schemas.speaker_out(item.speaker, item.veto)
        if isinstance(item, Delta):
            data = {"text": item.text}
            if self.speaker:
                data["speaker"] = self.speaker
            return "delta", data
        if isinstance(item, Spoke):
            self.spoke.append(item)
            return "speaker_end", schemas.speaker_reply_out(item.speaker, item.done, item.veto_line)
        return None


def _total(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _board_reply(event: RoundtableDone, said: _Said) -> dict[str, Any]:
    """A roundtable's final payload: the chair's reply (it speaks last), every speaker's, and
    the tokens of all of them."""
    dones = [s.done for s in said.spoke]
    return {
        "reply": dones[-1].reply if dones else "",
        "status": "incomplete" if any(d.status == "incomplete" for d in dones) else "ok",
        "model": event.model,
        "usage": {
            "input_tokens": _total([d.usage.input_tokens for d in dones]),
            "output_tokens": _total([d.usage.output_tokens for d in dones]),
        },
        "saved": all(d.saved for d in dones),
        "notice": next((d.notice for d in dones if d.notice), None),
        "reset": None,
        "roundtable": event.roundtable_id,
        "speakers": [schemas.speaker_reply_out(s.speaker, s.done, s.veto_line) for s in said.spoke],
        "veto": schemas.veto_out(event.veto),
    }


FINAL = (Done, Cleared, RoundtableDone)


async def _final(
    svc: Conversations, owner: str, conversation_id: str, event: Any, said: _Said
) -> dict:
    """The `done` payload for a Done, Cleared or RoundtableDone event, with the memory status
    after it."""
    try:
        memory = schemas.status_out(await svc.status(owner, conversation_id))
    except Exception:  # the reply is saved; a status that cannot be read is left out
        log.warning("memory status after a reply failed", exc_info=True)
        memory = None
    if isinstance(event, RoundtableDone):
        return {**_board_reply(event, said), "memory": memory}
    return {**_one_reply(svc, event), "memory": memory, **_NO_BOARD}


_NO_BOARD = {"roundtable": None, "speakers": None, "veto": None}


def _one_reply(svc: Conversations, event: Done | Cleared) -> dict[str, Any]:
    if isinstance(event, Cleared):
        return {
            "reply": "",
            "status": "ok",
            "model": svc.model_name,
            "usage": {"input_tokens": None, "output_tokens": None},
            "saved": True,
            "notice": None,
            "reset": schemas.reset_out(event.result),
        }
    return {
        "reply": event.reply,
        "status": event.status,
        "model": event.model,
        "usage": schemas.usage_out(event.usage),
        "saved": event.saved,
        "notice": event.notice,
        "reset": None,
    }


async def _stream(
    svc: Conversations,
    owner: str,
    conversation_id: str,
    started: list[Any],
    events: _Events,
) -> AsyncIterator[bytes]:
    said = _Said()
    items = list(started)
    try:
        while True:
            item = items.pop(0) if items else await events.next()
            if item is _END:
                return
            frame = said.frame(item)
            if item is _SILENT:
                yield KEEP_ALIVE
            elif frame is not None:
                yield _sse(*frame)
            elif isinstance(item, FINAL):
                yield _sse("done", await _final(svc, owner, conversation_id, item, said))
            elif isinstance(item, _Failed):
                yield _sse("error", problem_of(item.error))
    finally:  # also when the client went away: the reply's own task goes on (see above)
        events.close()


async def _started(events: _Events) -> list[Any]:
    """The turn's first events, up to its first piece of reply or its end: a roundtable
    announces a speaker before the model is called, and a failure there (the quota, the model
    refusing) is still an error before the reply starts — a status code, not a stream. After a
    heartbeat interval of silence the reply starts as a stream (see the module docstring)."""
    try:
        started = [await events.next()]
        while isinstance(started[-1], Speaking):
            started.append(await events.next())
    except BaseException:  # the client went away before the reply began
        events.close()
        raise
    if isinstance(started[-1], _Failed):
        raise started[-1].error
    if started[-1] is _END:  # the service always ends a turn with a final event
        raise RuntimeError("the reply ended without an event")
    return started


SEND_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The reply: an event stream (default), or JSON when asked for.",
        "content": {
            "text/event-stream": {
                "schema": {"type": "string"},
                "example": 'event: delta\ndata: {"text": "Hel"}\n\nevent: delta\ndata: '
                '{"text": "lo!"}\n\nevent: done\ndata: {"reply": "Hello!", "status": "ok", '
                '"model": "Gemini 2.5 Flash", ...}\n\n'
                "(a roundtable: speaker_start, delta with speaker, speaker_end per speaker, "
                "then done)",
            },
            "application/json": {"schema": {"$ref": "#/components/schemas/ReplyOut"}},
        },
    }
}


@router.post(
    "/conversations/{conversation_id}/messages",
    responses=SEND_RESPONSES,
    response_model=schemas.ReplyOut,
    summary="Send a message; the reply streams back",
)
async def send(
    request: Request,
    svc: Facade,
    owner: Owner,
    conversation_id: str,
    body: schemas.SendIn,
    stream: Annotated[
        bool | None,
        Query(description="false: one JSON body (also `Accept: application/json`)."),
    ] = None,
) -> Any:
    """Your message is saved first; then the reply streams as `delta` events and a final
    `done` event (a roundtable: `speaker_start`, `delta`s and `speaker_end` for each speaker,
    then `done`), with a `: keep-alive` comment whenever the model is silent for 15 s. If you
    disconnect, the reply still finishes and is saved."""
    streaming = _wants_stream(request.headers.get("accept"), stream)
    queue = request.app.state.turns.start(svc.send(owner, conversation_id, body.text))
    # No heartbeats in JSON: nothing is sent before the end.
    events = _Events(queue, request.app.state.heartbeat_s if streaming else None)
    started = await _started(events)
    if streaming:
        return StreamingResponse(
            _stream(svc, owner, conversation_id, started, events),
            media_type="text/event-stream",
            # No caching, and no buffering by a proxy in front (nginx, a Space's): each event
            # should reach the client as it is written.
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    said, final = _Said(), None
    item = started.pop(0)
    while item is not _END:
        if isinstance(item, _Failed):
            raise item.error
        if said.frame(item) is None and isinstance(item, FINAL):
            final = await _final(svc, owner, conversation_id, item, said)
        item = started.pop(0) if started else await queue.get()
    return JSONResponse(final)
