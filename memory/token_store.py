"""API tokens in the SQLite store: only their SHA-256 is kept (a mixin of ConversationStore)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import replace

from . import sql
from .connection import Connections
from .errors import InvalidInput, TokenNotFound, TooManyTokens
from .records import ApiToken
from .validation import check_owner, clean_token_name

MAX_TOKENS_PER_OWNER = 20  # active API tokens per owner
MAX_TOKENS_LISTED = 100
TOKEN_TOUCH_EVERY_S = 60.0  # how often a token's last use is written
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class TokenStore:
    """The token verbs; the store provides the connections and the clock."""

    _db: Connections
    _clock: Callable[[], float]

    async def add_token(self, owner: str, name: str, token_hash: str, hint: str) -> ApiToken:
        """Record a new API token by its SHA-256 (hex); the token itself is never stored."""
        check_owner(owner)
        name = clean_token_name(name)
        if not _SHA256_HEX.fullmatch(token_hash or ""):
            raise InvalidInput("token_hash must be the 64-character hex SHA-256 of the token.")
        now = self._clock()
        token_id = "tok_" + secrets.token_urlsafe(9)
        async with self._db.write() as db:
            rows = await db.execute_fetchall(sql.COUNT_ACTIVE_TOKENS, (owner,))
            if rows[0][0] >= MAX_TOKENS_PER_OWNER:
                raise TooManyTokens(
                    f"You already have {MAX_TOKENS_PER_OWNER} API tokens. Revoke one you no "
                    "longer use, then create the new one."
                )
            await db.execute(sql.INSERT_TOKEN, (token_id, owner, name, hint[-4:], now, token_hash))
        return ApiToken(token_id, owner, name, hint[-4:], now, None, None)

    async def list_tokens(self, owner: str) -> list[ApiToken]:
        """The owner's API tokens, newest first, revoked ones included (they say when)."""
        rows = await self._db.read_one(sql.LIST_TOKENS, (owner, MAX_TOKENS_LISTED))
        return [ApiToken(*r) for r in rows]

    async def revoke_token(self, owner: str, token_id: str) -> ApiToken:
        """Revoke one of the owner's tokens at once; revoking twice keeps the first time."""
        async with self._db.write() as db:
            await db.execute(sql.REVOKE_TOKEN, (self._clock(), token_id, owner))
            rows = await db.execute_fetchall(sql.OWNED_TOKEN, (token_id, owner))
        if not rows:
            raise TokenNotFound("That API token does not exist. Refresh the list of tokens.")
        return ApiToken(*rows[0])

    async def token_by_hash(self, token_hash: str) -> ApiToken | None:
        """The active token with this SHA-256, or None. Marks it used (at most once a
        minute, so a busy client does not turn every request into a write)."""
        rows = await self._db.read_one(sql.ACTIVE_TOKEN_BY_HASH, (token_hash,))
        if not rows:
            return None
        token = ApiToken(*rows[0])
        now = self._clock()
        if token.last_used_at is None or now - token.last_used_at >= TOKEN_TOUCH_EVERY_S:
            # One hop: every client's first request of a minute makes this write.
            await self._db.transact(lambda db: db.execute(sql.TOUCH_TOKEN, (now, token.id)))
            token = replace(token, last_used_at=now)
        return token
