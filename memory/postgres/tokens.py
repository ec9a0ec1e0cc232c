"""API tokens on PostgreSQL: the same verbs and rules as the SQLite store (memory/store.py).

Only a token's SHA-256 is stored. Adding one takes an advisory lock for the owner, so two
replicas creating tokens at once still respect the per-owner limit. A mixin of `PostgresStore`.
"""

from __future__ import annotations

import secrets
from dataclasses import replace

from ..errors import InvalidInput, TokenNotFound, TooManyTokens
from ..records import ApiToken
from ..token_store import _SHA256_HEX, MAX_TOKENS_LISTED, MAX_TOKENS_PER_OWNER, TOKEN_TOUCH_EVERY_S
from ..validation import check_owner, clean_token_name
from .text import check_text

COLUMNS = "id, owner, name, hint, created_at, last_used_at, revoked_at"


class Tokens:
    async def add_token(self, owner: str, name: str, token_hash: str, hint: str) -> ApiToken:
        """Record a new API token by its SHA-256 (hex); the token itself is never stored."""
        check_owner(owner)
        name = clean_token_name(name)
        if not _SHA256_HEX.fullmatch(token_hash or ""):
            raise InvalidInput("token_hash must be the 64-character hex SHA-256 of the token.")
        check_text(owner, hint)
        now = self._clock()
        token_id = "tok_" + secrets.token_urlsafe(9)
        async with self._write() as conn:
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('mnemo.tokens:' || %s, 0))",
                (owner,),
            )
            cur = await conn.execute(
                "SELECT count(*) FROM api_tokens WHERE owner = %s AND revoked_at IS NULL",
                (owner,),
            )
            if (await cur.fetchone())[0] >= MAX_TOKENS_PER_OWNER:
                raise TooManyTokens(
                    f"You already have {MAX_TOKENS_PER_OWNER} API tokens. Revoke one you no "
                    "longer use, then create the new one."
                )
            await conn.execute(
                "INSERT INTO api_tokens (id, owner, name, hint, created_at, token_hash) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (token_id, owner, name, hint[-4:], now, token_hash),
            )
        return ApiToken(token_id, owner, name, hint[-4:], now, None, None)

    async def list_tokens(self, owner: str) -> list[ApiToken]:
        """The owner's API tokens, newest first, revoked ones included (they say when)."""
        rows = await self._fetch(
            f"SELECT {COLUMNS} FROM api_tokens WHERE owner = %(owner)s "
            "ORDER BY created_at DESC, seq DESC LIMIT %(limit)s",
            {"owner": owner, "limit": MAX_TOKENS_LISTED},
        )
        return [ApiToken(*r) for r in rows]

    async def revoke_token(self, owner: str, token_id: str) -> ApiToken:
        """Revoke one of the owner's tokens at once; revoking twice keeps the first time."""
        rows = await self._fetch(
            "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, %(now)s) "
            f"WHERE id = %(id)s AND owner = %(owner)s RETURNING {COLUMNS}",
            {"now": self._clock(), "id": token_id, "owner": owner},
        )
        if not rows:
            raise TokenNotFound("That API token does not exist. Refresh the list of tokens.")
        return ApiToken(*rows[0])

    async def token_by_hash(self, token_hash: str) -> ApiToken | None:
        """The active token with this SHA-256, or None. Marks it used (at most once a
        minute, so a busy client does not turn every request into a write)."""
        if "\x00" in (token_hash or ""):
            return None
        rows = await self._fetch(
            f"SELECT {COLUMNS} FROM api_tokens WHERE token_hash = %(h)s AND revoked_at IS NULL",
            {"h": token_hash},
        )
        if not rows:
            return None
        token = ApiToken(*rows[0])
        now = self._clock()
        if token.last_used_at is None or now - token.last_used_at >= TOKEN_TOUCH_EVERY_S:
            await self._fetch(
                "UPDATE api_tokens SET last_used_at = %(now)s WHERE id = %(id)s RETURNING 1",
                {"now": now, "id": token.id},
            )
            token = replace(token, last_used_at=now)
        return token
