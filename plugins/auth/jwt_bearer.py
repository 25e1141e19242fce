"""The ``jwt`` authenticator: ``Authorization: Bearer <JWT>`` verified locally with PyJWT.

Signature (pinned algorithms), ``exp``/``nbf``/``iat`` (with leeway), ``iss`` and ``aud`` are always checked.
Scopes come from the ``scope`` claim (a space-separated string, RFC 8693/9068) or ``scp`` (a list or a string),
the tenant from ``tenant_id``; every claim name is configurable. With ``[plugins.auth.jwt.issuing]`` the gateway
also mints tokens itself and serves their refresh (:mod:`gateway_plugins.auth.jwt_issuer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import jwt
import structlog
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationInfo, field_validator, model_validator

from gateway.api import (
    STORE,
    ConfigError,
    GatewayError,
    Principal,
    ProviderContext,
    ProviderUnavailable,
    RestRoute,
    Secret,
)
from gateway_plugins.auth.headers import bearer_challenge, bearer_token, refuse
from gateway_plugins.auth.jwt_issuer import TokenIssuer
from gateway_plugins.auth.jwt_keys import (
    Algorithm,
    JwksFile,
    KeySource,
    OwnKeys,
    PemKey,
    SecretKey,
    SigningKey,
    families_of,
)

log = structlog.get_logger(__name__)

_CLAIM_NAME = r"^\S{1,200}$"


def _relative_to_config(value: Path | None, info: ValidationInfo) -> Path | None:
    """A relative path is read from the config file's directory when the host says where that is (validation
    context ``{"config_dir": ...}``), else from the working directory."""
    if value is None:
        return None
    value = value.expanduser()
    config_dir = (info.context or {}).get("config_dir")
    return Path(config_dir) / value if config_dir is not None and not value.is_absolute() else value


class TokenIssuing(BaseModel):
    """``[plugins.auth.jwt.issuing]``: the gateway mints its own tokens (``gateway tokens issue``) and serves
    ``POST /api/v1/auth/refresh``. Tokens carry the first ``issuer`` and the first ``audience``, and are signed with
    the first of ``algorithms``: with ``secret`` (HS*) or ``private_key_file``."""

    model_config = ConfigDict(extra="forbid")

    private_key_file: Path | None = None
    """An unencrypted PEM private key (RS*/PS*, ES*, EdDSA). Its public half verifies the tokens, unless
    ``public_key_file``/``jwks_file`` also name an identity provider's keys: then ``key_id`` tells them apart."""
    key_id: str | None = Field(default=None, pattern=r"^[\x21-\x7e]{1,100}$")
    """The ``kid`` header of the tokens the gateway signs."""
    access_token_seconds: int = Field(default=900, ge=60, le=86_400)
    refresh_token_seconds: int = Field(default=30 * 86_400, ge=300, le=366 * 86_400)
    """How long each refresh token lives from its issue (every refresh issues a new one)."""
    store: str | None = Field(default=None, min_length=1)
    """The relational store (a ``store`` provider name) keeping the hashed refresh tokens; default:
    ``[providers] store``."""

    relative_private_key = field_validator("private_key_file")(_relative_to_config)


