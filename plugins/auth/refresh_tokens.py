"""Refresh tokens of the ``jwt`` issuer: single use, rotated, grouped in families, stored hashed.

A token reads ``gwr_<id>_<secret>`` (:class:`~gateway_plugins.auth.keys.TokenFormat`); only its SHA-256 digest is
stored, with its family, its grant (subject, tenant, scopes), its expiry and when it was used or revoked.
``gateway tokens issue`` starts a family; each refresh marks the presented token used and adds its successor to
the family, in one transaction that excludes every other refresh of that token (``BEGIN IMMEDIATE`` on SQLite,
``SELECT ... FOR UPDATE`` on PostgreSQL), so of two concurrent presentations only one rotates.

Presenting a token that was already used is the sign that it leaked (OAuth 2.0 Security BCP, RFC 9700 §4.14.2):
the whole family is revoked, so the successor a legitimate client holds stops working too, and its owner has to
sign in again.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from gateway.api import Migration, RelationalStore, Transaction
from gateway_plugins.auth.keys import HASH_SCHEME, TokenFormat, digest, stored_datetime

NAMESPACE = "auth_refresh_tokens"
REFRESH_TOKENS = TokenFormat("gwr_")

MIGRATIONS = (
    Migration(
        version=1,
        name="refresh_tokens",
        sql="""
            CREATE TABLE auth_refresh_tokens (
                id TEXT PRIMARY KEY,
                family_id TEXT NOT NULL,
                token_hash TEXT NOT NULL,
                hash_scheme TEXT NOT NULL,
                subject TEXT NOT NULL,
                tenant TEXT,
                scopes TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                used_at TIMESTAMPTZ,
                revoked_at TIMESTAMPTZ
            );
            CREATE INDEX auth_refresh_tokens_family ON auth_refresh_tokens (family_id);
            CREATE INDEX auth_refresh_tokens_subject ON auth_refresh_tokens (subject);
            CREATE INDEX auth_refresh_tokens_expires ON auth_refresh_tokens (expires_at)
        """,
    ),
)

Refusal = Literal["malformed", "unknown", "expired", "revoked", "reused"]

_SELECT = (
    "SELECT id, family_id, token_hash, hash_scheme, subject, tenant, scopes, expires_at, used_at, revoked_at"
    " FROM auth_refresh_tokens WHERE id = :id"
)
_INSERT = (
    "INSERT INTO auth_refresh_tokens (id, family_id, token_hash, hash_scheme, subject, tenant, scopes, created_at,"
    " expires_at) VALUES (:id, :family_id, :token_hash, :hash_scheme, :subject, :tenant, :scopes, :created_at,"
    " :expires_at)"
)


@dataclass(frozen=True)
class Grant:
    """What a refresh token stands for: the principal its access tokens name, and its family."""

    subject: str
    tenant: str | None
    scopes: frozenset[str]
    family_id: str = field(default_factory=lambda: secrets.token_hex(16))


@dataclass(frozen=True)
class IssuedRefreshToken:
    """A new refresh token. ``token`` is the only copy of its secret: it goes to the client, never to a log."""

    token_id: str
    grant: Grant
    expires_at: datetime
    token: str = field(repr=False)


@dataclass(frozen=True)
class Rotation:
    """The outcome of presenting a refresh token: its successor, or why it was refused."""

    issued: IssuedRefreshToken | None = None
    refused: Refusal | None = None
    family_id: str | None = None
    """The presented token's family when it was found (for the log of a reuse)."""


class RefreshTokenTable:
    """The ``auth_refresh_tokens`` table, through the :class:`gateway.api.RelationalStore` protocol."""

    def __init__(self, store: RelationalStore) -> None:
        self._store = store
        self._lock_clause = " FOR UPDATE" if store.dialect == "postgres" else ""

    async def migrate(self) -> None:
        await self._store.migrate(NAMESPACE, MIGRATIONS)

    async def issue(self, grant: Grant, *, now: datetime, lifetime: timedelta) -> IssuedRefreshToken:
        """Add a token to ``grant``'s family (a new family when the grant is new)."""
        async with self._store.transaction() as tx:
            return await self._insert(tx, grant, now, lifetime)

    async def rotate(self, token: str, *, now: datetime, lifetime: timedelta) -> Rotation:
        """Spend ``token`` and issue its successor, or refuse it. A reused token revokes its whole family (and
        that revocation is committed, though the caller is refused)."""
        token_id = REFRESH_TOKENS.parse(token)
        if token_id is None:
            return Rotation(refused="malformed")
        async with self._store.transaction() as tx:
            row = await tx.fetch_one(_SELECT + self._lock_clause, {"id": token_id})
            if row is None or not _matches(token, row):
                if row is None:
                    digest(token)  # the same work as a mismatch, so timing does not tell the two apart
                return Rotation(refused="unknown")
            family = row["family_id"]
            if row["revoked_at"] is not None:
                return Rotation(refused="revoked", family_id=family)
            if stored_datetime(row["expires_at"]) <= now:
                return Rotation(refused="expired", family_id=family)
            if row["used_at"] is not None:
                await self._revoke(tx, "family_id = :family_id", {"family_id": family}, now)
                return Rotation(refused="reused", family_id=family)
            spend = "UPDATE auth_refresh_tokens SET used_at = :now WHERE id = :id"
            await tx.execute(spend, {"id": token_id, "now": now})
            grant = Grant(row["subject"], row["tenant"], frozenset(row["scopes"].split()), family)
            return Rotation(issued=await self._insert(tx, grant, now, lifetime), family_id=family)

    async def revoke_principal(self, subject: str, tenant: str | None, *, now: datetime) -> int:
        """Revoke every live refresh token of ``subject`` (in ``tenant``); returns how many."""
        where = "subject = :subject AND " + ("tenant = :tenant" if tenant is not None else "tenant IS NULL")
        async with self._store.transaction() as tx:
            return await self._revoke(tx, where, {"subject": subject, "tenant": tenant}, now)

    async def prune(self, *, now: datetime) -> int:
        """Forget tokens that expired (an expired token is refused whether its row exists or not)."""
        return await self._store.execute("DELETE FROM auth_refresh_tokens WHERE expires_at <= :now", {"now": now})

    @staticmethod
    async def _revoke(tx: Transaction, where: str, params: dict[str, Any], now: datetime) -> int:
        return await tx.execute(
            f"UPDATE auth_refresh_tokens SET revoked_at = :now WHERE {where} AND revoked_at IS NULL",
            {**{k: v for k, v in params.items() if v is not None}, "now": now},
        )

    @staticmethod
    async def _insert(tx: Transaction, grant: Grant, now: datetime, lifetime: timedelta) -> IssuedRefreshToken:
        token_id, token = REFRESH_TOKENS.new()
        expires_at = now + lifetime
        await tx.execute(
            _INSERT,
            {
                "id": token_id,
                "family_id": grant.family_id,
                "token_hash": digest(token),
                "hash_scheme": HASH_SCHEME,
                "subject": grant.subject,
                "tenant": grant.tenant,
                "scopes": " ".join(sorted(grant.scopes)),
                "created_at": now,
                "expires_at": expires_at,
            },
        )
        return IssuedRefreshToken(token_id=token_id, grant=grant, expires_at=expires_at, token=token)


def _matches(token: str, row: dict[str, Any]) -> bool:
    return row["hash_scheme"] == HASH_SCHEME and hmac.compare_digest(digest(token), row["token_hash"])
