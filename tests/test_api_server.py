"""Serving the web app: the socket, a busy port, and `python app.py` serving API and UI."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import uvloop
from api_harness import api_server

from api.server import bind

ROOT = Path(__file__).resolve().parent.parent


async def _nodelay_of_an_accepted_connection() -> int:
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport):
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    sock = bind("127.0.0.1", 0)
    server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname())
        nodelay = await asyncio.wait_for(accepted, 10)
        writer.close()
        return nodelay
    finally:
        server.close()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_connections_to_the_socket_get_tcp_nodelay(loop):
    # asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP; with proto 0 every
    # keep-alive response waited for a delayed ACK (~40 ms). The server runs on uvloop
    # (api/server.py); the stdlib loop is what a caller's own loop may be.
    factory = uvloop.new_event_loop if loop == "uvloop" else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        assert runner.run(_nodelay_of_an_accepted_connection()) == 1


def test_the_app_is_served_on_uvloop_with_httptools(tmp_path):
    """What `python app.py` serves (WebServer.run) and the tests' threaded server
    (WebServer.start) alike: uvicorn's fast stack, named, not picked by what is installed."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    with api_server(tmp_path, "http://127.0.0.1:9") as server:
        assert isinstance(server.server.loop, uvloop.Loop)
        assert server.server.server.config.http_protocol_class is HttpToolsProtocol
        served_by = server.server.call(_the_loop_serving_this())
        assert isinstance(served_by, uvloop.Loop)
        with httpx.Client(base_url=server.api) as client:
            assert client.get("/conversations").status_code == 401


async def _the_loop_serving_this() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_a_busy_port_raises_oserror():
    taken = bind("127.0.0.1", 0)
    try:
        try:
            bind("127.0.0.1", taken.getsockname()[1])
        except OSError:
            pass
        else:
            raise AssertionError("bound a port that was taken")
    finally:
        taken.close()


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "GEMINI_"))}
    env.pop("SPACE_ID", None)
    env.update(
        MNEMO_DATA_DIR=str(tmp_path / "data"),
        MNEMO_PORT=str(port),
        MNEMO_MODEL="gemini",
        GEMINI_API_KEY="test-key",
        GEMINI_BASE_URL="http://127.0.0.1:9",
        GRADIO_ANALYTICS_ENABLED="False",
    )
    return env


def test_app_says_what_to_do_when_the_port_is_busy(tmp_path):
    taken = bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        done = subprocess.run(
            [sys.executable, "app.py"],
            cwd=ROOT,
            env=_env(tmp_path, port),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        taken.close()
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert f"MNEMO_PORT={port + 1}" in done.stderr


def test_python_app_py_serves_the_ui_and_the_api_on_one_port(tmp_path):
    probe = bind("127.0.0.1", 0)
    port = probe.getsockname()[1]
    probe.close()
    proc = subprocess.Popen(
        [sys.executable, "app.py"],
        cwd=ROOT,
        env=_env(tmp_path, port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                page = httpx.get(url + "/", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.3)
        assert page.status_code == 200 and "gradio" in page.text.lower()
        denied = httpx.get(url + "/api/v1/conversations", timeout=5)
        assert denied.status_code == 401
        assert denied.json()["type"] == "/api/v1/problems#unauthorized"
        assert httpx.get(url + "/api/v1/openapi.json", timeout=5).json()["info"]["title"] == (
            "Mnemo API"
        )
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"Mnemo is running on {url} (HTTP API: {url}/api/v1/docs)" in out
    assert "Traceback" not in out


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_page_from_another_replica_is_told_its_session_is_unknown_without_a_traceback(
    tmp_path, fake
):
    """A load balancer that moves a browser to this replica: Gradio's queue stream for a session
    made elsewhere answers "session not found" (the page then starts a new one) and ends; the
    log gets one line, not uvicorn's "Exception in ASGI application"."""
    seen = _Records()
    # uvicorn's loggers do not propagate to the root logger, so pytest's caplog misses them;
    # and uvicorn.Config replaces their handlers, so they are watched once the server is up.
    watched = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "mnemo.server")]
    try:
        with api_server(tmp_path, fake.url) as server:
            for logger in watched:
                logger.addHandler(seen)
            logging.getLogger("mnemo.server").setLevel(logging.INFO)
            with httpx.stream(
                "GET", server.url + "/gradio_api/queue/data", params={"session_hash": "elsewhere"}
            ) as response:
                body = response.read().decode()
            alive = httpx.get(server.url + "/api/v1/openapi.json")
    finally:
        for logger in watched:
            logger.removeHandler(seen)
        logging.getLogger("mnemo.server").setLevel(logging.NOTSET)
    assert response.status_code == 200
    assert '"session_not_found":true' in body
    assert alive.status_code == 200
    messages = [r.getMessage() for r in seen.records]
    assert [m for m in messages if "Exception in ASGI application" in m] == [], messages
    assert any("session this process does not know" in m for m in messages), messages


def test_a_page_closing_two_event_streams_of_one_session_logs_no_traceback():
    """A page can hold two queue streams of one session (a new event's stream opens while the
    last one closes). When it goes away, Gradio 6.31 forgets the session once per stream and
    the second time raises a KeyError, which uvicorn logged as "Exception in ASGI application"
    (seen in CI when a browser test closed its page)."""
    import threading

    import gradio as gr
    from fastapi import FastAPI

    from api.server import WebServer

    release = threading.Event()

    def slow() -> str:
        release.wait(30)
        return "done"

    with gr.Blocks() as demo:
        out = gr.Textbox()
        gr.Button("go").click(slow, None, out)
    # uvicorn.Config sets up uvicorn's loggers (replacing their handlers): watch them after.
    server = WebServer(gr.mount_gradio_app(FastAPI(), demo, path=""))
    seen = _Records()
    watched = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "mnemo.server")]
    for logger in watched:
        logger.addHandler(seen)
    logging.getLogger("mnemo.server").setLevel(logging.INFO)
    server.start()
    try:
        joined = httpx.post(
            server.url + "/gradio_api/queue/join",
            json={"fn_index": 0, "data": [], "session_hash": "page", "trigger_id": None},
        )
        assert joined.status_code == 200, joined.text
        streams = []
        for _ in range(2):
            client = httpx.Client(timeout=10)
            request = client.build_request(
                "GET", server.url + "/gradio_api/queue/data", params={"session_hash": "page"}
            )
            response = client.send(request, stream=True)
            assert response.status_code == 200
            streams.append((client, response, response.iter_bytes()))
        assert b'"msg":"estimation"' in next(streams[0][2])  # the first one is streaming
        for client, response, _ in streams:  # the page goes away
            response.close()
            client.close()
        deadline = time.monotonic() + 10
        while not any(
            "cleaned up twice" in m or "Exception in ASGI" in m
            for m in (r.getMessage() for r in list(seen.records))
        ):
            assert time.monotonic() < deadline, [r.getMessage() for r in seen.records]
            time.sleep(0.05)
        assert "page" not in demo._queue.pending_messages_per_session
        assert httpx.get(server.url + "/gradio_api/info").status_code == 200
    finally:
        release.set()
        server.stop()
        for logger in watched:
            logger.removeHandler(seen)
        logging.getLogger("mnemo.server").setLevel(logging.NOTSET)
    messages = [r.getMessage() for r in seen.records]
    assert [m for m in messages if "Exception in ASGI application" in m] == [], messages
    assert any("cleaned up twice" in m for m in messages), messages


