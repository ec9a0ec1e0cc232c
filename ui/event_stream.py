"""A page's Gradio event stream stays open for as long as the page is: no queued event of the
page can be left without a stream to report through.

Gradio's browser client hears the progress and results of every queued event of a page over
one server-sent-event stream (`/gradio_api/queue/data?session_hash=...`). Gradio's server ends
that stream, with a `close_stream` message, whenever the page has no event left pending; the
client opens a new one after its next join of the queue — if, when that join's response
arrives, it has read the close already (Gradio 6.31's client then checks
`stream_status.open`). When the close is still on its way (in a proxy's buffer, on a busy
machine) as the response to a new join arrives, the client takes the old stream for open and
opens no other, and the close then leaves the new event with no stream at all: it runs on the
server, but what it yields waits in the session's queue until some later event opens a
stream. A message sent at that moment stayed in the chat with Stop lit and never got its
reply (the replica browser test, once in CI; the page's requests show the join answered
before the old stream's abort, and no new stream opened after it).

`KeepEventStreamsOpen` ends the race where it starts: where Gradio's stream would send its
close and end, it swallows both and goes on serving the same response from a new Gradio
stream of the same session. The page keeps one stream until it goes away; Gradio's 15 s
heartbeats keep an idle one alive through proxies, and a page that has gone is noticed as
before (its disconnect ends the stream and cleans up its session).

Only the pages of the app's own UI, mounted at "/", are served so. Gradio's Python client
(the `/probe` page of bench/api_server.py) closes its stream itself when it has nothing
pending and opens another for its next event: kept open, the first stream went on taking
messages of the session's queue that the client no longer read.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

QUEUE_DATA = "/gradio_api/queue/data"  # the UI's per-page stream (not /queue/data/{event_id})


def is_close(body: bytes) -> bool:
    """Whether a chunk of the stream is Gradio's `close_stream` message (one SSE event a
    chunk: `data: {...}\\n\\n`)."""
    text = body.decode("utf-8", "replace").strip()
    if not text.startswith("data:"):
        return False
    try:
        message = json.loads(text[len("data:") :])
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("msg") == "close_stream"


class KeepEventStreamsOpen:
    """ASGI middleware: a page's `/gradio_api/queue/data` stream is never closed by the server
    (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != QUEUE_DATA:
            await self.app(scope, receive, send)
            return
        stream = _OneStream(send)
        while True:
            await self.app(scope, receive, stream.forward)
            if not stream.follows():
                return


class _OneStream:
    """One response made of Gradio's streams of a session, one after another: the first one's
    headers, every message but the closes, and an end only when Gradio ended a stream for
    another reason (the page went away, an error, a session this process does not know)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._started = False
        self._closed = False  # the current Gradio stream sent its close
        self._ended = False  # the page's response has ended

    def follows(self) -> bool:
        """Whether the Gradio stream that just returned ended only to close: then the next
        one serves the page, and this stream's close is forgotten."""
        closed, self._closed = self._closed, False
        return closed and not self._ended

    async def forward(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            if self._started:
                return  # the next stream's headers: the page has them already
            self._started = True
            await self._send(message)
            return
        if message["type"] != "http.response.body":
            await self._send(message)
            return
        body = message.get("body", b"")
        end = not message.get("more_body", False)
        if body and is_close(body):
            self._closed = True
            body = b""
        if end and self._closed:
            return  # Gradio ended the stream only to close it: another one follows
        if body or end:
            self._ended = self._ended or end
            await self._send({**message, "body": body})
