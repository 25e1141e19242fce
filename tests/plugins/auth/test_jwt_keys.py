"""The ``jwt`` authenticator's key sources (PEM, certificate, JWKS file with rotation) and its configuration."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

from gateway.api import ConfigError, ProviderUnavailable
from gateway_plugins.auth.jwt_bearer import JwtConfig
from tests.plugins.auth.material import SigningKey, write_jwks
from tests.plugins.auth.tokens import AUDIENCE, ISSUER, SECRET, b64, bearer, claims, forge, make, reason

pytestmark = pytest.mark.anyio


# -- key sources ------------------------------------------------------------------------------------------------


async def test_rs256_via_certificate_pem(tmp_path: Path, rsa_key: SigningKey) -> None:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "idp.test")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(rsa_key.private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=1))
        .sign(rsa_key.private, hashes.SHA256())
    )
    (tmp_path / "idp.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    auth = make(tmp_path, algorithms=["RS256"], public_key_file=str(tmp_path / "idp.crt"))
    assert (await auth.authenticate(bearer(rsa_key.sign(claims())))).subject == "user-uuid"


async def test_eddsa_via_pem(tmp_path: Path, ed_key: SigningKey) -> None:
    (tmp_path / "ed.pem").write_bytes(ed_key.public_pem)
    auth = make(tmp_path, algorithms=["EdDSA"], public_key_file=str(tmp_path / "ed.pem"))
    assert (await auth.authenticate(bearer(ed_key.sign(claims(), alg="EdDSA")))).subject == "user-uuid"


async def test_jwks_picks_the_key_by_kid(tmp_path: Path, rsa_key: SigningKey, other_rsa_key: SigningKey) -> None:
    jwks = write_jwks(tmp_path / "jwks.json", rsa_key.jwk(), other_rsa_key.jwk())
    auth = make(tmp_path, algorithms=["RS256"], jwks_file=str(jwks))
    assert (await auth.authenticate(bearer(other_rsa_key.sign(claims())))).subject == "user-uuid"
    assert await reason(auth, bearer(rsa_key.sign(claims(), kid="rsa-2"))) == "invalid_signature"
    assert await reason(auth, bearer(rsa_key.sign(claims(), kid="nobody"))) == "unknown_key"
    assert await reason(auth, bearer(rsa_key.sign(claims(), kid=None))) == "unknown_key"  # two keys, no kid


async def test_jwks_with_one_key_accepts_tokens_without_kid(tmp_path: Path, rsa_key: SigningKey) -> None:
    auth = make(tmp_path, algorithms=["RS256"], jwks_file=str(write_jwks(tmp_path / "j.json", rsa_key.jwk())))
    assert (await auth.authenticate(bearer(rsa_key.sign(claims(), kid=None)))).subject == "user-uuid"


async def test_jwks_ignores_keys_not_for_signing_or_for_other_algorithms(
    tmp_path: Path, rsa_key: SigningKey, other_rsa_key: SigningKey, ec_key: SigningKey
) -> None:
    jwks = write_jwks(
        tmp_path / "jwks.json",
        rsa_key.jwk(use="enc"),
        other_rsa_key.jwk(alg="RS512"),
        ec_key.jwk(),
        {"kty": "oct", "kid": "sym", "k": b64(SECRET.encode())},
        {"kty": "RSA", "kid": "broken", "n": "AQAB"},
        "not a key",
    )
    with pytest.raises(ConfigError, match="no signing key"):
        make(tmp_path, algorithms=["RS256"], jwks_file=str(jwks))
    auth = make(tmp_path, algorithms=["RS256", "ES256"], jwks_file=str(jwks))
    assert (await auth.authenticate(bearer(ec_key.sign(claims(), alg="ES256")))).subject == "user-uuid"
    assert await reason(auth, bearer(rsa_key.sign(claims()))) == "unknown_key"  # its JWK is an encryption key
    assert await reason(auth, bearer(forge({"alg": "HS256", "kid": "sym"}, claims(), SECRET.encode()))) == (
        "unsupported_algorithm"
    )


async def test_jwks_file_is_reread_when_a_new_kid_appears(
    tmp_path: Path, rsa_key: SigningKey, other_rsa_key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gateway_plugins.auth.jwt_keys._RELOAD_INTERVAL", 0.0)
    jwks = write_jwks(tmp_path / "jwks.json", rsa_key.jwk())
    auth = make(tmp_path, algorithms=["RS256"], jwks_file=str(jwks))
    rotated = other_rsa_key.sign(claims())
    assert await reason(auth, bearer(rotated)) == "unknown_key"

    write_jwks(jwks, rsa_key.jwk(), other_rsa_key.jwk())
    stat = jwks.stat()
    os.utime(jwks, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a distinct mtime, whatever the FS
    assert (await auth.authenticate(bearer(rotated))).subject == "user-uuid"

    jwks.write_text("{ broken", encoding="utf-8")  # a bad rewrite keeps the last good keys
    os.utime(jwks, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    assert await reason(auth, bearer(rsa_key.sign(claims(), kid="rsa-9"))) == "unknown_key"
    assert (await auth.authenticate(bearer(rotated))).subject == "user-uuid"


# -- configuration ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"algorithms": ["HS256", "RS256"], "secret": "x" * 40}, "cannot be accepted together"),
        ({"algorithms": ["HS256"], "secret": "x" * 40, "jwks_file": "j.json"}, "verify with 'secret'"),
        ({"algorithms": ["RS256"]}, "exactly one"),
        ({"algorithms": ["RS256"], "jwks_file": "a", "public_key_file": "b"}, "exactly one"),
        ({"algorithms": ["RS256"], "jwks_file": "a", "secret": "x" * 40}, "only for HS"),
        ({"algorithms": ["RS256", "ES256"], "public_key_file": "k.pem"}, "one algorithm family"),
        ({"algorithms": ["none"], "secret": "x" * 40}, "algorithms"),
        ({"algorithms": [], "secret": "x" * 40}, "algorithms"),
        ({"algorithms": ["HS256"], "secret": "x" * 40, "issuer": None}, "issuer"),
        ({"algorithms": ["HS256"], "secret": "x" * 40, "audience": ""}, "audience"),
        ({"algorithms": ["HS256"], "secret": "x" * 40, "leeway": 5}, "leeway"),
    ],
)
def test_config_is_validated(table: dict[str, Any], problem: str) -> None:
    full = {"issuer": ISSUER, "audience": AUDIENCE, **table}
    with pytest.raises(ValueError, match=problem):
        JwtConfig.model_validate({k: v for k, v in full.items() if v is not None})


def test_a_short_hmac_secret_or_an_unset_one_fails_start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="at least 32 bytes"):
        make(tmp_path, algorithms=["HS256"], secret="too-short")
    with pytest.raises(ConfigError, match="at least 64 bytes"):
        make(tmp_path, algorithms=["HS256", "HS512"], secret="x" * 40)
    monkeypatch.delenv("TEST_JWT_UNSET", raising=False)
    with pytest.raises(ProviderUnavailable, match=r"'plugins\.auth\.jwt\.secret' is not set"):
        make(tmp_path, algorithms=["HS256"], secret={"env": "TEST_JWT_UNSET"})


def test_bad_key_files_fail_start_up(tmp_path: Path, ec_key: SigningKey) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        make(tmp_path, algorithms=["RS256"], public_key_file=str(tmp_path / "missing.pem"))
    (tmp_path / "junk.pem").write_text("hello", encoding="utf-8")
    with pytest.raises(ConfigError, match="no PEM public key"):
        make(tmp_path, algorithms=["RS256"], public_key_file=str(tmp_path / "junk.pem"))
    (tmp_path / "ec.pem").write_bytes(ec_key.public_pem)
    with pytest.raises(ConfigError, match="cannot verify RS256"):
        make(tmp_path, algorithms=["RS256"], public_key_file=str(tmp_path / "ec.pem"))
    (tmp_path / "bad.json").write_text('{"nokeys": []}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a JWK Set"):
        make(tmp_path, algorithms=["RS256"], jwks_file=str(tmp_path / "bad.json"))


def test_relative_key_paths_follow_the_config_directory(tmp_path: Path) -> None:
    table = {"algorithms": ["RS256"], "jwks_file": "keys/jwks.json", "issuer": "i", "audience": "a"}
    config = JwtConfig.model_validate(table, context={"config_dir": tmp_path})
    assert config.jwks_file == tmp_path / "keys" / "jwks.json"
    assert JwtConfig.model_validate(table).jwks_file == Path("keys/jwks.json")
