"""Two app replicas on one PostgreSQL, in a real browser: `python app.py` twice with the same
MNEMO_DATABASE_URL and MNEMO_SECRET, behind a small TCP proxy standing in for the load balancer
(one origin, so the browser keeps one owner id). The browser chats through replica 1; the proxy
then sends every new connection to replica 2, and the page reloads: the same conversation is
there, and replica 2 answers with the earlier exchange in its context.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
import test_browser
from test_browser import (
    AppServer,
    expect,
    loaded,
    open_app,
    send,
    sidebar_items,
    user_messages,
)

pytestmark = pytest.mark.browser

# The browser tests' fixtures: Chromium (or a skip/fail saying why), a fresh context per test,
# the fake model that echoes the first message back.
_browser_available = test_browser._browser_available
browser = test_browser.browser
context = test_browser.context
fake = test_browser.fake


class SwitchingProxy:
    """Forwards each TCP connection to the current target port; `switch()` moves new ones to
    another target and drops the open ones, as a load balancer moving a client would."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.served: dict[int, int] = {}  # target port -> connections forwarded there
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                target = self.target
                self.served[target] = self.served.get(target, 0) + 1
            try:
                upstream = socket.create_connection(("127.0.0.1", target))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def switch(self, target: int) -> None:
        with self._lock:
            self.target = target
            doomed, self._open = self._open, []
        for s in doomed:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self._listener.close()
        self.switch(self.target)


@pytest.fixture
def replicas(tmp_path, fake, pg_url):
    servers = []
    for n in (1, 2):
        server = AppServer(tmp_path / f"data-{n}", fake.url, tmp_path / f"app-{n}.log")
        server.env.update(MNEMO_DATABASE_URL=pg_url, MNEMO_SECRET="one-secret-for-all-replicas")
        servers.append(server)
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()
    for server in servers:
        assert "Traceback" not in server.log(), server.log()[-4000:]


class PageTrace:
    """What a page sent and received and logged, for the message of a failure: a reply that
    never starts is explained by which request went unanswered, and through which replica."""

    def __init__(self, context) -> None:
        self.lines: list[str] = []
        context.on("request", lambda r: self._api(r.url, f"-> {r.method} {r.url}"))
        context.on("response", lambda r: self._api(r.url, f"<- {r.status} {r.url}"))
        context.on("requestfailed", lambda r: self._add(f"!! {r.url}: {r.failure}"))
        context.on("console", lambda m: self._add(f"console {m.type}: {m.text}"))

    def _api(self, url: str, line: str) -> None:
        if "/gradio_api/" in url and "/assets/" not in url:  # not the page's static files
            self._add(line)

    def _add(self, line: str) -> None:
        self.lines.append(f"{time.monotonic():.3f} {line}")

    def report(self, proxy: SwitchingProxy, replicas) -> str:
        logs = [f"--- app {n} log ---\n{s.log()[-3000:]}" for n, s in enumerate(replicas, 1)]
        return "\n".join(
            ["--- page ---", *self.lines[-150:], f"--- proxy: connections {proxy.served}", *logs]
        )


def test_a_browser_moved_to_the_other_replica_keeps_its_conversation(context, replicas):
    one, two = replicas
    proxy = SwitchingProxy(one.port)
    trace = PageTrace(context)
    try:
        _move_a_browser(context, proxy, one, two)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{trace.report(proxy, replicas)}") from None
    finally:
        proxy.close()
    for server in replicas:  # nothing went to either replica's own disk
        assert not (server.data_dir / "mnemo.db").exists()


def _move_a_browser(context, proxy, one, two) -> None:
    page = open_app(context, proxy)
    send(page, "Remember the blue door on Rua Augusta", remembered=2)

    proxy.switch(two.port)
    page.reload()
    loaded(page)
    expect(sidebar_items(page)).to_have_count(1)
    expect(sidebar_items(page).first).to_contain_text("Remember the blue door")
    sidebar_items(page).first.click()
    expect(user_messages(page).first).to_contain_text("Remember the blue door")

    send(page, "Which door was it?", remembered=4)
    # Replica 2 built the model's context from what replica 1 saved.
    expect(page.locator("#chat .message-row.bot-row").last).to_contain_text(
        "earlier you said: Remember the blue door on Rua Augusta"
    )
    assert proxy.served.get(two.port, 0) > 0 and proxy.served.get(one.port, 0) > 0
