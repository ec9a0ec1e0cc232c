"""Conversation routes: list, create, read, change, delete, messages (paged), memory, reset,
and search over all of the owner's conversations.

A conversation of another owner is "not found", exactly like a missing one.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from . import schemas
from .auth import Owner

router = APIRouter(tags=["conversations"])

MAX_PAGE = 200
MAX_QUERY_CHARS = 200


def _svc(request: Request) -> Any:
    return request.app.state.conversations


@router.get(
    "/conversations", response_model=list[schemas.ConversationOut], summary="Your conversations"
)
async def list_conversations(
    request: Request,
    owner: Owner,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
) -> list[dict[str, Any]]:
    """Newest activity first."""
    found = await _svc(request).list_conversations(owner, limit)
    return [schemas.conversation_out(c) for c in found]


@router.post(
    "/conversations",
    response_model=schemas.ConversationOut,
    status_code=201,
    summary="Start a conversation",
)
async def create_conversation(
    request: Request, owner: Owner, body: schemas.ConversationIn | None = None
) -> dict[str, Any]:
    """An empty conversation with a persona (default: assistant); messages come next."""
    body = body or schemas.ConversationIn()
    created = await _svc(request).create(owner, body.persona_id, body.title, body.retention_minutes)
    return schemas.conversation_out(created)


@router.get(
    "/conversations/{conversation_id}",
    response_model=schemas.ConversationOut,
    summary="One conversation",
)
async def get_conversation(request: Request, owner: Owner, conversation_id: str) -> dict[str, Any]:
    return schemas.conversation_out(await _svc(request).get(owner, conversation_id))


@router.patch(
    "/conversations/{conversation_id}",
    response_model=schemas.ConversationOut,
    summary="Rename, change persona or retention",
)
async def patch_conversation(
    request: Request, owner: Owner, conversation_id: str, body: schemas.ConversationPatch
) -> dict[str, Any]:
    """Only the fields you send change. `retention_minutes: null` keeps it until deleted."""
    svc = _svc(request)
    given = body.model_fields_set
    conversation = await svc.get(owner, conversation_id)
    if "persona_id" in given:  # check it exists before changing anything
        await svc.persona(owner, body.persona_id or "")
    if "title" in given:
        conversation = await svc.rename(owner, conversation_id, body.title or "")
    if "persona_id" in given:
        conversation = await svc.set_persona(owner, conversation_id, body.persona_id or "")
    if "retention_minutes" in given:
        conversation = await svc.set_retention(owner, conversation_id, body.retention_minutes)
    return schemas.conversation_out(conversation)


@router.delete("/conversations/{conversation_id}", status_code=204, summary="Delete a conversation")
async def delete_conversation(request: Request, owner: Owner, conversation_id: str) -> Response:
    """Its messages and memory are removed for good."""
    await _svc(request).delete(owner, conversation_id)
    return Response(status_code=204)


@router.get(
    "/conversations/{conversation_id}/messages",
    response_model=schemas.MessagesPage,
    summary="Messages, a page at a time",
)
async def messages(
    request: Request,
    owner: Owner,
    conversation_id: str,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size.")] = 50,
    before: Annotated[
        int | None, Query(ge=1, description="Only messages with a smaller id (paging back).")
    ] = None,
) -> dict[str, Any]:
    """The newest `limit` messages before `before`, oldest first: everything the user can
    scroll, summaries and messages folded into them included."""
    turns = await _svc(request).transcript(owner, conversation_id, limit, before)
    older = turns[0].id if len(turns) == limit and turns else None
    return {"messages": [schemas.message_out(t) for t in turns], "next_before": older}


@router.get(
    "/conversations/{conversation_id}/memory",
    response_model=schemas.MemoryOut,
    summary="What is remembered and what the model receives next",
)
async def memory(
    request: Request,
    owner: Owner,
    conversation_id: str,
    draft: Annotated[
        str | None,
        Query(max_length=10_000, description="A message you might send: shows what it recalls."),
    ] = None,
) -> dict[str, Any]:
    svc = _svc(request)
    status = await svc.status(owner, conversation_id)
    preview = await svc.preview(owner, conversation_id, draft)
    return {
        "status": schemas.status_out(status),
        "summary": preview.summary,
        "next": schemas.next_prompt_out(preview),
    }


@router.post(
    "/conversations/{conversation_id}/reset",
    response_model=schemas.ResetOut,
    summary="Forget the conversation's memory",
)
async def reset(request: Request, owner: Owner, conversation_id: str) -> dict[str, Any]:
    """Removes its messages and summaries; the conversation stays. Says what was cleared."""
    return schemas.reset_out(await _svc(request).reset(owner, conversation_id))


@router.get("/search", response_model=schemas.SearchOut, summary="Search your conversations")
async def search(
    request: Request,
    owner: Owner,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="Words.")],
    limit: Annotated[int, Query(ge=1, le=100, description="Conversations at most.")] = 20,
) -> dict[str, Any]:
    """Titles and messages (summarized ones too), grouped by conversation."""
    found = await _svc(request).search(owner, q, limit)
    return {
        "query": q,
        "results": [
            {
                "conversation": schemas.conversation_out(c),
                "hits": [schemas.hit_out(h) for h in hits],
            }
            for c, hits in found
        ],
    }
