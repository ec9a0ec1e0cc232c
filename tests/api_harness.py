"""The whole web app (API + UI) served by uvicorn on a free port in this process, for the API
tests: real HTTP, real SQLite in a tmp dir, the real google-genai client against the fake
Gemini server. Tokens are issued through the service facade, as the UI's token panel does.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

import app
from api.server import WebServer
from assistant.gemini import GeminiModel
from assistant.runtime import Runtime


class ApiServer:
    def __init__(
        self,
        data_dir: Path,
        gemini_url: str,
        *,
        quota_per_hour: int | None = None,
        admin_token: str | None = None,
        monkeypatch: Any = None,
        database_url: str | None = None,
    ) -> None:
        if admin_token is not None:
            monkeypatch.setenv("MNEMO_ADMIN_TOKEN", admin_token)
        self.rt = Runtime(
            data_dir,
            model=GeminiModel("test-key", base_url=gemini_url),
            quota_per_hour=quota_per_hour,
            database_url=database_url,
        )
        self.web = app.web_app(self.rt)
        self.server = WebServer(self.web).start()
        self.facade = self.server.call(self.rt.conversations())
        self.url = self.server.url
        self.api = self.url + "/api/v1"

    def token(self, owner: str, name: str = "tests") -> str:
        """A new API token of `owner` (the secret, shown once)."""
        return self.server.call(self.facade.issue_token(owner, name)).secret

    def revoke(self, owner: str, secret: str) -> None:
        tokens = self.server.call(self.facade.list_tokens(owner))
        hint = secret[-4:]
        (token,) = [t for t in tokens if t.hint == hint and t.active]
        self.server.call(self.facade.revoke_token(owner, token.id))

    def client(self, secret: str | None, **options: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        return httpx.Client(base_url=self.api, headers=headers, timeout=20, **options)

    def running_turns(self) -> int:
        return self.web.state.api.state.turns.running

    def wait_idle(self, timeout_s: float = 10.0) -> None:
        """Until no reply is being produced (and background work after it is done)."""
        deadline = time.monotonic() + timeout_s
        while self.running_turns() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.server.call(self._background())

    async def _background(self) -> None:
        await (await self.rt.service()).wait_background()

    def stop(self) -> None:
        self.server.stop()


@contextlib.contextmanager
def api_server(data_dir: Path, gemini_url: str, **options: Any) -> Iterator[ApiServer]:
    server = ApiServer(data_dir, gemini_url, **options)
    try:
        yield server
    finally:
        server.stop()


def sse_events(response: httpx.Response) -> Iterator[tuple[str, str]]:
    """(event, data) pairs of a text/event-stream response, as they arrive."""
    event, data = "message", []
    for line in response.iter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
