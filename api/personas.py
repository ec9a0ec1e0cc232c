"""Persona routes: list, read, PUT a new version (YAML or JSON), versions, rollback, refresh.

A PUT saves a new version for the token's owner only, used from that owner's next message;
a body that does not validate is refused with every problem located (line and column for
YAML) and nothing is saved, so the version in use stays.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request

from assistant.errors import PersonaUnavailable

from . import schemas
from .auth import Facade, Owner, may_refresh
from .problems import ApiProblem

router = APIRouter(prefix="/personas", tags=["personas"])

YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain")
PUT_BODY = {
    "required": True,
    "content": {
        "application/yaml": {
            "schema": {"type": "string"},
            "example": "id: assistant\ndisplay_name: Mnemo\nrole_description: A terse helper.\n",
        },
        "application/json": {
            "schema": {"type": "object", "additionalProperties": True},
            "example": {"display_name": "Mnemo", "role_description": "A terse helper."},
        },
    },
}


async def _detail(svc: Facade, owner: str, persona_id: str) -> dict[str, Any]:
    document = await svc.persona(owner, persona_id)
    if document.fell_back:  # the facade shows the default persona for an unknown id
        raise PersonaUnavailable(
            f"There is no persona {persona_id!r}. GET /api/v1/personas lists yours; PUT one "
            "to create it."
        )
    return schemas.persona_detail(document)


@router.get("", response_model=list[schemas.PersonaSummary], summary="Your personas")
async def list_personas(svc: Facade, owner: Owner) -> list[dict[str, Any]]:
    """Every persona you can use, each in the version you use now."""
    return [schemas.persona_summary(p) for p in await svc.personas(owner)]


@router.post(
    "/refresh",
    response_model=schemas.RefreshOut,
    dependencies=[Depends(may_refresh)],
    summary="Re-read the built-in personas from disk",
)
async def refresh(svc: Facade) -> dict[str, Any]:
    """Reload the built-in YAML files now and report each one's problem (null: loaded). A
    broken file keeps its last good version in use. With MNEMO_ADMIN_TOKEN set, only that
    token may call this."""
    return {"builtins": await svc.refresh_personas()}


@router.get("/{persona_id}", response_model=schemas.PersonaDetail, summary="One persona")
async def get_persona(svc: Facade, owner: Owner, persona_id: str) -> dict[str, Any]:
    """The version you use now: its YAML, its fields and the system prompt it composes."""
    return await _detail(svc, owner, persona_id)


async def _put_body(request: Request) -> tuple[str | None, dict[str, Any] | None]:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = await request.body()
    if kind == "application/json":
        try:
            fields = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiProblem(
                "invalid-request", f"The JSON body does not parse: {exc}. Send an object."
            ) from exc
        if not isinstance(fields, dict):
            raise ApiProblem(
                "invalid-request",
                "The JSON body must be an object of persona fields, e.g. "
                '{"display_name": "…", "role_description": "…"}.',
            )
        return None, fields
    if kind in YAML_TYPES:
        try:
            return raw.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            raise ApiProblem("invalid-request", "The YAML body is not UTF-8 text.") from exc
    raise ApiProblem(
        "unsupported-media-type",
        f"Content-Type is {kind or 'missing'}; send the persona as application/yaml or as "
        "application/json.",
    )


@router.put(
    "/{persona_id}",
    response_model=schemas.PersonaDetail,
    openapi_extra={"requestBody": PUT_BODY},
    summary="Save a new version",
)
async def put_persona(
    request: Request, svc: Facade, owner: Owner, persona_id: str
) -> dict[str, Any]:
    """Validate and save a new version of the persona for you; your next message uses it.
    YAML is saved as sent (`id` must be the URL's); a JSON object of fields gets its `id`
    from the URL. Saving the version in use again adds no version."""
    yaml_text, fields = await _put_body(request)
    await svc.put_persona(owner, persona_id, yaml_text, fields)
    return await _detail(svc, owner, persona_id)


@router.get(
    "/{persona_id}/versions",
    response_model=list[schemas.PersonaVersionOut],
    summary="Versions of a persona",
)
async def versions(svc: Facade, owner: Owner, persona_id: str) -> list[dict[str, Any]]:
    """Your saved versions, newest first, then the built-in (version 0) if there is one."""
    document = await svc.persona(owner, persona_id)
    if document.fell_back:
        await _detail(svc, owner, persona_id)  # raises the not-found problem
    return [schemas.version_out(v, document.info.version) for v in document.versions]


@router.post(
    "/{persona_id}/rollback", response_model=schemas.PersonaDetail, summary="Use an older version"
)
async def rollback(
    svc: Facade, owner: Owner, persona_id: str, body: schemas.RollbackIn
) -> dict[str, Any]:
    """Use an earlier version (0 = the built-in) from your next message; history is kept."""
    await svc.rollback_persona(owner, persona_id, body.version)
    return await _detail(svc, owner, persona_id)