HEAP_PROBE = """
import gc, weakref
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from api.server import WebServer

class Node:
    pass

garbage = Node()
garbage.me = garbage  # a cycle: only the cycle collector frees it
dead = weakref.ref(garbage)
del garbage
gc.disable()  # so that only the server's start can have collected it

async def heap(request):
    return JSONResponse({
        "frozen": gc.get_freeze_count(),
        "garbage_collected": dead() is None,
        "young": len(gc.get_objects()),
    })

server = WebServer(Starlette(routes=[Route("/heap", heap)]))
print(server.url, flush=True)
server.run()
"""


def test_the_served_process_collects_its_startup_garbage_then_freezes_the_rest():
    """Before serving, WebServer.run collects what building the app left as garbage and
    freezes what is alive (api/server.py settle_heap): full collections then walk only what
    came later, so they no longer stop the event loop for hundreds of milliseconds."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HEAP_PROBE],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), proc.stderr.read()
        deadline = time.monotonic() + 60
        while True:
            try:
                heap = httpx.get(url + "/heap", timeout=5).json()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert heap["garbage_collected"]
    # Everything alive at the start (uvicorn, starlette, this script) is frozen; what the
    # collector still tracks is what serving made since, a small part of it.
    assert heap["frozen"] > 10_000
    assert heap["young"] < heap["frozen"] / 2


def _queue_events(url: str, session: str, count: int) -> list[str]:
    """Join `count` events of fn 0 for one page session, then read the queue's event stream
    until each has completed; returns what each returned."""
    with httpx.Client(timeout=20) as client:
        for _ in range(count):
            joined = client.post(
                url + "/gradio_api/queue/join",
                json={"fn_index": 0, "data": [], "session_hash": session, "trigger_id": None},
            )
            assert joined.status_code == 200, joined.text
        outputs: list[str] = []
        with client.stream(
            "GET", url + "/gradio_api/queue/data", params={"session_hash": session}
        ) as response:
            for line in response.iter_lines():
                if '"msg":"process_completed"' in line:
                    outputs.append(json.loads(line.removeprefix("data: "))["output"]["data"][0])
                    if len(outputs) == count:
                        break
    return outputs


def test_the_apps_gradio_queue_still_runs_every_event_while_polling_less():
    """app.queued: an idle queue looks for events every 10 ms, not Gradio's 1 ms. Events still
    start, also past the concurrency limit (the poll while every slot is busy)."""
    import itertools
    import threading

    import gradio as gr
    from fastapi import FastAPI

    import app
    from api.server import WebServer

    numbers, lock = itertools.count(1), threading.Lock()

    def next_number() -> str:
        with lock:
            return str(next(numbers))

    with gr.Blocks() as demo:
        out = gr.Textbox()
        gr.Button("go").click(next_number, None, out)
    queued = app.queued(demo)
    assert queued is demo
    assert demo._queue.sleep_when_free == app.QUEUE_POLL_S
    with WebServer(gr.mount_gradio_app(FastAPI(), demo, path="")) as server:
        events = app.QUEUE_CONCURRENCY * 2 + 1
        outputs = _queue_events(server.url, "page", events)
    assert sorted(outputs, key=int) == [str(n) for n in range(1, events + 1)]
