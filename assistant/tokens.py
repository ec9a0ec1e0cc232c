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
from typing import Any

from memory import ApiToken

PREFIX = "mnemo_"
_RANDOM_BYTES = 32
# The longest token worth hashing: anything longer is not ours (and is not hashed at length).
MAX_TOKEN_CHARS = 100


@dataclass(frozen=True)
class IssuedToken:
    """A new token: `secret` is shown once and never again."""

    token: ApiToken
    secret: str


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(_RANDOM_BYTES)


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def could_be_token(secret: str) -> bool:
    """Cheap check before a lookup: ours start with the prefix and are not huge."""
    return secret.startswith(PREFIX) and len(secret) <= MAX_TOKEN_CHARS


def is_admin(secret: str | None, admin_token: str | None) -> bool:
    """Whether `secret` is the operator's admin token (compared in constant time)."""
    if not secret or not admin_token:
        return False
    return hmac.compare_digest(secret.encode("utf-8"), admin_token.encode("utf-8"))


class TokenOps:
    """Mixed into `Conversations`: API tokens, never degraded (a token that cannot be checked
    lets nobody in). Needs `self.store` and the facade's `user_errors`."""

    store: Any

    async def issue_token(self, owner: str, name: str) -> IssuedToken:
        """A new API token for `owner`; its secret is in the result and nowhere else."""
        with user_errors("create the API token"):
            secret = new_secret()
            token = await self.store.add_token(owner, name, token_hash(secret), secret[-4:])
            return IssuedToken(token, secret)

    async def list_tokens(self, owner: str) -> list[ApiToken]:
        """The owner's tokens, newest first, revoked ones included."""
        with user_errors("list your API tokens"):
            return await self.store.list_tokens(owner)

    async def revoke_token(self, owner: str, token_id: str) -> ApiToken:
        with user_errors("revoke the API token"):
            return await self.store.revoke_token(owner, token_id)

    async def check_token(self, secret: str) -> ApiToken | None:
        """The active token `secret` is, or None (unknown, revoked, not a token at all)."""
        if not could_be_token(secret):
            return None
        with user_errors("check the API token"):
            return await self.store.token_by_hash(token_hash(secret))


def user_errors(action: str) -> Any:
    # The facade's one error table; conversations.py imports this module, hence here.
    from .conversations import user_errors as table

    return table(action)
