"""The ``jwt`` authenticator: the contract for each key source, then claim checks and algorithm pinning."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from gateway.api import Forbidden, Unauthenticated
from gateway.contracts.auth_contract import AuthenticatorContract, Credential
from gateway_plugins.auth.jwt_bearer import JwtAuthenticator
from tests.plugins.auth.material import SigningKey, write_jwks
from tests.plugins.auth.tokens import SECRET, bearer, claims, forge, hs256, make, reason

pytestmark = pytest.mark.anyio


def _credential(token: str) -> Credential:
    return Credential(
        headers=bearer(token),
        secret=token.rsplit(".", 1)[1],
        subject="user-uuid",
        tenant="org-uuid",
        scopes=frozenset({"search:read", "index:write"}),
        method="jwt",
    )


# -- the contract, once per key source -------------------------------------------------------------------------


class TestHs256Contract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JwtAuthenticator:
        monkeypatch.setenv("TEST_JWT_SECRET", SECRET)
        return make(tmp_path, algorithms=["HS256"], secret={"env": "TEST_JWT_SECRET"})

    @pytest.fixture
    def credential(self) -> Credential:
        return _credential(hs256(claims()))


class TestRs256PemContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, tmp_path: Path, rsa_key: SigningKey) -> JwtAuthenticator:
        (tmp_path / "public.pem").write_bytes(rsa_key.public_pem)
        return make(tmp_path, algorithms=["RS256"], public_key_file=str(tmp_path / "public.pem"))

    @pytest.fixture
    def credential(self, rsa_key: SigningKey) -> Credential:
        return _credential(rsa_key.sign(claims(), kid=None))


class TestRs256JwksContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, tmp_path: Path, rsa_key: SigningKey, other_rsa_key: SigningKey) -> JwtAuthenticator:
        jwks = write_jwks(tmp_path / "jwks.json", rsa_key.jwk(alg="RS256", use="sig"), other_rsa_key.jwk())
        return make(tmp_path, algorithms=["RS256"], jwks_file=str(jwks))

    @pytest.fixture
    def credential(self, rsa_key: SigningKey) -> Credential:
        return _credential(rsa_key.sign(claims()))


class TestEs256JwksContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, tmp_path: Path, ec_key: SigningKey) -> JwtAuthenticator:
        return make(tmp_path, algorithms=["ES256"], jwks_file=str(write_jwks(tmp_path / "jwks.json", ec_key.jwk())))

    @pytest.fixture
    def credential(self, ec_key: SigningKey) -> Credential:
        return _credential(ec_key.sign(claims(), alg="ES256"))


# -- claims -----------------------------------------------------------------------------------------------------


@pytest.fixture
def hs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JwtAuthenticator:
    monkeypatch.setenv("TEST_JWT_SECRET", SECRET)
    return make(tmp_path, algorithms=["HS256"], secret={"env": "TEST_JWT_SECRET"}, leeway_seconds=10)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (claims(exp=int(time.time()) - 60), "expired"),
        (claims(nbf=int(time.time()) + 3600), "not_yet_valid"),
        (claims(iat=int(time.time()) + 3600), "not_yet_valid"),
        (claims(aud="another-api"), "invalid_audience"),
        (claims(aud=None), "missing_claim"),
        (claims(iss="someone-else"), "invalid_issuer"),
        (claims(iss=None), "missing_claim"),
        (claims(exp=None), "missing_claim"),
        (claims(sub=None), "missing_claim"),
        (claims(sub=""), "invalid_claim"),
        (claims(tenant_id=42), "invalid_claim"),
        (claims(scope=7), "invalid_claim"),
        (claims(scope=None, scp=["ok", 3]), "invalid_claim"),
        (claims(exp="tomorrow"), "malformed"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
async def test_claim_checks(hs: JwtAuthenticator, payload: dict[str, Any], expected: str) -> None:
    assert await reason(hs, bearer(hs256(payload))) == expected


async def test_expired_message_and_challenge(hs: JwtAuthenticator) -> None:
    with pytest.raises(Unauthenticated) as caught:
        await hs.authenticate(bearer(hs256(claims(exp=int(time.time()) - 60))))
    assert caught.value.message == "token expired"
    assert hs.challenge(caught.value) == (
        'Bearer realm="gateway", error="invalid_token", error_description="token expired"'
    )


async def test_leeway_tolerates_small_clock_skew(hs: JwtAuthenticator) -> None:
    principal = await hs.authenticate(bearer(hs256(claims(exp=int(time.time()) - 5))))
    assert principal.subject == "user-uuid"


async def test_audience_list_and_issuer_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_JWT_SECRET", SECRET)
    auth = make(
        tmp_path,
        algorithms=["HS256"],
        secret={"env": "TEST_JWT_SECRET"},
        issuer=["idp-a", "idp-b"],
        audience=["api", "gateway"],
    )
    assert (await auth.authenticate(bearer(hs256(claims(iss="idp-b", aud=["other", "gateway"]))))).subject
    assert await reason(auth, bearer(hs256(claims(iss="idp-c")))) == "invalid_issuer"
    assert await reason(auth, bearer(hs256(claims(iss="idp-a", aud=["other"])))) == "invalid_audience"


async def test_extra_required_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_JWT_SECRET", SECRET)
    auth = make(
        tmp_path, algorithms=["HS256"], secret={"env": "TEST_JWT_SECRET"}, required_claims=["exp", "sub", "tenant_id"]
    )
    assert await reason(auth, bearer(hs256(claims(tenant_id=None)))) == "missing_claim"
    assert (await auth.authenticate(bearer(hs256(claims())))).tenant == "org-uuid"


@pytest.mark.parametrize(
    ("scope_claims", "expected"),
    [
        ({"scope": "search:read  index:write"}, {"search:read", "index:write"}),
        ({"scope": None, "scp": ["gim:read", "gim:write"]}, {"gim:read", "gim:write"}),
        ({"scope": None, "scp": "gim:read gim:write"}, {"gim:read", "gim:write"}),
        ({"scope": "a", "scp": ["b"]}, {"a"}),
        ({"scope": None}, set()),
        ({"scope": ""}, set()),
    ],
)
async def test_scope_parsing(hs: JwtAuthenticator, scope_claims: dict[str, Any], expected: set[str]) -> None:
    principal = await hs.authenticate(bearer(hs256(claims(**scope_claims))))
    assert principal.scopes == expected
    assert principal.all_scopes is False


async def test_tenant_claim(hs: JwtAuthenticator) -> None:
    assert (await hs.authenticate(bearer(hs256(claims(tenant_id="org-9"))))).key == "org-9:user-uuid"
    principal = await hs.authenticate(bearer(hs256(claims(tenant_id=None))))
    assert principal.tenant is None and principal.key == "user-uuid"


async def test_claim_names_are_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_JWT_SECRET", SECRET)
    auth = make(
        tmp_path,
        algorithms=["HS256"],
        secret={"env": "TEST_JWT_SECRET"},
        subject_claim="email",
        scope_claims=["permissions"],
        tenant_claim="https://example.com/org",
        required_claims=["exp"],
    )
    token = hs256(
        claims(sub=None, email="ada@example.com", permissions=["gim:read"], **{"https://example.com/org": "o1"})
    )
    principal = await auth.authenticate(bearer(token))
    assert (principal.subject, principal.tenant, principal.scopes) == ("ada@example.com", "o1", {"gim:read"})


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
async def test_bearer_scheme_is_case_insensitive(hs: JwtAuthenticator, scheme: str) -> None:
    assert (await hs.authenticate({"authorization": f"{scheme} {hs256(claims())}"})).subject == "user-uuid"


async def test_other_schemes_and_missing_header(hs: JwtAuthenticator) -> None:
    assert await reason(hs, {"Authorization": "Basic dXNlcjpwYXNz"}) == "unsupported_scheme"
    assert await reason(hs, {}) == "missing"
    assert await reason(hs, {"X-API-Key": hs256(claims())}) == "missing"


# -- algorithm pinning ------------------------------------------------------------------------------------------


async def test_alg_none_is_refused(hs: JwtAuthenticator) -> None:
    for alg in ("none", "None", "NONE", ""):
        assert await reason(hs, bearer(forge({"alg": alg, "typ": "JWT"}, claims(), None))) == "unsupported_algorithm"


async def test_header_without_alg_is_refused(hs: JwtAuthenticator) -> None:
    assert await reason(hs, bearer(forge({"typ": "JWT"}, claims(), SECRET.encode()))) == "unsupported_algorithm"


async def test_token_cannot_switch_rs256_to_hs256(tmp_path: Path, rsa_key: SigningKey) -> None:
    """The classic confusion: an HS256 token 'signed' with the RS256 public key as the HMAC secret."""
    (tmp_path / "public.pem").write_bytes(rsa_key.public_pem)
    auth = make(tmp_path, algorithms=["RS256"], public_key_file=str(tmp_path / "public.pem"))
    forged = forge({"alg": "HS256", "typ": "JWT"}, claims(), rsa_key.public_pem)
    assert await reason(auth, bearer(forged)) == "unsupported_algorithm"


async def test_unlisted_algorithm_of_the_same_family_is_refused(tmp_path: Path, rsa_key: SigningKey) -> None:
    (tmp_path / "public.pem").write_bytes(rsa_key.public_pem)
    auth = make(tmp_path, algorithms=["RS256"], public_key_file=str(tmp_path / "public.pem"))
    assert await reason(auth, bearer(rsa_key.sign(claims(), alg="RS384"))) == "unsupported_algorithm"
    assert await reason(auth, bearer(rsa_key.sign(claims(), alg="PS256"))) == "unsupported_algorithm"


async def test_hs256_signed_with_another_secret(hs: JwtAuthenticator) -> None:
    assert await reason(hs, bearer(hs256(claims(), secret="another-" + "y" * 40))) == "invalid_signature"


async def test_rs256_signed_by_another_key(tmp_path: Path, rsa_key: SigningKey, other_rsa_key: SigningKey) -> None:
    (tmp_path / "public.pem").write_bytes(rsa_key.public_pem)
    auth = make(tmp_path, algorithms=["RS256", "PS256"], public_key_file=str(tmp_path / "public.pem"))
    assert await reason(auth, bearer(other_rsa_key.sign(claims(), kid=None))) == "invalid_signature"
    assert (await auth.authenticate(bearer(rsa_key.sign(claims(), alg="PS256", kid=None)))).subject == "user-uuid"


# -- challenge --------------------------------------------------------------------------------------------------


async def test_challenge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_JWT_SECRET", SECRET)
    auth = make(
        tmp_path,
        algorithms=["HS256"],
        secret={"env": "TEST_JWT_SECRET"},
        realm="acme gateway",
        resource_metadata_url="https://gw.example.com/.well-known/oauth-protected-resource",
    )
    metadata = 'resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource"'
    assert auth.challenge() == f'Bearer realm="acme gateway", {metadata}'
    with pytest.raises(Unauthenticated) as missing:
        await auth.authenticate({})
    assert auth.challenge(missing.value) == f'Bearer realm="acme gateway", {metadata}'  # RFC 6750 §3.1: no error
    with pytest.raises(Unauthenticated) as bad:
        await auth.authenticate(bearer(hs256(claims(aud="x"))))
    assert auth.challenge(bad.value) == (
        f'Bearer realm="acme gateway", error="invalid_token", '
        f'error_description="token audience not accepted", {metadata}'
    )
    forbidden = Forbidden("this tool needs scope gim:write", details={"scope": "gim:write"})
    assert auth.challenge(forbidden) == (
        f'Bearer realm="acme gateway", error="insufficient_scope", '
        f'error_description="this tool needs scope gim:write", scope="gim:write", {metadata}'
    )
