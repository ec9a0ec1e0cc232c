"""Serve the web app — the HTTP API with the Gradio UI mounted beside it — with uvicorn.

One process, one port, one event loop: `app.py` builds a FastAPI app whose routes are the API
under /api/v1 and mounts the Gradio Blocks at "/" (`gr.mount_gradio_app`, Gradio's supported
way to live inside another ASGI app: its queue, streaming, BrowserState and Hugging Face
sign-in work as under `launch()`). uvicorn runs it, so `python app.py` and a Space's runner,
which also runs `python app.py`, serve both on the same port.

The socket is bound before uvicorn starts, so a busy port is reported as an OSError the
caller can explain, instead of uvicorn's log line and `sys.exit`.

The event loop is uvloop's and HTTP is parsed by httptools (uvicorn's "standard" stack, both
pinned in requirements.txt): at 50 concurrent streams the loop's own scheduling and the h11
parser and writer in pure Python were over half of the event loop's CPU per message, and every
message waits behind the others' share of that one loop (bench/results/api_load.md).

On SIGTERM or Ctrl-C, uvicorn's shutdown first stops listening and runs `on_stop` (app.py:
`Runtime.drain`, which lets streaming replies finish or saves them as incomplete), and only
then waits for open connections: a UI page whose reply was stopped keeps its event stream
open, so after `on_stop` that wait is cut to a second.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

GRACEFUL_SHUTDOWN_S = 10.0
LOOP, HTTP = "uvloop", "httptools"  # named, not uvicorn's "auto": a missing one fails loudly
AFTER_STOP_S = 1.0  # after on_stop, what open connections get before they are cut
T = TypeVar("T")
log = logging.getLogger("mnemo.server")


class EndLostSessionStreams:
    """ASGI wrapper: ends Gradio's queue streams cleanly where Gradio raises for expected events.

    A browser whose session this process does not know (a load balancer moved it from another
    replica, or the app restarted) opens `/gradio_api/queue/data`; Gradio streams it a
    "session not found" message, on which the page starts a new session, and then raises a
    404 inside the response it has already started. uvicorn logs that as "Exception in ASGI
    application" with two tracebacks, for what is an expected event of running replicas.
    This wrapper logs one line instead and closes the stream Gradio left open. It does the same
    for the second cleanup of a closed page's streams (`_is_second_cleanup`).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/queue/data"):
            await self.app(scope, receive, send)
            return
        sent = {"start": False, "end": False}

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                sent["start"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                sent["end"] = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if sent["start"] and _is_not_found(exc):
                log.info(
                    "a page's event stream named a session this process does not know; told it"
                )
            elif _is_second_cleanup(exc):
                log.info("a closed page's event streams were cleaned up twice; nothing was lost")
            else:
                raise
            if sent["start"] and not sent["end"]:
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def _is_second_cleanup(exc: BaseException) -> bool:
    """Whether `exc` is Gradio's queue stream failing to forget a session it already forgot.

    A page may hold two event streams of one session (a new event's stream opens while the
    last one is still closing). When the page goes away both are cancelled, and each deletes
    the session's message queue: the second deletion raises a KeyError (Gradio 6.31,
    `routes.py`, `sse_stream`). The session is gone either way, so it is not an error.
    """
    if not isinstance(exc, KeyError):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code if tb is not None else None
    return (
        code is not None
        and code.co_name == "sse_stream"
        and Path(code.co_filename).parts[-2:] == ("gradio", "routes.py")
    )


def _is_not_found(exc: BaseException | None) -> bool:
    """Whether a 404 HTTPException is the exception or one of its causes."""
    while exc is not None:
        if isinstance(exc, HTTPException) and exc.status_code == 404:
            return True
        exc = exc.__cause__
    return False


class _Server(uvicorn.Server):
    """uvicorn's server, whose shutdown runs `on_stop` once it has stopped listening."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], Awaitable[Any]] | None):
        super().__init__(config)
        self.on_stop = on_stop
        self.stopped_with: Any = None  # what on_stop returned

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        # uvicorn re-raises a captured SIGTERM once it has shut down, so a process that had
        # stopped cleanly still died "of SIGTERM" (status -15, what a kill looks like).
        if self.on_stop is not None:
            self._captured_signals.clear()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.on_stop is not None:
            for server in self.servers:
                server.close()  # no new connections; open ones keep streaming
            try:
                self.stopped_with = await self.on_stop()
            except Exception:  # never hang the shutdown: WAL recovers what was not closed
                logging.getLogger("mnemo.server").exception("on_stop failed")
            self.config.timeout_graceful_shutdown = AFTER_STOP_S
            # The cut of a stream left waiting is expected now: not an "Exception in ASGI
            # application" with a traceback.
            logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)
        await super().shutdown(sockets)


def settle_heap() -> int:
    """Collect what starting up left as garbage, then move every object still alive out of
    the cycle collector's sight (`gc.freeze`); returns how many that is.

    What a process holds once the app is built (Gradio, FastAPI, pydantic, the personas:
    about 310,000 tracked objects) lives as long as the process, yet each full collection
    walked all of it again. Objects that live a second, as a streaming reply's do, reach the
    oldest generation quickly, so at 50 streams a full collection came every 5-10 s and
    stopped the event loop for 190-580 ms (bench api_load on a loaded machine; those of
    starting up took 100-170 ms at load 2): every message then in flight waited for it.
    Frozen, those objects are never walked, and a full collection took 5-50 ms in the same
    runs. Reference counting still frees them; only a cycle among them would stay, and they
    are the app itself."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0 = any free port); raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP, not the default 0: asyncio only turns Nagle's algorithm off
    # (TCP_NODELAY) on accepted sockets whose proto says TCP. Without it, every response
    # written in two parts (headers, then body) waited ~40 ms for a delayed ACK on a
    # keep-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class WebServer:
    """uvicorn serving `app` on an already bound socket, in the foreground or a thread."""

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        on_stop: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.sock = bind(host, port)
        self.host = host
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            EndLostSessionStreams(app),
            log_level="warning",
            # Gradio's own launch() settings: no websockets needed (its queue streams over
            # SSE), and in-flight streams get time to finish on shutdown.
            ws="none",
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            loop=LOOP,
            http=HTTP,
        )
        self.server = _Server(config, on_stop)
        self._thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{shown}:{self.port}"

    def run(self) -> Any:
        """Serve until interrupted (Ctrl+C or SIGTERM), then shut down gracefully; returns
        what `on_stop` returned."""
        settle_heap()  # the app is built: what is alive now lives as long as the process
        self.server.run(sockets=[self.sock])
        return self.server.stopped_with

    def start(self, timeout_s: float = 30.0) -> WebServer:
        """Serve in a daemon thread (tests, benchmarks); returns once accepting connections."""
        # A thread cannot install signal handlers; the owner stops the server with stop().
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        # The loop `run()` gets (uvloop), so what tests and benchmarks serve is what runs.
        runner = asyncio.Runner(loop_factory=self.server.config.get_loop_factory())
        self._thread = threading.Thread(
            target=self._in_thread, args=(runner,), name=f"web-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the web server on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def _in_thread(self, runner: asyncio.Runner) -> None:
        with runner:
            runner.run(self._serve())

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self.server.serve(sockets=[self.sock])

    def call(self, work: Coroutine[Any, Any, T], timeout_s: float = 30.0) -> T:
        """Run a coroutine on the server's event loop (where the app's store lives) from
        another thread, and return its result: for tests and benchmarks."""
        assert self.loop is not None, "start() the server first"
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout_s)

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(GRACEFUL_SHUTDOWN_S + 5)
        self.sock.close()

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
