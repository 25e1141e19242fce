"""The gateway as its own token issuer (``[plugins.auth.jwt.issuing]``): access tokens and refresh-token rotation.

``gateway tokens issue`` mints a first pair for a subject, tenant and scopes; ``POST /api/v1/auth/refresh`` with
``{"refresh_token": ...}`` answers ``{"access_token", "refresh_token", "expires_in"}``: a new access token (900 s by
default) and the presented refresh token's successor (see :mod:`gateway_plugins.auth.refresh_tokens` for rotation
and reuse detection). An access token is a JWT the ``jwt`` authenticator accepts like any other (``iss``, ``aud``,
``sub``, ``exp``, ``iat``, ``jti``, the scopes and the tenant under the configured claim names), signed with the
configured secret (HS*) or private key. It stays valid until it expires, even after its family is revoked: keep
``access_token_seconds`` short.

Neither token is ever logged: log lines name the family and the subject only.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import jwt
import structlog
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import (
    CallContext,
    RelationalStore,
    RestRoute,
    ServiceUnavailable,
    ToolError,
)
from gateway_plugins.auth.headers import refuse
from gateway_plugins.auth.jwt_keys import SigningKey
from gateway_plugins.auth.keys import normalize_scopes
from gateway_plugins.auth.refresh_tokens import Grant, RefreshTokenTable

log = structlog.get_logger(__name__)

_PRUNE_EVERY = 1000
_REFUSALS = {
    "malformed": "malformed refresh token",
    "unknown": "unknown refresh token",
    "expired": "refresh token expired",
    "revoked": "refresh token revoked",
    "reused": "refresh token already used: every token of its family is now revoked; sign in again",
}


class RefreshRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    refresh_token: str = Field(min_length=1, max_length=200, description="The refresh token of the last exchange")


class TokenPair(BaseModel):
    access_token: str = Field(description="A JWT for 'Authorization: Bearer'")
    refresh_token: str = Field(description="Single use: exchange it for the next pair before it expires")
    expires_in: int = Field(description="Seconds the access token is valid")


def utcnow() -> datetime:
    return datetime.now(UTC)


class TokenIssuer:
    """Mints access tokens and rotates refresh tokens kept in a relational store (migrated on first use)."""

    def __init__(
        self,
        key: SigningKey,
        store: RelationalStore,
        *,
        issuer: str,
        audience: str,
        access_lifetime: timedelta,
        refresh_lifetime: timedelta,
        subject_claim: str = "sub",
        scope_claim: str = "scope",
        tenant_claim: str | None = "tenant_id",
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._key = key
        self._table = RefreshTokenTable(store)
        self._issuer = issuer
        self._audience = audience
        self._access = access_lifetime
        self._refresh = refresh_lifetime
        self._claims = (subject_claim, scope_claim, tenant_claim)
        self._clock = clock
        self._ready = False
        self._ready_lock = anyio.Lock()
        self._operations = 0

    async def issue(self, subject: str, tenant: str | None, scopes: Iterable[str]) -> TokenPair:
        """A first pair for ``subject`` (in ``tenant``) with ``scopes``: a new refresh-token family."""
        if not subject.strip() or len(subject) > 200 or (tenant is not None and not 0 < len(tenant.strip()) <= 200):
            raise ToolError("a subject and a tenant are 1 to 200 characters", code="validation_error", http_status=400)
        grant = Grant(subject, tenant, normalize_scopes(scopes))
        now = self._clock()
        issued = await self._stored(lambda: self._table.issue(grant, now=now, lifetime=self._refresh))
        log.info("token family issued", family_id=grant.family_id, subject=subject, tenant=tenant)
        return self._pair(grant, issued.token, now)

    async def refresh(self, refresh_token: str) -> TokenPair:
        """Exchange a refresh token for the next pair. Refusals are :class:`gateway.api.Unauthenticated` with
        ``reason`` ``malformed``, ``unknown``, ``expired``, ``revoked`` or ``reused``."""
        now = self._clock()
        rotation = await self._stored(lambda: self._table.rotate(refresh_token, now=now, lifetime=self._refresh))
        if rotation.issued is None:
            reason = rotation.refused or "unknown"
            if reason == "reused":
                log.warning("refresh token reused: its family is revoked", family_id=rotation.family_id)
            else:
                log.info("refresh refused", reason=reason, family_id=rotation.family_id)
            raise refuse(reason, _REFUSALS[reason])
        grant = rotation.issued.grant
        log.info("refresh token rotated", family_id=grant.family_id, subject=grant.subject, tenant=grant.tenant)
        return self._pair(grant, rotation.issued.token, now)

    async def revoke(self, subject: str, tenant: str | None) -> int:
        """Revoke every refresh token of ``subject`` in ``tenant`` (their access tokens run out on their own)."""
        count = await self._stored(lambda: self._table.revoke_principal(subject, tenant, now=self._clock()))
        log.info("refresh tokens revoked", subject=subject, tenant=tenant, count=count)
        return count

    def rest_routes(self) -> Sequence[RestRoute]:
        async def exchange(args: RefreshRequest, ctx: CallContext) -> TokenPair:
            return await self.refresh(args.refresh_token)

        return [
            RestRoute(
                "POST",
                "/auth/refresh",
                "Exchange a refresh token for a new access token and refresh token",
                exchange,
                RefreshRequest,
                TokenPair,
                public=True,
                errors=(401,),
                operation_id="auth_refresh",
                description="Refresh tokens are single use: presenting one twice revokes every token of its "
                "family. An invalid, expired, revoked or reused token is 401 AUTHENTICATION_ERROR.",
            )
        ]

    def _pair(self, grant: Grant, refresh_token: str, now: datetime) -> TokenPair:
        subject_claim, scope_claim, tenant_claim = self._claims
        claims: dict[str, Any] = {
            "iss": self._issuer,
            "aud": self._audience,
            subject_claim: grant.subject,
            "iat": int(now.timestamp()),
            "exp": int((now + self._access).timestamp()),
            "jti": secrets.token_hex(16),
            scope_claim: " ".join(sorted(grant.scopes)),
        }
        if tenant_claim and grant.tenant is not None:
            claims[tenant_claim] = grant.tenant
        headers = {"typ": "at+jwt", **({"kid": self._key.key_id} if self._key.key_id else {})}
        access = jwt.encode(claims, self._key.key, algorithm=self._key.algorithm, headers=headers)
        return TokenPair(access_token=access, refresh_token=refresh_token, expires_in=int(self._access.total_seconds()))

    async def _stored(self, action: Callable[[], Any]) -> Any:
        """Run a table operation; a store failure is 503 (not the caller's fault), never a 401."""
        try:
            if not self._ready:
                async with self._ready_lock:
                    if not self._ready:
                        await self._table.migrate()
                        self._ready = True
            result = await action()
            self._operations += 1
            if self._operations % _PRUNE_EVERY == 0:
                await self._table.prune(now=self._clock())
            return result
        except ToolError:
            raise
        except Exception as exc:
            log.exception("refresh-token store unavailable")
            raise ServiceUnavailable("the token store is unavailable") from exc