class JwtConfig(BaseModel):
    """``[plugins.auth.jwt]``. Exactly one key source: ``secret`` (HS*), ``public_key_file`` or ``jwks_file``."""

    model_config = ConfigDict(extra="forbid")

    algorithms: list[Algorithm] = Field(min_length=1)
    """The accepted ``alg`` values, pinned: a token naming any other algorithm (``none`` included) is refused."""
    secret: Secret = None
    """The HMAC secret, written ``{ env = "NAME" }`` (HS256 needs at least 32 bytes)."""
    public_key_file: Path | None = None
    """A PEM public key or X.509 certificate (RS*/PS*, ES*, EdDSA)."""
    jwks_file: Path | None = None
    """A local JWK Set file; keys are picked by ``kid`` and re-read when the file changes."""
    issuer: str | list[str] = Field(min_length=1)
    """The accepted ``iss`` value(s). Required: a token from any other issuer is refused."""
    audience: str | list[str] = Field(min_length=1)
    """The accepted ``aud`` value(s); a token must name one of them."""
    required_claims: list[str] = Field(default_factory=lambda: ["exp", "sub"])
    """Claims a token must carry (``iss`` and ``aud`` always are)."""
    leeway_seconds: float = Field(default=30.0, ge=0, le=600)
    """Tolerated clock skew for ``exp``, ``nbf`` and ``iat``."""
    subject_claim: str = Field(default="sub", pattern=_CLAIM_NAME)
    scope_claims: list[str] = Field(default_factory=lambda: ["scope", "scp"])
    """Where scopes are read; the first claim present wins. Each may be a space-separated string or a list."""
    tenant_claim: str | None = Field(default="tenant_id", pattern=_CLAIM_NAME)
    realm: str = Field(default="gateway", pattern=r"^[\x20\x21\x23-\x5b\x5d-\x7e]{1,100}$")
    resource_metadata_url: HttpUrl | None = None
    """The RFC 9728 protected-resource metadata URL, announced in the ``WWW-Authenticate`` challenge."""

    issuing: TokenIssuing | None = None
    """Set to make the gateway its own token issuer (see :class:`TokenIssuing`)."""

    relative_key_files = field_validator("public_key_file", "jwks_file")(_relative_to_config)

    @model_validator(mode="after")
    def _one_key_source(self) -> JwtConfig:
        families = families_of(self.algorithms)
        files = [name for name in ("public_key_file", "jwks_file") if getattr(self, name) is not None]
        own_key = self.issuing is not None and self.issuing.private_key_file is not None
        if "hmac" in families:
            if len(families) > 1:
                raise ValueError("HMAC algorithms (HS*) cannot be accepted together with public-key algorithms")
            if files:
                raise ValueError(f"HS* algorithms verify with 'secret', not {files[0]!r}")
            if own_key:
                raise ValueError("HS* tokens are signed with 'secret', not 'issuing.private_key_file'")
            return self
        if self.secret is not None:
            raise ValueError("'secret' is only for HS* algorithms; public-key algorithms need a key file")
        if self.issuing is not None and not own_key:
            raise ValueError("'issuing' with public-key algorithms needs 'issuing.private_key_file'")
        if len(files) > 1 or (not files and not own_key):
            raise ValueError("give exactly one of 'public_key_file' and 'jwks_file'")
        if self.public_key_file is not None and len(families) > 1:
            raise ValueError("a single public key verifies one algorithm family; use 'jwks_file' to mix")
        if own_key and files and (self.issuing is None or self.issuing.key_id is None):
            raise ValueError(f"set 'issuing.key_id' to tell the gateway's own tokens from those {files[0]!r} verifies")
        return self


