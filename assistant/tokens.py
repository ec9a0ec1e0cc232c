"""Per-user tokens for the HTTP API: issued and revoked from the UI, checked by the API.

A token is `mnemo_` + 32 random bytes (`secrets.token_urlsafe`), shown to its owner once. The
store keeps only its SHA-256 — a fast hash is enough for 256 random bits, and it lets a
request be checked with one indexed lookup — plus a name, the last four characters (so the
owner can tell tokens apart in the list), and when it was created, last used and revoked.
A token acts as its owner: the API sees exactly the conversations and personas the owner
sees in the UI.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol

from memory import ApiToken

PREFIX = "mnemo_"
_RANDOM_BYTES = 32
# The longest token worth hashing: anything longer is not ours (and is not hashed at length).
MAX_TOKEN_CHARS = 100


class TokenStore(Protocol):
    async def add_token(self, owner: str, name: str, token_hash: str, hint: str) -> ApiToken: ...
    async def list_tokens(self, owner: str) -> list[ApiToken]: ...
    async def revoke_token(self, owner: str, token_id: str) -> ApiToken: ...
    async def token_by_hash(self, token_hash: str) -> ApiToken | None: ...


@dataclass(frozen=True)
class IssuedToken:
    """A new token: `secret` is shown once and never again."""

    token: ApiToken
    secret: str


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def is_admin(secret: str | None, admin_token: str | None) -> bool:
    """Whether `secret` is the operator's admin token (compared in constant time)."""
    if not secret or not admin_token:
        return False
    return hmac.compare_digest(secret.encode("utf-8"), admin_token.encode("utf-8"))


class ApiTokens:
    """Issue, list, revoke and check API tokens over the store's token verbs."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store

    async def issue(self, owner: str, name: str) -> IssuedToken:
        secret = PREFIX + secrets.token_urlsafe(_RANDOM_BYTES)
        token = await self.store.add_token(owner, name, token_hash(secret), secret[-4:])
        return IssuedToken(token, secret)

    async def list(self, owner: str) -> list[ApiToken]:
        return await self.store.list_tokens(owner)

    async def revoke(self, owner: str, token_id: str) -> ApiToken:
        return await self.store.revoke_token(owner, token_id)

    async def check(self, secret: str) -> ApiToken | None:
        """The active token `secret` is, or None (unknown, revoked, or not a token at all)."""
        if not secret.startswith(PREFIX) or len(secret) > MAX_TOKEN_CHARS:
            return None
        return await self.store.token_by_hash(token_hash(secret))
