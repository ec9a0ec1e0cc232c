"""A page's Gradio event stream stays open between events (ui/event_stream.py), over real HTTP:
a small Gradio app served by uvicorn, driven as Gradio's browser client drives it (join the
queue, read the session's stream).

Without the middleware Gradio ends the stream with `close_stream` after the first event, and
the second event's results then have no stream to come by: the second test fails.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator

import gradio as gr
import httpx
import pytest
from fastapi import FastAPI

from api.server import EndLostSessionStreams, WebServer
from ui.event_stream import KeepEventStreamsOpen, is_close


def shout(text: str) -> str:
    return text.upper()


class Streaming:
    """ASGI middleware that counts the responses of `/queue/data` still being served."""

    def __init__(self, app):
        self.app = app
        self.open = 0

    async def __call__(self, scope, receive, send):
        counted = scope["type"] == "http" and scope["path"].endswith("/queue/data")
        self.open += counted
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= counted


@pytest.fixture
def served() -> Iterator[tuple[str, Streaming]]:
    with gr.Blocks() as demo:
        box = gr.Textbox()
        out = gr.Textbox()
        box.submit(shout, [box], [out])
    demo.queue()
    web = FastAPI()
    web.add_middleware(KeepEventStreamsOpen)
    web = gr.mount_gradio_app(web, demo, path="/")
    streaming = Streaming(web)
    with WebServer(streaming) as server:
        yield server.url, streaming


def join(url: str, session: str, text: str) -> str:
    response = httpx.post(
        f"{url}/gradio_api/queue/join",
        json={"data": [text], "fn_index": 0, "session_hash": session, "event_data": None},
        timeout=10,
    )
    response.raise_for_status()
    return response.json()["event_id"]


@contextlib.contextmanager
def page_stream(url: str, text: str) -> Iterator[tuple[str, str, Iterator[dict]]]:
    """A new page's first event (`text` sent), then its session's stream, as Gradio's client
    opens them: (session, the event's id, the stream's messages)."""
    session = uuid.uuid4().hex[:11]
    event = join(url, session, text)
    with httpx.stream(
        "GET", f"{url}/gradio_api/queue/data", params={"session_hash": session}, timeout=30
    ) as stream:
        assert stream.status_code == 200
        yield session, event, messages(stream)


def messages(stream: httpx.Response) -> Iterator[dict]:
    for line in stream.iter_lines():
        if line.startswith("data:"):
            yield json.loads(line[len("data:") :])


def until_completed(events: Iterator[dict], event_id: str) -> dict:
    """The stream's messages up to `event_id`'s completion; fails on a close before it."""
    for message in events:
        assert message["msg"] != "close_stream", "the stream was closed with an event to come"
        if message["msg"] == "process_completed" and message.get("event_id") == event_id:
            return message
    raise AssertionError(f"the stream ended before event {event_id} completed")


def test_one_stream_carries_events_joined_after_the_page_went_idle(served):
    url, _ = served
    with page_stream(url, "first") as (session, first, events):
        done = until_completed(events, first)
        assert done["output"]["data"] == ["FIRST"]
        # Idle now: Gradio itself would have closed the stream here. The next event joins,
        # and its result comes by the same stream, as the browser expects when it has not
        # seen a close.
        second = join(url, session, "second")
        done = until_completed(events, second)
        assert done["output"]["data"] == ["SECOND"]


def test_a_page_that_goes_away_ends_its_stream(served):
    url, streaming = served
    with page_stream(url, "bye") as (_, event, events):
        until_completed(events, event)
        assert streaming.open == 1
    # The client hung up while the stream waited for more: Gradio notices (it looks every
    # 10 s while idle) and the stream ends instead of being served again.
    deadline = time.monotonic() + 60
    while streaming.open:
        assert time.monotonic() < deadline, "the stream outlived its page"
        time.sleep(0.05)


def test_a_page_mounted_elsewhere_keeps_gradios_own_stream():
    # Gradio's Python client closes its stream itself (bench/api_server.py's /probe page):
    # only the UI at "/" is kept open.
    web = FastAPI()
    web.add_middleware(KeepEventStreamsOpen)
    with gr.Blocks() as probe:
        box = gr.Textbox()
        box.submit(shout, [box], [gr.Textbox()])
    probe.queue()
    web = gr.mount_gradio_app(web, probe, path="/probe")
    with (
        WebServer(web) as server,
        page_stream(server.url + "/probe", "probe") as (_, event, events),
    ):
        until_completed(events, event)
        assert next(events)["msg"] == "close_stream"


def test_a_stream_of_an_unknown_session_still_ends():
    with WebServer(EndLostSessionStreams(KeepEventStreamsOpen(_gradio_app()))) as server:
        response = httpx.get(
            f"{server.url}/gradio_api/queue/data", params={"session_hash": "nobody"}, timeout=30
        )
    said = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    assert [m["msg"] for m in said] == ["unexpected_error"]
    assert said[0]["session_not_found"] is True


def _gradio_app() -> FastAPI:
    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue()
    return gr.mount_gradio_app(FastAPI(), demo, path="/")


@pytest.mark.parametrize(
    "chunk,closes",
    [
        (b'data: {"msg":"close_stream","event_id":null}\n\n', True),
        (b'data: {"msg": "close_stream"}\n\n', True),
        (b'data: {"msg":"process_completed","event_id":"e"}\n\n', False),
        (b'data: {"msg":"heartbeat"}\n\n', False),
        (b"data: not json\n\n", False),
        (b": comment\n\n", False),
        (b"", False),
    ],
)
def test_only_gradios_close_message_is_taken_for_a_close(chunk, closes):
    assert is_close(chunk) is closes
