"""Fixtures shared by the test modules: a clean environment for every test, the fake Gemini
server, an app runtime on it, the memory backends (tests/memory_backends.py), and for the HTTP
API tests one fake Gemini server and one app server per module (tests/api_harness.py)."""

from __future__ import annotations

import os

import pytest
from fake_gemini import FakeGemini

# The memory contract's backend fixtures (SQLite and PostgreSQL), for every test module.
from memory_backends import (  # noqa: F401
    backend,
    memory_backend,
    pg_server_url,
    pg_url,
    store_target,
)

from assistant.gemini import GeminiModel
from assistant.runtime import Runtime

# Settings a developer's shell (or a Space) may have set: none of them may leak into a test.
ISOLATED_PREFIXES = ("MNEMO_", "GEMINI_", "OAUTH_")
ISOLATED_NAMES = ("GOOGLE_API_KEY", "SPACE_ID")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Every test starts without Mnemo, Gemini or Space settings, and with its data dir in tmp:
    code that falls back to the default data dir cannot touch ./data."""
    for name in list(os.environ):
        if name.startswith(ISOLATED_PREFIXES) or name in ISOLATED_NAMES:
            monkeypatch.delenv(name)
    monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path_factory.mktemp("mnemo-data")))


@pytest.fixture
def fake():
    """A local fake Gemini HTTP server; the real google-genai client talks to it."""
    with FakeGemini() as server:
        yield server


@pytest.fixture
async def rt(tmp_path, fake):
    """The app's runtime over a tmp data dir, answering through the fake Gemini server."""
    runtime = Runtime(tmp_path / "data", model=GeminiModel("test-key", base_url=fake.url))
    yield runtime
    svc = await runtime.service()
    await svc.wait_background()
    await runtime.aclose()


# -- the HTTP API tests: one fake Gemini server and one app server per module -------------------


@pytest.fixture(scope="module")
def gemini(request):
    """A fake Gemini server shared by a module's tests, which `server` answers through. A module
    marked `pytest.mark.gemini_default(reply=...)` has it answer unscripted requests with it."""
    marker = request.node.get_closest_marker("gemini_default")
    options = {"default": marker.kwargs["reply"]} if marker else {}
    with FakeGemini(**options) as fake_server:
        yield fake_server


@pytest.fixture(scope="module")
def server(tmp_path_factory, gemini, request):
    """The whole web app (API + UI) on a free port for a module's tests: a fresh data dir, the
    real google-genai client against `gemini`. `pytest.mark.app_env(NAME="value")` sets
    settings the app reads when it starts."""
    from api_harness import ApiServer  # the whole app: imported by the modules that use it

    marker = request.node.get_closest_marker("app_env")
    with pytest.MonkeyPatch.context() as env:
        for name, value in (marker.kwargs if marker else {}).items():
            env.setenv(name, value)
        data = tmp_path_factory.mktemp(request.module.__name__.removeprefix("test_")) / "data"
        app_server = ApiServer(data, gemini.url)
    yield app_server
    app_server.stop()
