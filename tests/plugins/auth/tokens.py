"""Helpers for the jwt tests: the specification's token, hand-forged tokens, and building the authenticator."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest

from gateway.api import ProviderContext, Unauthenticated
from gateway_plugins.auth.jwt_bearer import JwtAuthenticator, JwtConfig, build

SECRET = "s3cr3t-" + "x" * 40
ISSUER = "context-engine"
AUDIENCE = "api"


def claims(**overrides: Any) -> dict[str, Any]:
    """The token of the API specification (§1.1), valid for 15 minutes."""
    now = int(time.time())
    base = {
        "iss": ISSUER,
        "sub": "user-uuid",
        "aud": AUDIENCE,
        "iat": now,
        "exp": now + 900,
        "scope": "search:read index:write",
        "tenant_id": "org-uuid",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def make(tmp_path: Path, **config: Any) -> JwtAuthenticator:
    """Build through the provider factory, from a config table as the host validates it."""
    table = {"issuer": ISSUER, "audience": AUDIENCE, **config}
    ctx = ProviderContext(
        kind="auth", name="jwt", config=JwtConfig.model_validate(table), data_dir=tmp_path, provider=_no_provider
    )
    return build(ctx)


def _no_provider(kind: str, name: str | None = None) -> Any:
    raise AssertionError("the jwt authenticator needs no other provider")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def hs256(payload: dict[str, Any], secret: str = SECRET, **headers: Any) -> str:
    return jwt.encode(payload, secret, algorithm="HS256", headers=headers or None)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], payload: dict[str, Any], key: bytes | None) -> str:
    """A token built by hand (what an attacker sends): HMAC-SHA256 with ``key``, or no signature at all."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    signature = b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest()) if key else ""
    return f"{signing_input}.{signature}"


async def reason(auth: JwtAuthenticator, headers: dict[str, str]) -> str:
    with pytest.raises(Unauthenticated) as caught:
        await auth.authenticate(headers)
    return caught.value.details["reason"]
