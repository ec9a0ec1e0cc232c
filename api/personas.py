"""Persona routes: list, read, PUT a new version (YAML or JSON), versions, rollback, refresh.

A PUT saves a new version for the token's owner only, used from that owner's next message;
a body that does not validate is refused with every problem located (line and column for
YAML) and nothing is saved, so the version in use stays.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request

from . import schemas
from .auth import Owner, may_refresh
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


def _svc(request: Request) -> Any:
    return request.app.state.conversations


@router.get("", response_model=list[schemas.PersonaSummary], summary="Your personas")
async def list_personas(request: Request, owner: Owner) -> list[dict[str, Any]]:
    """Every persona you can use, each in the version you use now."""
    return [schemas.persona_summary(p) for p in await _svc(request).list_personas(owner)]


@router.post(
    "/refresh",
    response_model=schemas.RefreshOut,
    dependencies=[Depends(may_refresh)],
    summary="Re-read the built-in personas from disk",
)
async def refresh(request: Request) -> dict[str, Any]:
    """Reload the built-in YAML files now and report each one's problem (null: loaded). A
    broken file keeps its last good version in use. With MNEMO_ADMIN_TOKEN set, only that
    token may call this."""
    return {"builtins": await _svc(request).refresh_personas()}


@router.get("/{persona_id}", response_model=schemas.PersonaDetail, summary="One persona")
async def get_persona(request: Request, owner: Owner, persona_id: str) -> dict[str, Any]:
    """The version you use now: its YAML, its fields and the system prompt it composes."""
    svc = _svc(request)
    found = await svc.persona(owner, persona_id)
    return schemas.persona_detail(found, svc.system_prompt(found.persona))


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
async def put_persona(request: Request, owner: Owner, persona_id: str) -> dict[str, Any]:
    """Validate and save a new version of the persona for you; your next message uses it.
    YAML is saved as sent (`id` must be the URL's); a JSON object of fields gets its `id`
    from the URL. Saving the version in use again adds no version."""
    yaml_text, fields = await _put_body(request)
    svc = _svc(request)
    saved = await svc.put_persona(owner, persona_id, yaml_text, fields)
    return schemas.persona_detail(saved, svc.system_prompt(saved.persona))


@router.get(
    "/{persona_id}/versions",
    response_model=list[schemas.PersonaVersionOut],
    summary="Versions of a persona",
)
async def versions(request: Request, owner: Owner, persona_id: str) -> list[dict[str, Any]]:
    """Your saved versions, newest first, then the built-in (version 0) if there is one."""
    svc = _svc(request)
    in_use = (await svc.persona(owner, persona_id)).version
    return [schemas.version_out(v, in_use) for v in await svc.persona_versions(owner, persona_id)]


@router.post(
    "/{persona_id}/rollback", response_model=schemas.PersonaDetail, summary="Use an older version"
)
async def rollback(
    request: Request, owner: Owner, persona_id: str, body: schemas.RollbackIn
) -> dict[str, Any]:
    """Use an earlier version (0 = the built-in) from your next message; history is kept."""
    svc = _svc(request)
    found = await svc.rollback_persona(owner, persona_id, body.version)
    return schemas.persona_detail(found, svc.system_prompt(found.persona))
