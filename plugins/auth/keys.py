"""API keys: their format, how they are hashed, and the table that keeps them (in the relational store).

A key reads ``gwk_<id>_<secret>``:

* ``gwk_`` makes a leaked key recognisable to secret scanners and to people;
* ``<id>`` (16 hex digits) is public: it names the key in listings and logs and is the lookup key, so checking a
  key costs one primary-key read and one constant-time comparison;
* ``<secret>`` is 32 bytes from :func:`secrets.token_urlsafe` (256 bits).

Only a SHA-256 digest of the whole key is stored. A slow password hash (scrypt, argon2) exists to make guessing
*low-entropy* secrets expensive; a 256-bit random secret cannot be guessed whatever the hash costs, so a slow hash
would buy nothing and would cost tens of milliseconds of CPU (and, for scrypt, megabytes of memory) on every
request — handing anyone who can send headers a cheap way to exhaust the server. The digest covers the id too,
so a stored digest only ever vouches for the row it sits in. ``hash_scheme`` records the scheme so it can change.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from gateway.api import Migration, NotFound, RelationalStore, Transaction, ValidationFailed

PREFIX = "gwk_"
HASH_SCHEME = "sha256-v1"
NAMESPACE = "auth"

_KEY_ID = re.compile(r"[0-9a-f]{16}")
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 6749 §3.3 ``scope-token``: printable ASCII except space, ``"`` and ``\\``."""

KeyStatus = Literal["active", "expired", "revoked"]

MIGRATIONS = (
    Migration(
        version=1,
        name="api_keys",
        sql="""
            CREATE TABLE auth_api_keys (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                tenant TEXT,
                scopes TEXT NOT NULL,
                secret_hash TEXT NOT NULL,
                hash_scheme TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ,
                revoked_at TIMESTAMPTZ
            )
        """,
    ),
    Migration(
        version=2,
        name="api_keys_replaced_by",
        sql="ALTER TABLE auth_api_keys ADD COLUMN replaced_by TEXT",
    ),
)
"""The ``auth`` namespace's migrations (portable SQL: ``TIMESTAMPTZ`` takes and returns aware UTC datetimes)."""

_COLUMNS = "id, name, tenant, scopes, created_at, expires_at, revoked_at, replaced_by"
_INSERT = (
    "INSERT INTO auth_api_keys (id, name, tenant, scopes, secret_hash, hash_scheme, created_at, expires_at)"
    " VALUES (:id, :name, :tenant, :scopes, :secret_hash, :hash_scheme, :created_at, :expires_at)"
)


@dataclass(frozen=True)
class ApiKeyInfo:
    """What may be shown about a key: everything but its secret and its digest."""

    id: str
    name: str
    tenant: str | None
    scopes: frozenset[str]
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    replaced_by: str | None = None
    """The id of the key that replaced this one (``gateway keys rotate``); it stops working at its expiry."""

    def status(self, now: datetime) -> KeyStatus:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"

    def to_json(self, now: datetime) -> dict[str, Any]:
        """A JSON-ready view (for ``gateway keys list --json``)."""
        return {
            "id": self.id,
            "name": self.name,
            "tenant": self.tenant,
            "scopes": sorted(self.scopes),
            "created_at": _iso(self.created_at),
            "expires_at": _iso(self.expires_at),
            "revoked_at": _iso(self.revoked_at),
            "replaced_by": self.replaced_by,
            "status": self.status(now),
        }


@dataclass(frozen=True)
class IssuedKey:
    """A newly created key. ``key`` is the only copy of the secret that will ever exist: show it once."""

    info: ApiKeyInfo
    key: str = field(repr=False)


@dataclass(frozen=True)
class StoredKey:
    info: ApiKeyInfo
    secret_hash: str = field(repr=False)
    hash_scheme: str


@dataclass(frozen=True)
class TokenFormat:
    """``<prefix><id>_<secret>``: a public id of 16 hex digits (the lookup key) and 32 random bytes, URL-safe.

    API keys (``gwk_``) and the ``jwt`` issuer's refresh tokens (``gwr_``) share it, and their stored SHA-256
    :func:`digest`.
    """

    prefix: str

    def new(self) -> tuple[str, str]:
        """A fresh ``(id, token)``."""
        token_id = secrets.token_hex(8)
        return token_id, f"{self.prefix}{token_id}_{secrets.token_urlsafe(32)}"

    def parse(self, value: str) -> str | None:
        """The id of a well-formed token, ``None`` for anything else."""
        match = re.fullmatch(rf"{re.escape(self.prefix)}([0-9a-f]{{16}})_[A-Za-z0-9_-]{{43}}", value)
        return match.group(1) if match else None


API_KEYS = TokenFormat(PREFIX)


def new_key() -> tuple[str, str]:
    """A fresh ``(key_id, full_key)``."""
    return API_KEYS.new()


def parse_key(value: str) -> str | None:
    """The id of a well-formed key, ``None`` for anything else."""
    return API_KEYS.parse(value)


def is_key_id(value: str) -> bool:
    return _KEY_ID.fullmatch(value) is not None


def digest(full_key: str) -> str:
    """The stored digest of a key or token (scheme :data:`HASH_SCHEME`)."""
    return hashlib.sha256(full_key.encode("ascii")).hexdigest()


def matches(full_key: str, stored: StoredKey) -> bool:
    """Whether ``full_key`` is the key ``stored`` was made from, in time independent of where they differ."""
    if stored.hash_scheme != HASH_SCHEME:
        return False
    return hmac.compare_digest(digest(full_key), stored.secret_hash)