class JwtAuthenticator:
    """Verifies bearer JWTs against a :class:`~gateway_plugins.auth.jwt_keys.KeySource`.

    Refusals carry ``details["reason"]``: ``missing``, ``unsupported_scheme``, ``malformed``,
    ``unsupported_algorithm``, ``unknown_key``, ``invalid_signature``, ``expired``, ``not_yet_valid``,
    ``invalid_issuer``, ``invalid_audience``, ``missing_claim``, ``invalid_claim`` or ``invalid_token``.
    """

    name = "jwt"

    def __init__(self, config: JwtConfig, keys: KeySource, issuer: TokenIssuer | None = None) -> None:
        self._config = config
        self.issuer = issuer
        """Mints and refreshes tokens when ``[plugins.auth.jwt.issuing]`` is set."""
        self._keys = keys
        self._algorithms = tuple(config.algorithms)
        self._require = sorted({*config.required_claims, "iss", "aud"})
        self._metadata_url = str(config.resource_metadata_url) if config.resource_metadata_url else None

    async def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The token's principal: subject ``sub``, tenant ``tenant_id``, scopes, method ``jwt``."""
        token = bearer_token(headers)
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise refuse("malformed", "malformed token") from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise refuse("unsupported_algorithm", "token algorithm not accepted")
        key = await self._keys.key_for(header, alg)
        claims = self._decode(token, key, alg)
        return self._principal(claims)

    def challenge(self, error: BaseException | None = None) -> str | None:
        """``Bearer realm="..."`` (RFC 6750 §3), with ``error="invalid_token"`` when ``error`` refused a token
        that was sent, ``error="insufficient_scope"`` for a :class:`gateway.api.Forbidden`, and the RFC 9728
        ``resource_metadata`` URL when configured."""
        return bearer_challenge(
            realm=self._config.realm,
            error=error if isinstance(error, GatewayError) else None,
            resource_metadata=self._metadata_url,
        )

    def rest_routes(self) -> Sequence[RestRoute]:
        """``POST /auth/refresh`` when the gateway issues tokens (:class:`gateway.api.RestRouteSource`)."""
        return self.issuer.rest_routes() if self.issuer is not None else ()

    def _decode(self, token: str, key: Any, alg: str) -> dict[str, Any]:
        config = self._config
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=config.audience,
                issuer=config.issuer,
                leeway=config.leeway_seconds,
                options={"require": self._require, "enforce_minimum_key_length": True},
            )
        except jwt.ExpiredSignatureError as exc:
            raise refuse("expired", "token expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise refuse("not_yet_valid", "token not yet valid") from exc
        except jwt.InvalidAudienceError as exc:
            raise refuse("invalid_audience", "token audience not accepted") from exc
        except jwt.InvalidIssuerError as exc:
            raise refuse("invalid_issuer", "token issuer not accepted") from exc
        except jwt.MissingRequiredClaimError as exc:
            raise refuse("missing_claim", f"token lacks the required {exc.claim!r} claim") from exc
        except jwt.InvalidSignatureError as exc:
            raise refuse("invalid_signature", "token signature invalid") from exc
        except jwt.InvalidAlgorithmError as exc:
            raise refuse("unsupported_algorithm", "token algorithm not accepted") from exc
        except jwt.DecodeError as exc:
            raise refuse("malformed", "malformed token") from exc
        except jwt.InvalidTokenError as exc:
            raise refuse("invalid_token", "invalid token") from exc
        except Exception as exc:  # a key or library failure: refuse (fail closed), and leave a trace for operators
            log.warning("jwt verification failed unexpectedly", error_type=type(exc).__name__)
            raise refuse("invalid_token", "invalid token") from exc

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        config = self._config
        subject = claims.get(config.subject_claim)
        if not isinstance(subject, str) or not subject:
            if subject is None:
                raise refuse("missing_claim", f"token lacks the required {config.subject_claim!r} claim")
            raise refuse("invalid_claim", f"token claim {config.subject_claim!r} is not a non-empty string")
        tenant = claims.get(config.tenant_claim) if config.tenant_claim else None
        if tenant is not None and (not isinstance(tenant, str) or not tenant):
            raise refuse("invalid_claim", f"token claim {config.tenant_claim!r} is not a non-empty string")
        return Principal(subject=subject, tenant=tenant, scopes=self._scopes(claims), method="jwt")

    def _scopes(self, claims: Mapping[str, Any]) -> frozenset[str]:
        for name in self._config.scope_claims:
            value = claims.get(name)
            if value is None:
                continue
            if isinstance(value, str):
                return frozenset(value.split())
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                return frozenset(scope for item in value for scope in item.split())
            raise refuse("invalid_claim", f"token claim {name!r} is not a string or a list of strings")
        return frozenset()


def build(ctx: ProviderContext) -> JwtAuthenticator:
    """Provider factory of ``auth``/``jwt``: loads the verification key(s) now, so a bad file fails start-up; with
    ``issuing``, also the signing key and the store of refresh tokens."""
    config = ctx.config
    if not isinstance(config, JwtConfig):
        raise ConfigError("plugins.auth.jwt: this table is required (algorithms, a key source, issuer, audience)")
    keys: KeySource | None = None
    if config.jwks_file is not None:
        keys = JwksFile(config.jwks_file, config.algorithms)
    elif config.public_key_file is not None:
        keys = PemKey(config.public_key_file, config.algorithms)
    elif config.secret is not None:
        keys = SecretKey(config.secret.get_secret_value(), config.algorithms)
    elif config.issuing is None or config.issuing.private_key_file is None:  # else: its own key verifies, below
        raise ProviderUnavailable(
            "auth/jwt",
            "'plugins.auth.jwt.secret' is not set: the variable its { env = ... } names is unset or empty (or give "
            "public_key_file or jwks_file)",
        )
    issuing = config.issuing
    if issuing is None:
        return JwtAuthenticator(config, keys)
    algorithm = config.algorithms[0]
    if issuing.private_key_file is not None:
        signing = SigningKey.from_pem(issuing.private_key_file, algorithm, issuing.key_id)
        keys = OwnKeys(signing, keys)
    else:
        assert config.secret is not None
        signing = SigningKey(algorithm, config.secret.get_secret_value().encode("utf-8"), issuing.key_id)
    issuer = TokenIssuer(
        signing,
        ctx.provider(STORE, issuing.store),
        issuer=_first(config.issuer),
        audience=_first(config.audience),
        access_lifetime=timedelta(seconds=issuing.access_token_seconds),
        refresh_lifetime=timedelta(seconds=issuing.refresh_token_seconds),
        subject_claim=config.subject_claim,
        scope_claim=config.scope_claims[0] if config.scope_claims else "scope",
        tenant_claim=config.tenant_claim,
    )
    return JwtAuthenticator(config, keys, issuer)


def _first(value: str | list[str]) -> str:
    return value if isinstance(value, str) else value[0]
