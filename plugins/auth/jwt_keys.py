"""Where the ``jwt`` authenticator finds the key that verifies a token: a shared secret, a PEM file, a JWKS file.

Algorithms are pinned by configuration and grouped in families (HMAC, RSA, EC, OKP). A key only ever verifies
algorithms of its own family, and HMAC cannot be configured together with a public-key family, so a token cannot
choose how it is checked (the classic "RS256 public key used as an HS256 secret" confusion is impossible).
Nothing here touches the network: JWKS come from a local file, re-read when it changes (key rotation).
When the gateway issues tokens itself, :class:`SigningKey` signs them and :class:`OwnKeys` verifies them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio.to_thread
import jwt
import structlog
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key

from gateway.api import ConfigError
from gateway_plugins.auth.headers import refuse

log = structlog.get_logger(__name__)

Algorithm = Literal[
    "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]
Family = Literal["hmac", "rsa", "ec", "okp"]

FAMILIES: Mapping[str, Family] = {
    **dict.fromkeys(("HS256", "HS384", "HS512"), "hmac"),
    **dict.fromkeys(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"), "rsa"),
    **dict.fromkeys(("ES256", "ES384", "ES512"), "ec"),
    "EdDSA": "okp",
}
HMAC_MIN_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
"""RFC 7518 §3.2: an HMAC key is at least as long as the hash output."""

_KTY_FAMILY: Mapping[str, Family] = {"RSA": "rsa", "EC": "ec", "OKP": "okp"}
_RELOAD_INTERVAL = 1.0


def families_of(algorithms: Sequence[str]) -> set[Family]:
    return {FAMILIES[alg] for alg in algorithms}


class KeySource(Protocol):
    """Finds the verification key for a token whose (already allowed) algorithm is ``alg``."""

    async def key_for(self, header: Mapping[str, Any], alg: str) -> Any:
        """The key object to hand to PyJWT; raises :class:`gateway.api.Unauthenticated` (``unknown_key``)."""


class SecretKey:
    """A shared HMAC secret (HS256/384/512)."""

    def __init__(self, secret: str, algorithms: Sequence[str]) -> None:
        raw = secret.encode("utf-8")
        shortest = max(HMAC_MIN_BYTES[alg] for alg in algorithms)
        if len(raw) < shortest:
            raise ConfigError(
                f"plugins.auth.jwt.secret: {'/'.join(algorithms)} needs a secret of at least {shortest} bytes "
                f"(RFC 7518 §3.2); generate one with: python -c 'import secrets; print(secrets.token_urlsafe(64))'"
            )
        self._secret = raw

    async def key_for(self, header: Mapping[str, Any], alg: str) -> bytes:
        return self._secret


class PemKey:
    """One public key (or the key of an X.509 certificate) from a PEM file."""

    def __init__(self, path: Path, algorithms: Sequence[str]) -> None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"plugins.auth.jwt.public_key_file: cannot read {path}: {exc.strerror}") from exc
        try:
            if b"-----BEGIN CERTIFICATE-----" in data:
                key: Any = x509.load_pem_x509_certificate(data).public_key()
            else:
                key = load_pem_public_key(data)
        except ValueError as exc:
            raise ConfigError(
                f"plugins.auth.jwt.public_key_file: {path} holds no PEM public key or certificate"
            ) from exc
        family = _family_of_key(key)
        if family is None or families_of(algorithms) != {family}:
            raise ConfigError(
                f"plugins.auth.jwt: the key in {path} ({type(key).__name__}) cannot verify {', '.join(algorithms)}"
            )
        self._key = key

    async def key_for(self, header: Mapping[str, Any], alg: str) -> Any:
        return self._key


@dataclass(frozen=True)
class _Jwk:
    kid: str | None
    family: Family
    alg: str | None
    key: Any


class JwksFile:
    """The signing keys of a JSON Web Key Set (RFC 7517) kept in a local file.

    Keys are chosen by the token's ``kid``; a token without ``kid`` is accepted only when exactly one key could
    verify it. Keys marked for another use (``use`` other than ``sig``), keys whose ``alg`` is not configured and
    symmetric (``oct``) keys are ignored. When a ``kid`` is unknown the file is re-read if it changed (at most
    once a second), so rotating keys needs no restart.
    """

    def __init__(self, path: Path, algorithms: Sequence[str]) -> None:
        self._path = path
        self._algorithms = frozenset(algorithms)
        self._mtime_ns, self._keys = self._load()
        if not self._keys:
            raise ConfigError(f"plugins.auth.jwt.jwks_file: {path} has no signing key for {', '.join(algorithms)}")
        self._checked_at = time.monotonic()
        self._reloading = anyio.Lock()  # a burst of unknown key ids reads the file once, not once per token

    async def key_for(self, header: Mapping[str, Any], alg: str) -> Any:
        kid = header.get("kid")
        found = self._select(kid, alg)
        if found is None and kid is not None and self._reload_due():
            async with self._reloading:
                if self._reload_due():
                    await anyio.to_thread.run_sync(self._reload_if_changed)
            found = self._select(kid, alg)
        if found is None:
            if kid is None:
                raise refuse("unknown_key", "the token names no key id (kid) and the key set cannot tell which key")
            raise refuse("unknown_key", "no key of the key set matches the token's key id (kid)")
        return found.key

    def _reload_due(self) -> bool:
        return time.monotonic() - self._checked_at >= _RELOAD_INTERVAL

    def _select(self, kid: Any, alg: str) -> _Jwk | None:
        family = FAMILIES[alg]
        usable = [k for k in self._keys if k.family == family and k.alg in (None, alg)]
        if kid is None:
            return usable[0] if len(usable) == 1 else None
        return next((k for k in usable if k.kid == kid), None)

    def _reload_if_changed(self) -> None:
        self._checked_at = time.monotonic()
        try:
            if self._path.stat().st_mtime_ns == self._mtime_ns:
                return
            self._mtime_ns, keys = self._load()
        except (OSError, ConfigError) as exc:
            log.warning("jwks file not reloaded; keeping the previous keys", path=str(self._path), error=str(exc))
            return
        if keys:
            self._keys = keys
            log.info("jwks file reloaded", path=str(self._path), keys=len(keys))

    def _load(self) -> tuple[int, list[_Jwk]]:
        try:
            mtime_ns = self._path.stat().st_mtime_ns
            document = json.loads(self._path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"plugins.auth.jwt.jwks_file: cannot read {self._path}: {exc.strerror}") from exc
        except ValueError as exc:
            raise ConfigError(f"plugins.auth.jwt.jwks_file: {self._path} is not JSON: {exc}") from exc
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise ConfigError(f'plugins.auth.jwt.jwks_file: {self._path} is not a JWK Set (no "keys" list)')
        keys = [key for entry in entries if (key := self._parse(entry)) is not None]
        return mtime_ns, keys

    def _parse(self, entry: Any) -> _Jwk | None:
        if not isinstance(entry, dict):
            return None
        kid = entry.get("kid")
        family = _KTY_FAMILY.get(entry.get("kty", ""))
        alg = entry.get("alg")
        if family is None:
            log.debug("jwk skipped: not a public key type", kid=kid, kty=entry.get("kty"))
            return None
        usable = (
            entry.get("use", "sig") == "sig"
            and (kid is None or isinstance(kid, str))
            and (alg is None or (alg in self._algorithms and FAMILIES[alg] == family))
            and family in families_of(tuple(self._algorithms))
        )
        if not usable:
            log.debug("jwk skipped", kid=kid, kty=entry.get("kty"), alg=alg)
            return None
        try:
            key = jwt.PyJWK(entry, algorithm=alg).key
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
            log.warning("jwk skipped: unusable key", kid=kid, error=str(exc))
            return None
        return _Jwk(kid=kid, family=family, alg=alg, key=key)


def _family_of_key(key: Any) -> Family | None:
    if isinstance(key, rsa.RSAPublicKey):
        return "rsa"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "ec"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "okp"
    return None


class SigningKey:
    """The key the gateway signs its own tokens with: the HMAC secret, or a PEM private key file."""

    def __init__(self, algorithm: str, key: Any, key_id: str | None = None) -> None:
        self.algorithm = algorithm
        self.key = key
        self.key_id = key_id

    @classmethod
    def from_pem(cls, path: Path, algorithm: str, key_id: str | None) -> SigningKey:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"plugins.auth.jwt.issuing.private_key_file: cannot read {path}: {exc.strerror}") from exc
        try:
            key = load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"plugins.auth.jwt.issuing.private_key_file: {path} holds no unencrypted PEM private key"
            ) from exc
        if _family_of_key(key.public_key()) != FAMILIES[algorithm]:  # type: ignore[union-attr]
            raise ConfigError(f"plugins.auth.jwt.issuing: the key in {path} cannot sign {algorithm}")
        return cls(algorithm, key, key_id)

    def verification_key(self) -> Any:
        """What verifies this key's signatures: the secret itself, or the public half."""
        return self.key if FAMILIES[self.algorithm] == "hmac" else self.key.public_key()


class OwnKeys:
    """Verifies the gateway's own tokens with its signing key, and anyone else's with ``others`` (when the
    gateway also accepts an identity provider's tokens, told apart by the ``kid`` of the signing key)."""

    def __init__(self, own: SigningKey, others: KeySource | None = None) -> None:
        self._own = own
        self._key = own.verification_key()
        self._others = others

    async def key_for(self, header: Mapping[str, Any], alg: str) -> Any:
        if self._others is not None and header.get("kid") != self._own.key_id:
            return await self._others.key_for(header, alg)
        if FAMILIES[alg] != FAMILIES[self._own.algorithm]:
            raise refuse("unknown_key", "the token's algorithm does not match the issuer's key")
        return self._key