def rotation_refusal(info: ApiKeyInfo, now: datetime) -> ValidationFailed | None:
    """Why ``info`` cannot be rotated at ``now``, or None. Only a live key that was never rotated can be: a
    rotation hands on the key's lifetime, which an expired, revoked or already replaced key no longer has (and
    rotating a replaced key again would leave two live successors)."""
    status = info.status(now)
    if status != "active":
        return ValidationFailed(f"API key {info.id} is {status}: create a new key instead")
    if info.replaced_by is not None:
        return ValidationFailed(
            f"API key {info.id} was already rotated (replaced by {info.replaced_by}): rotate that key, or create a "
            "new key instead"
        )
    return None


def normalize_scopes(scopes: Iterable[str]) -> frozenset[str]:
    """Scopes as a set; each must be an RFC 6749 scope token."""
    result = set()
    for scope in scopes:
        if not _SCOPE.fullmatch(scope):
            raise ValidationFailed(f"invalid scope {scope!r}: a scope is printable ASCII without spaces or quotes")
        result.add(scope)
    return frozenset(result)


class KeyTable:
    """The ``auth_api_keys`` table, through the :class:`gateway.api.RelationalStore` protocol."""

    def __init__(self, store: RelationalStore) -> None:
        self._store = store

    async def migrate(self) -> None:
        await self._store.migrate(NAMESPACE, MIGRATIONS)

    async def insert(self, info: ApiKeyInfo, full_key: str) -> None:
        """Add a key. Raises :class:`gateway.api.StoreIntegrityError` if the id is taken."""
        await self._store.execute(_INSERT, _insert_params(info, full_key))

    async def get(self, key_id: str) -> StoredKey | None:
        row = await self._store.fetch_one(
            f"SELECT {_COLUMNS}, secret_hash, hash_scheme FROM auth_api_keys WHERE id = :id", {"id": key_id}
        )
        if row is None:
            return None
        return StoredKey(info=_info(row), secret_hash=row["secret_hash"], hash_scheme=row["hash_scheme"])

    async def list(self, *, include_revoked: bool = True) -> list[ApiKeyInfo]:
        where = "" if include_revoked else " WHERE revoked_at IS NULL"
        rows = await self._store.fetch_all(f"SELECT {_COLUMNS} FROM auth_api_keys{where} ORDER BY created_at, id")
        return [_info(row) for row in rows]

    async def revoke(self, key_id: str, now: datetime) -> ApiKeyInfo:
        """Revoke a key (a revoked key stays revoked at its first revocation time)."""
        async with self._store.transaction() as tx:
            await tx.execute(
                "UPDATE auth_api_keys SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL",
                {"id": key_id, "now": now},
            )
            return await _require(tx, key_id)

    async def rotate(self, old_id: str, new: ApiKeyInfo, full_key: str, *, retire_at: datetime) -> ApiKeyInfo:
        """Insert ``new`` and retire ``old_id`` in one transaction: the old key stops working at ``retire_at``
        (revoked now when ``retire_at`` is now, else its expiry is brought forward) and records its successor.
        Raises :class:`gateway.api.ValidationFailed` when the old key cannot be rotated (:func:`rotation_refusal`).
        Returns the old key."""
        now = new.created_at
        async with self._store.transaction() as tx:
            old = await _require(tx, old_id)
            if (refusal := rotation_refusal(old, now)) is not None:
                raise refusal
            await tx.execute(_INSERT, _insert_params(new, full_key))
            revoked_at = retire_at if retire_at <= now else None
            expires_at = old.expires_at
            if revoked_at is None and (expires_at is None or expires_at > retire_at):
                expires_at = retire_at
            # the conditions again: of two concurrent rotations, the second finds the row taken and changes nothing
            taken = await tx.execute(
                "UPDATE auth_api_keys SET replaced_by = :new, revoked_at = :revoked_at, expires_at = :expires_at"
                " WHERE id = :id AND replaced_by IS NULL AND revoked_at IS NULL",
                {"id": old_id, "new": new.id, "revoked_at": revoked_at, "expires_at": expires_at},
            )
            if taken != 1:
                raise ValidationFailed(f"API key {old_id} was rotated or revoked meanwhile: list the keys and retry")
            return await _require(tx, old_id)


def _insert_params(info: ApiKeyInfo, full_key: str) -> dict[str, Any]:
    return {
        "id": info.id,
        "name": info.name,
        "tenant": info.tenant,
        "scopes": " ".join(sorted(info.scopes)),
        "secret_hash": digest(full_key),
        "hash_scheme": HASH_SCHEME,
        "created_at": info.created_at,
        "expires_at": info.expires_at,
    }


async def _require(tx: Transaction, key_id: str) -> ApiKeyInfo:
    row = await tx.fetch_one(f"SELECT {_COLUMNS} FROM auth_api_keys WHERE id = :id", {"id": key_id})
    if row is None:
        raise NotFound(f"no API key with id {key_id}")
    return _info(row)


def _info(row: dict[str, Any]) -> ApiKeyInfo:
    return ApiKeyInfo(
        id=row["id"],
        name=row["name"],
        tenant=row["tenant"],
        scopes=frozenset(row["scopes"].split()),
        created_at=stored_datetime(row["created_at"]),
        expires_at=stored_datetime(row["expires_at"]) if row["expires_at"] is not None else None,
        revoked_at=stored_datetime(row["revoked_at"]) if row["revoked_at"] is not None else None,
        replaced_by=row["replaced_by"],
    )


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat(timespec="seconds") if value is not None else None


def stored_datetime(value: Any) -> datetime:
    """A stored timestamp as an aware UTC datetime (the built-in stores return datetimes; ISO text is accepted
    from stores that do not convert)."""
    parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
