"""Fixtures shared by the test modules: the fake Gemini server and an app runtime on it."""

from __future__ import annotations

import pytest
from fake_gemini import FakeGemini

from assistant.gemini import GeminiModel
from ui.runtime import Runtime


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
    await runtime.close()
