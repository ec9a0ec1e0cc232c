"""Conversation routes: list, create, read, change, delete, messages (paged), memory, reset,
and search over all of the owner's conversations.

A conversation of another owner is "not found", exactly like a missing one.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from assistant.errors import StorageError
from assistant.failopen import is_unsaved
from assistant.records import ConversationEdit

from . import schemas
from .auth import Facade, Owner
from .problems import ApiProblem

router = APIRouter(tags=["conversations"])

MAX_PAGE = 200
MAX_QUERY_CHARS = 200


STORAGE_DOWN = (
    "The conversation database is unavailable, so nothing was {done}. Check that the data "
    "directory is writable and has free space, then try again."
)


@router.get(
    "/conversations", response_model=list[schemas.ConversationOut], summary="Your conversations"
)
async def list_conversations(
    svc: Facade,
    owner: Owner,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
) -> list[dict[str, Any]]:
    """Newest activity first."""
    found = await svc.list(owner, limit)
    return [schemas.conversation_out(c) for c in found]


@router.post(
    "/conversations",
    response_model=schemas.ConversationOut,
    status_code=201,
    summary="Start a conversation",
)
async def create_conversation(
    svc: Facade, owner: Owner, body: schemas.ConversationIn | None = None
) -> dict[str, Any]:
    """An empty conversation with a persona (default: assistant); messages come next."""
    body = body or schemas.ConversationIn()
    created = await svc.create(
        owner,
        title=body.title,
        persona_id=body.persona_id,
        retention_minutes=body.retention_minutes,
    )
    if is_unsaved(created.id):  # the UI can chat unsaved while storage is down; a client can't
        raise StorageError(STORAGE_DOWN.format(done="created"), title="Storage unavailable")
    return schemas.conversation_out(created)


@router.get(
    "/conversations/{conversation_id}",
    response_model=schemas.ConversationOut,
    summary="One conversation",
)
async def get_conversation(svc: Facade, owner: Owner, conversation_id: str) -> dict[str, Any]:
    return schemas.conversation_out(await svc.get(owner, conversation_id))


@router.patch(
    "/conversations/{conversation_id}",
    response_model=schemas.ConversationOut,
    summary="Rename, change persona or retention",
)
async def patch_conversation(
    svc: Facade, owner: Owner, conversation_id: str, body: schemas.ConversationPatch
) -> dict[str, Any]:
    """Only the fields you send change, all together: if one is refused (an unknown
    persona, say), none changes. `retention_minutes: null` keeps it until deleted."""
    given = body.model_fields_set
    for name in ("title", "persona_id"):
        if name in given and getattr(body, name) is None:
            raise ApiProblem(
                "invalid-request", f"body {name}: cannot be null; leave it out to keep it."
            )
    edit = ConversationEdit(
        title=body.title if "title" in given else None,
        persona_id=body.persona_id if "persona_id" in given else None,
        retention_minutes=body.retention_minutes,
        change_retention="retention_minutes" in given,
    )
    return schemas.conversation_out(await svc.update(owner, conversation_id, edit))


@router.delete("/conversations/{conversation_id}", status_code=204, summary="Delete a conversation")
async def delete_conversation(svc: Facade, owner: Owner, conversation_id: str) -> Response:
    """Its messages and memory are removed for good."""
    await svc.delete(owner, conversation_id)
    return Response(status_code=204)


@router.get(
    "/conversations/{conversation_id}/messages",
    response_model=schemas.MessagesPage,
    summary="Messages, a page at a time",
)
async def messages(
    svc: Facade,
    owner: Owner,
    conversation_id: str,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size.")] = 50,
    before: Annotated[
        int | None, Query(ge=1, description="Only messages with a smaller id (paging back).")
    ] = None,
) -> dict[str, Any]:
    """The newest `limit` messages before `before`, oldest first: everything the user can
    scroll, summaries and messages folded into them included."""
    page = await svc.messages(owner, conversation_id, limit=limit, before_id=before)
    return {
        "messages": [schemas.message_out(t) for t in page.turns],
        "next_before": page.next_before,
    }


@router.get(
    "/conversations/{conversation_id}/memory",
    response_model=schemas.MemoryOut,
    summary="What is remembered and what the model receives next",
)
async def memory(
    svc: Facade,
    owner: Owner,
    conversation_id: str,
    draft: Annotated[
        str | None,
        Query(max_length=10_000, description="A message you might send: shows what it recalls."),
    ] = None,
) -> dict[str, Any]:
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
async def reset(svc: Facade, owner: Owner, conversation_id: str) -> dict[str, Any]:
    """Removes its messages and summaries; the conversation stays. Says what was cleared."""
    return schemas.reset_out(await svc.reset(owner, conversation_id))


@router.get("/search", response_model=schemas.SearchOut, summary="Search your conversations")
async def search(
    svc: Facade,
    owner: Owner,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="Words.")],
    limit: Annotated[int, Query(ge=1, le=100, description="Conversations at most.")] = 20,
) -> dict[str, Any]:
    """Titles and messages (summarized ones too), grouped by conversation."""
    found = await svc.search(owner, q, limit=limit)
    if not found.available:
        raise StorageError(STORAGE_DOWN.format(done="searched"), title="Storage unavailable")
    return {
        "query": found.query,
        "searchable": found.searchable,
        "results": [
            {
                "conversation": schemas.conversation_out(r.conversation),
                "title": r.title,
                "hits": [schemas.hit_out(h) for h in r.hits],
            }
            for r in found.results
        ],
    }
