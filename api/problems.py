"""Errors as JSON problem documents (RFC 9457): `type`, `title`, `detail`, `status`.

Every error the API returns is one of the PROBLEMS below, by its slug; `type` is
`/api/v1/problems#<slug>` and GET /api/v1/problems lists them all. `detail` is the same
sentence the UI shows for the same condition (the service's user errors carry it), so a
script and a person get the same advice. Some problems add members: `errors` (which field,
what is wrong, and for YAML the line and column).

The facade's one error family (`assistant.errors.UserError`) is mapped in one table, ERRORS
(most specific class first); the title is the one the UI shows when the error has one. The
API's own conditions (no token, wrong media type) raise `ApiProblem`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from assistant.errors import (
    AssistantError,
    BlockedBySafety,
    InvalidInput,
    InvalidMessage,
    InvalidPersonaYaml,
    NotFound,
    NothingToRetry,
    PersonaRefused,
    PersonaUnavailable,
    QuotaExceeded,
    ReplyStreaming,
    RoundtableNotFound,
    RoundtableUnavailable,
    StorageError,
    UserError,
)

log = logging.getLogger("mnemo.api")

MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "/api/v1/problems#"


@dataclass(frozen=True)
class ProblemType:
    status: int
    title: str
    meaning: str  # for the /problems list and the docs


PROBLEMS: dict[str, ProblemType] = {
    "unauthorized": ProblemType(
        401, "Not signed in", "No token, or a token that is unknown or revoked."
    ),
    "forbidden": ProblemType(403, "Not allowed", "The token may not do this (admin only)."),
    "not-found": ProblemType(
        404, "Not found", "No such conversation, persona, version or route for this token."
    ),
    "method-not-allowed": ProblemType(405, "Method not allowed", "The route exists; the verb not."),
    "not-acceptable": ProblemType(
        406, "Not acceptable", "Accept asks for something other than JSON or an event stream."
    ),
    "unsupported-media-type": ProblemType(
        415, "Unsupported media type", "The body is neither JSON nor YAML as required."
    ),
    "invalid-request": ProblemType(
        422, "Invalid request", "A field, query parameter or body is malformed; see `errors`."
    ),
    "invalid-message": ProblemType(
        422, "Message not sent", "The message is empty or over 10,000 characters."
    ),
    "invalid-persona": ProblemType(
        422, "Persona not saved", "The persona does not validate; `errors` has line and column."
    ),
    "quota-exceeded": ProblemType(
        429, "Quota reached", "More messages this hour than MNEMO_QUOTA_PER_HOUR allows."
    ),
    "refused": ProblemType(
        409,
        "Not done",
        "A limit was reached, there is nothing to retry or revert, or a reply is still "
        "streaming into the conversation (reset and undo need it over first).",
    ),
    "model-refused": ProblemType(
        422, "The assistant could not answer", "The model's safety filters blocked the message."
    ),
    "roundtable-unavailable": ProblemType(
        409,
        "Roundtable unavailable",
        "The roundtable names personas you do not have, or its veto rule cannot be applied.",
    ),
    "model-unavailable": ProblemType(
        502, "The assistant could not answer", "The model failed or could not be reached."
    ),
    "storage-unavailable": ProblemType(
        503, "Storage unavailable", "The conversation database failed; nothing was changed."
    ),
    "internal": ProblemType(500, "Unexpected error", "A bug; the server log has the details."),
}


class ApiProblem(Exception):
    """An error the API itself detects (auth, media types); carries its problem slug."""

    def __init__(self, slug: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.slug = slug
        self.detail = detail
        self.extra = extra


def _located(exc: BaseException) -> dict[str, Any]:
    return {"errors": list(getattr(exc, "located", []))}


# The facade's user errors -> problem type (and extra members): the first matching row wins.
ERRORS: list[tuple[type[UserError], str, Callable[[BaseException], dict[str, Any]] | None]] = [
    (InvalidMessage, "invalid-message", None),
    (QuotaExceeded, "quota-exceeded", None),
    (NothingToRetry, "refused", None),
    (ReplyStreaming, "refused", None),
    (BlockedBySafety, "model-refused", None),
    (StorageError, "storage-unavailable", None),
    # A roundtable that is unknown or cannot be used is the user's to fix, not the model's.
    (RoundtableNotFound, "not-found", None),
    (RoundtableUnavailable, "roundtable-unavailable", None),
    (AssistantError, "model-unavailable", None),
    (NotFound, "not-found", None),
    (PersonaUnavailable, "not-found", None),
    (InvalidPersonaYaml, "invalid-persona", _located),
    (PersonaRefused, "refused", None),
    (InvalidInput, "invalid-request", None),
    (UserError, "invalid-request", None),
]


def problem(slug: str, detail: str, title: str | None = None, **extra: Any) -> dict[str, Any]:
    kind = PROBLEMS[slug]
    return {
        "type": TYPE_BASE + slug,
        "title": title or kind.title,
        "status": kind.status,
        "detail": detail,
        **extra,
    }


def problem_of(exc: BaseException) -> dict[str, Any]:
    """The problem document for any exception (unexpected ones become `internal`)."""
    if isinstance(exc, ApiProblem):
        return problem(exc.slug, exc.detail, **exc.extra)
    for error_class, slug, extra_of in ERRORS:
        if isinstance(exc, error_class):
            extra = extra_of(exc) if extra_of else {}
            return problem(slug, exc.message, getattr(exc, "title", None), **extra)
    log.error("unexpected error in an API call", exc_info=exc)
    return problem(
        "internal",
        "Something unexpected went wrong. Try again; if it keeps happening, the server log "
        "has the details.",
    )


def respond(document: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        document, status_code=document["status"], media_type=MEDIA_TYPE, headers=headers
    )


async def on_error(request: Request, exc: Exception) -> JSONResponse:
    headers = None
    if isinstance(exc, ApiProblem) and exc.slug == "unauthorized":
        headers = {"WWW-Authenticate": 'Bearer realm="mnemo"'}
    return respond(problem_of(exc), headers)


_HTTP_SLUGS = {401: "unauthorized", 404: "not-found", 405: "method-not-allowed"}


async def on_http_error(request: Request, exc: HTTPException) -> JSONResponse:
    slug = _HTTP_SLUGS.get(exc.status_code, "invalid-request")
    detail = {
        404: f"There is no API route {request.url.path}. GET /api/v1/docs lists them.",
        405: f"{request.method} is not allowed on {request.url.path}. GET /api/v1/docs "
        "lists the methods of each route.",
    }.get(exc.status_code, str(exc.detail))
    return respond(problem(slug, detail), exc.headers)


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    place = {"body": "body", "query": "query parameter", "path": "URL"}.get(str(loc[0]), "")
    return f"{place} {'.'.join(parts)}".strip() if parts else place or "request"


async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [
        {"field": _where(tuple(e.get("loc", ()))), "message": e.get("msg", "invalid")}
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"field": "request", "message": "invalid"}
    detail = f"{first['field']}: {first['message']}."
    if len(errors) > 1:
        detail += f" ({len(errors) - 1} more in `errors`.)"
    return respond(problem("invalid-request", detail, errors=errors))


def install(app: Any) -> None:
    """Register the handlers that turn every error into a problem document."""
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(Exception, on_error)
