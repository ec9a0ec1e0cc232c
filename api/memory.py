"""Memory routes: pinned facts, "about me", the user's summary, export and import (issue 16).

The same facade operations as the UI's memory panel. A conversation or pin of another owner is
"not found"; a refused fact, summary or import file is a 422 problem that says why, and a
refused import saves nothing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from . import schemas
from .auth import Facade, Owner

router = APIRouter(tags=["memory"])

MAX_IMPORT_BYTES = 20_000_000  # memory refuses larger files too; this stops reading early


class PinIn(schemas.Body):
    text: str = Field(max_length=2_000, description="The fact; at most 500 characters stored.")
    about_me: bool = Field(False, description="For all your conversations (when turned on).")


class PinOut(BaseModel):
    id: int
    content: str
    about_me: bool
    created_at: str | None


class PinsOut(BaseModel):
    pinned: list[PinOut]
    about_me: list[PinOut]
    about_me_on: bool


class AboutMeIn(schemas.Body):
    enabled: bool


class SummaryIn(schemas.Body):
    text: str | None = Field(None, max_length=20_000, description="None or blank: clear it.")


class SummaryOut(BaseModel):
    summary: str | None
    edited: bool


class ImportOut(BaseModel):
    conversations: list[schemas.ConversationOut]
    notes: list[str]


def pin_out(fact: Any) -> dict[str, Any]:
    return {
        "id": fact.id,
        "content": fact.content,
        "about_me": fact.about_me,
        "created_at": schemas.iso(fact.created_at),
    }


@router.get("/conversations/{conversation_id}/pins", response_model=PinsOut, summary="Pinned facts")
async def pins(svc: Facade, owner: Owner, conversation_id: str) -> dict[str, Any]:
    """This conversation's pinned facts, and your "about me" facts (sent when turned on)."""
    panel = await svc.memory(owner, conversation_id)
    return {
        "pinned": [pin_out(p) for p in panel.pinned],
        "about_me": [pin_out(p) for p in panel.about_me],
        "about_me_on": panel.about_me_on,
    }


@router.post(
    "/conversations/{conversation_id}/pins",
    response_model=PinOut,
    status_code=201,
    summary="Pin a fact",
)
async def pin(svc: Facade, owner: Owner, conversation_id: str, body: PinIn) -> dict[str, Any]:
    """Always in what the model receives, never summarized away."""
    return pin_out(await svc.pin(owner, conversation_id, body.text, about_me=body.about_me))


@router.delete("/pins/{fact_id}", status_code=204, summary="Delete a pinned fact")
async def unpin(svc: Facade, owner: Owner, fact_id: int) -> Response:
    await svc.unpin(owner, fact_id)
    return Response(status_code=204)


@router.put("/about-me", response_model=dict[str, bool], summary="Turn “about me” on or off")
async def about_me(svc: Facade, owner: Owner, body: AboutMeIn) -> dict[str, bool]:
    return {"about_me_on": await svc.set_about_me(owner, body.enabled)}


@router.put(
    "/conversations/{conversation_id}/summary",
    response_model=SummaryOut,
    summary="Write or clear the summary",
)
async def summary(
    svc: Facade, owner: Owner, conversation_id: str, body: SummaryIn
) -> dict[str, Any]:
    """Your text is what the model gets instead of the older messages, from the next one on."""
    written = await svc.write_summary(owner, conversation_id, body.text)
    return {"summary": written.content if written else None, "edited": bool(written)}


@router.get("/conversations/{conversation_id}/export", summary="Export one conversation")
async def export_one(svc: Facade, owner: Owner, conversation_id: str) -> Response:
    return _json(await svc.export(owner, conversation_id))


@router.get("/export", summary="Export all your conversations and “about me”")
async def export_all(svc: Facade, owner: Owner) -> Response:
    return _json(await svc.export(owner, None))


@router.post("/import", response_model=ImportOut, status_code=201, summary="Import an export")
async def import_file(svc: Facade, owner: Owner, request: Request) -> dict[str, Any]:
    """The body is an export file; it becomes new conversations with the same memory."""
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_IMPORT_BYTES:
            break  # memory says how large is too large
    imported = await svc.import_file(owner, bytes(raw))
    return {
        "conversations": [schemas.conversation_out(c) for c in imported.conversations],
        "notes": imported.notes,
    }


def _json(text: str) -> Response:
    return Response(text, media_type="application/json")
