"""The HTTP API, /api/v1: personas, conversations and streamed replies for scripts and other
front ends, calling the same service facade as the UI so the two cannot drift.

    web = create_web_app(runtime)             # FastAPI: /api/v1/... (docs at /api/v1/docs)
    gr.mount_gradio_app(web, demo, path="/")  # the UI beside it: one server, one port

Auth is a per-owner bearer token made in the UI (see `auth`); every error is a JSON problem
document (see `problems`); replies stream as server-sent events (see `messages`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from assistant.errors import UserError
from assistant.runtime import Runtime

from . import conversations, memory, messages, personas, problems
from .problems import PROBLEMS

PREFIX = "/api/v1"
VERSION = "1.0"

DESCRIPTION = """
Mnemo's conversations, memory and personas over HTTP.

**Auth**: every call takes `Authorization: Bearer <token>`. Create a token in the app's
sidebar under *API tokens*; it is shown once. A token acts as you: it sees your
conversations and personas, nobody else's.

**Replies** to `POST /conversations/{id}/messages` stream as server-sent events (`delta`
events, then one `done` event), or come as one JSON body with `Accept: application/json`
or `?stream=false`. Your message is saved before the model is called; if you disconnect,
the reply still finishes and is saved. While the model is silent, the stream sends a
comment line (`: keep-alive`) every 15 seconds (`MNEMO_SSE_HEARTBEAT`), so proxies keep it.

**Errors** are problem documents (`application/problem+json`): `type`, `title`, `status`,
`detail` (the advice the app shows), sometimes `errors` (field, message, line, column).
"""


def create_api(
    runtime: Runtime,
    admin_token: str | None = None,
    heartbeat_s: float = messages.HEARTBEAT_S,
) -> FastAPI:
    """The API as an ASGI app to mount at /api/v1 (routes are relative to it), calling the
    runtime's `Conversations` facade. `heartbeat_s`: see api/messages.py."""
    api = FastAPI(
        title="Mnemo API",
        version=VERSION,
        description=DESCRIPTION,
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    api.state.runtime = runtime
    api.state.admin_token = admin_token
    api.state.heartbeat_s = heartbeat_s
    api.state.turns = messages.Turns()
    api.add_exception_handler(problems.ApiProblem, problems.on_error)
    api.add_exception_handler(UserError, problems.on_error)
    problems.install(api)
    for module in (personas, conversations, messages, memory):
        api.include_router(module.router)

    @api.get("/problems", tags=["errors"], summary="The kinds of error this API returns")
    async def problem_types() -> dict[str, dict[str, Any]]:
        return {
            slug: {"status": p.status, "title": p.title, "meaning": p.meaning}
            for slug, p in PROBLEMS.items()
        }

    return api


def create_web_app(
    runtime: Runtime,
    admin_token: str | None = None,
    heartbeat_s: float = messages.HEARTBEAT_S,
) -> FastAPI:
    """The server's root app: the API at /api/v1; mount the UI at "/" afterwards.

    On shutdown, replies still streaming finish and are saved, then the runtime closes (its
    background work done, the store and the model client closed).
    """
    api = create_api(runtime, admin_token, heartbeat_s)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await api.state.turns.drain()
        await runtime.aclose()

    web = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    web.mount(PREFIX, api)
    web.state.api = api
    return web
