"""The ``api_key`` authenticator: ``X-API-Key: gwk_<id>_<secret>``, checked against hashed keys in the store.

It also manages the keys (create, list, revoke, rotate), which is what ``gateway keys`` drives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta

import anyio
import structlog
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import (
    STORE,
    NotFound,
    Principal,
    ProviderContext,
    RelationalStore,
    ServiceUnavailable,
    StoreIntegrityError,
    ToolError,
    ValidationFailed,
)
from gateway_plugins.auth.headers import format_challenge, header_value, refuse
from gateway_plugins.auth.keys import (
    ApiKeyInfo,
    IssuedKey,
    KeyTable,
    StoredKey,
    digest,
    is_key_id,
    matches,
    new_key,
    normalize_scopes,
    parse_key,
    rotation_refusal,
)

log = structlog.get_logger(__name__)

HEADER = "X-API-Key"
_LABEL = re.compile(r"[^\x00-\x1f\x7f]{1,200}")
_ID_ATTEMPTS = 3


class ApiKeyConfig(BaseModel):
    """``[plugins.auth.api_key]``."""

    model_config = ConfigDict(extra="forbid")

    store: str | None = Field(default=None, min_length=1)
    """The relational store (a ``store`` provider name) holding the keys; default: ``[providers] store``."""
    realm: str = Field(default="gateway", pattern=r"^[\x20\x21\x23-\x5b\x5d-\x7e]{1,100}$")
    """Shown in the ``WWW-Authenticate`` challenge."""


def utcnow() -> datetime:
    return datetime.now(UTC)


class ApiKeyAuthenticator:
    """Authenticates ``X-API-Key`` headers against the keys of a :class:`gateway.api.RelationalStore`.

    Refusals carry ``details["reason"]``: ``missing``, ``malformed``, ``unknown`` (no such key, or the secret does
    not match), ``revoked`` or ``expired``. Whether a key is revoked or expired is told only to a caller that
    holds its secret. The store is migrated (namespace ``auth``) on first use.
    """

    name = "api_key"

    def __init__(
        self, store: RelationalStore, *, realm: str = "gateway", clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._table = KeyTable(store)
        self._realm = realm
        self._clock = clock
        self._ready = False
        self._lock = anyio.Lock()

    async def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The key's principal: subject ``key:<id>``, the key's tenant and scopes, method ``api_key``."""
        value = header_value(headers, HEADER)
        if value is None or not value.strip():
            raise refuse("missing", f"missing API key (send it in the {HEADER} header)")
        key_id = parse_key(value)
        if key_id is None:
            raise refuse("malformed", "malformed API key (expected gwk_<id>_<secret>)")
        stored = await self._lookup(key_id)
        if stored is None or not matches(value, stored):
            if stored is None:
                digest(value)  # the same work as a mismatch, so timing does not tell the two apart
            log.info("api key refused", key_id=key_id, reason="unknown")
            raise refuse("unknown", "unknown API key")
        status = stored.info.status(self._clock())
        if status != "active":
            log.info("api key refused", key_id=key_id, reason=status)
            raise refuse(status, f"API key {status}")
        return Principal(
            subject=f"key:{key_id}", tenant=stored.info.tenant, scopes=stored.info.scopes, method="api_key"
        )

    def challenge(self, error: BaseException | None = None) -> str | None:
        """``ApiKey realm="...", header="X-API-Key"``: there is no registered scheme for API keys, but a 401
        must carry a challenge (RFC 9110 §15.5.2), and this one tells a client where the key goes."""
        return format_challenge("ApiKey", {"realm": self._realm, "header": HEADER})

    # -- key management (``gateway keys``) ------------------------------------------------------------------

    async def create_key(
        self,
        *,
        name: str,
        scopes: Iterable[str],
        tenant: str | None = None,
        expires_at: datetime | None = None,
    ) -> IssuedKey:
        """Create a key. The returned :class:`IssuedKey` holds the only copy of the secret."""
        now = self._clock()
        info_fields = self._validated(name=name, scopes=scopes, tenant=tenant, expires_at=expires_at, now=now)
        await self._ensure_ready()
        for _ in range(_ID_ATTEMPTS):
            key_id, full_key = new_key()
            info = ApiKeyInfo(id=key_id, created_at=now, **info_fields)
            try:
                await self._table.insert(info, full_key)
            except StoreIntegrityError:
                continue  # a 64-bit id collided; draw another
            log.info("api key created", key_id=key_id, name=info.name, tenant=info.tenant)
            return IssuedKey(info=info, key=full_key)
        raise ServiceUnavailable("could not allocate a unique API key id")

    async def list_keys(self, *, include_revoked: bool = True) -> list[ApiKeyInfo]:
        """Every key, oldest first, without secrets."""
        await self._ensure_ready()
        return await self._table.list(include_revoked=include_revoked)

    async def revoke_key(self, key_id: str) -> ApiKeyInfo:
        """Revoke a key at once. Revoking a revoked key changes nothing. Raises :class:`gateway.api.NotFound`."""
        self._check_id(key_id)
        await self._ensure_ready()
        info = await self._table.revoke(key_id, self._clock())
        log.info("api key revoked", key_id=key_id)
        return info

    async def rotate_key(
        self, key_id: str, *, grace: timedelta = timedelta(0), expires_at: datetime | None = None
    ) -> tuple[IssuedKey, ApiKeyInfo]:
        """Issue a key with the same name, tenant and scopes, and retire the old one after ``grace`` (at once
        by default). The new key expires at ``expires_at``, by default when the old one would have. Only a live
        key never rotated before can be rotated (:class:`gateway.api.ValidationFailed` otherwise). Returns the
        new key and the old key's updated record."""
        self._check_id(key_id)
        if grace < timedelta(0):
            raise ValidationFailed("the grace period cannot be negative")
        await self._ensure_ready()
        current = await self._table.get(key_id)
        if current is None:
            raise NotFound(f"no API key with id {key_id}")
        now = self._clock()
        if (refusal := rotation_refusal(current.info, now)) is not None:
            raise refusal
        info_fields = self._validated(
            name=current.info.name,
            scopes=current.info.scopes,
            tenant=current.info.tenant,
            expires_at=current.info.expires_at if expires_at is None else expires_at,
            now=now,
        )
        new_id, full_key = new_key()
        info = ApiKeyInfo(id=new_id, created_at=now, **info_fields)
        old = await self._table.rotate(key_id, info, full_key, retire_at=now + grace)
        log.info("api key rotated", key_id=key_id, new_key_id=new_id, retire_at=(now + grace).isoformat())
        return IssuedKey(info=info, key=full_key), old

    # -- internals ------------------------------------------------------------------------------------------

    async def _lookup(self, key_id: str) -> StoredKey | None:
        try:
            await self._ensure_ready()
            return await self._table.get(key_id)
        except ToolError:
            raise
        except Exception as exc:  # the store is down: that is not the caller's fault, and not a 401
            log.exception("api key store unavailable")
            raise ServiceUnavailable("the API key store is unavailable") from exc

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        async with self._lock:
            if not self._ready:
                await self._table.migrate()
                self._ready = True

    @staticmethod
    def _check_id(key_id: str) -> None:
        if not is_key_id(key_id):
            raise ValidationFailed("an API key id is 16 hexadecimal digits (see 'gateway keys list')")

    @staticmethod
    def _validated(
        *,
        name: str,
        scopes: Iterable[str],
        tenant: str | None,
        expires_at: datetime | None,
        now: datetime,
    ) -> dict[str, object]:
        if not _LABEL.fullmatch(name) or not name.strip():
            raise ValidationFailed("a key name is 1 to 200 printable characters")
        if tenant is not None and (not _LABEL.fullmatch(tenant) or not tenant.strip()):
            raise ValidationFailed("a tenant is 1 to 200 printable characters")
        if expires_at is not None:
            if expires_at.tzinfo is None:
                raise ValidationFailed("the expiry needs a time zone (for instance 2030-01-01T00:00:00Z)")
            if expires_at <= now:
                raise ValidationFailed("the expiry is in the past")
            expires_at = expires_at.astimezone(UTC)
        return {"name": name, "tenant": tenant, "scopes": normalize_scopes(scopes), "expires_at": expires_at}


def build(ctx: ProviderContext) -> ApiKeyAuthenticator:
    """Provider factory of ``auth``/``api_key``: its keys live in the configured (or named) relational store."""
    config = ctx.config if isinstance(ctx.config, ApiKeyConfig) else ApiKeyConfig()
    store = ctx.provider(STORE, config.store)
    return ApiKeyAuthenticator(store, realm=config.realm)
