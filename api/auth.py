"""Who is calling: `Authorization: Bearer <token>`, a token the owner made in the UI.

A request without a token, or with one that is unknown or revoked, gets 401 and nothing
else: the API never says whether a conversation exists to someone who cannot see it, and
another owner's conversation is simply not found (404), as in the UI.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from assistant.conversations import Conversations
from assistant.tokens import is_admin

from .problems import ApiProblem

bearer = HTTPBearer(
    auto_error=False,
    description="A token from the app's sidebar: API tokens → Create. Shown once.",
)

NO_TOKEN = (
    "No API token. Send `Authorization: Bearer <token>`; create a token in the app's "
    "sidebar under “API tokens”."
)
BAD_TOKEN = (
    "This API token is unknown or has been revoked. Create a new one in the app's sidebar "
    "under “API tokens”."
)
ADMIN_ONLY = (
    "Refreshing the built-in personas takes the server's admin token (MNEMO_ADMIN_TOKEN) on "
    "this server, not a user's token."
)


async def facade(request: Request) -> Conversations:
    """The service facade the UI uses too (opening the store on first use)."""
    return await request.app.state.runtime.conversations()


Facade = Annotated[Conversations, Depends(facade)]


def _secret(credentials: HTTPAuthorizationCredentials | None) -> str:
    if credentials is None or not credentials.credentials.strip():
        raise ApiProblem("unauthorized", NO_TOKEN)
    return credentials.credentials.strip()


async def current_owner(
    svc: Facade,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str:
    """The owner the token belongs to (401 unless it is an active token)."""
    token = await svc.check_token(_secret(credentials))
    if token is None:
        raise ApiProblem("unauthorized", BAD_TOKEN)
    return token.owner


async def may_refresh(
    request: Request,
    svc: Facade,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """The admin token when one is configured; otherwise any active user token."""
    secret = _secret(credentials)
    admin = request.app.state.admin_token
    if is_admin(secret, admin):
        return
    token = await svc.check_token(secret)
    if token is None:
        raise ApiProblem("unauthorized", BAD_TOKEN)
    if admin:
        raise ApiProblem("forbidden", ADMIN_ONLY)


Owner = Annotated[str, Depends(current_owner)]
