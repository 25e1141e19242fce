"""Test material for the auth plugin tests: a settable clock and real signing keys (made with ``cryptography``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa


class Clock:
    """A settable UTC clock for expiry tests (handed to the authenticator as ``clock=``)."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@dataclass(frozen=True)
class SigningKey:
    """A private key for minting test tokens, and its public half in the forms the authenticator reads."""

    private: Any
    kid: str

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def jwk(self, **extra: Any) -> dict[str, Any]:
        """The public JWK (``kid`` set; ``extra`` adds or overrides members such as ``alg`` or ``use``)."""
        if isinstance(self.private, rsa.RSAPrivateKey):
            data = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key()))
        elif isinstance(self.private, ec.EllipticCurvePrivateKey):
            data = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.private.public_key()))
        else:
            data = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(self.private.public_key()))
        data["kid"] = self.kid
        data.update(extra)
        return {k: v for k, v in data.items() if v is not None}

    def sign(self, claims: dict[str, Any], *, alg: str = "RS256", kid: str | None = "default", **headers: Any) -> str:
        header = dict(headers)
        if kid == "default":
            header["kid"] = self.kid
        elif kid is not None:
            header["kid"] = kid
        return jwt.encode(claims, self.private, algorithm=alg, headers=header or None)


def write_jwks(path: Path, *jwks: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"keys": list(jwks)}), encoding="utf-8")
    return path
