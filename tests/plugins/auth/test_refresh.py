"""The ``jwt`` authenticator as its own issuer, on real stores (SQLite, PostgreSQL): access tokens it accepts,
refresh-token rotation, reuse revoking the family, expiry, concurrency, storage (hashed), and the key options."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from pydantic import ValidationError

from gateway.api import STORE, ProviderContext, RelationalStore, ServiceUnavailable, Unauthenticated
from gateway.contracts.auth_contract import AuthenticatorContract, Credential
from gateway_plugins.auth.jwt_bearer import JwtAuthenticator, JwtConfig, build
from gateway_plugins.auth.jwt_issuer import TokenIssuer
from gateway_plugins.auth.jwt_keys import SigningKey as Signer
from gateway_plugins.auth.refresh_tokens import REFRESH_TOKENS
from tests.plugins.auth.material import Clock, SigningKey, write_jwks
from tests.plugins.auth.tokens import AUDIENCE, ISSUER, SECRET, bearer

pytestmark = pytest.mark.anyio

SCOPES = ["search:read", "index:write"]


def _issuer(store: RelationalStore, clock: Clock, **overrides: Any) -> TokenIssuer:
    options: dict[str, Any] = {
        "issuer": ISSUER,
        "audience": AUDIENCE,
        "access_lifetime": timedelta(seconds=900),
        "refresh_lifetime": timedelta(days=30),
        "clock": clock,
        **overrides,
    }
    return TokenIssuer(Signer("HS256", SECRET.encode()), store, **options)


def _authenticator(tmp_path: Path, store: RelationalStore, **table: Any) -> JwtAuthenticator:
    """Built through the provider factory, as the host builds it, with ``store`` as the relational store."""
    config = JwtConfig.model_validate(
        {"algorithms": ["HS256"], "secret": SECRET, "issuer": ISSUER, "audience": AUDIENCE, "issuing": {}, **table}
    )

    def provider(kind: str, name: str | None = None) -> Any:
        assert kind == STORE
        return store

    return build(ProviderContext(kind="auth", name="jwt", config=config, data_dir=tmp_path, provider=provider))


async def _refused(issuer: TokenIssuer, token: str) -> str:
    with pytest.raises(Unauthenticated) as refused:
        await issuer.refresh(token)
    assert not token or token not in refused.value.message
    return refused.value.details["reason"]


class TestIssuedTokensHonourTheContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, tmp_path: Path, store: RelationalStore) -> JwtAuthenticator:
        return _authenticator(tmp_path, store)

    @pytest.fixture
    async def credential(self, authenticator: JwtAuthenticator) -> Credential:
        assert authenticator.issuer is not None
        pair = await authenticator.issuer.issue("ada", "acme", SCOPES)
        return Credential(
            headers=bearer(pair.access_token),
            secret=pair.access_token.rsplit(".", 1)[1],
            subject="ada",
            tenant="acme",
            scopes=frozenset(SCOPES),
            method="jwt",
            extra_secrets=(pair.refresh_token,),
        )


async def test_an_access_token_carries_the_grant_and_expires_in_900_seconds(
    tmp_path: Path, store: RelationalStore
) -> None:
    authenticator = _authenticator(tmp_path, store)
    assert authenticator.issuer is not None
    pair = await authenticator.issuer.issue("ada", "acme", SCOPES)
    assert pair.expires_in == 900
    principal = await authenticator.authenticate(bearer(pair.access_token))
    assert (principal.subject, principal.tenant, principal.scopes) == ("ada", "acme", frozenset(SCOPES))
    claims = jwt.decode(pair.access_token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 900 and claims["iss"] == ISSUER and claims["aud"] == AUDIENCE
    assert claims["scope"] == "index:write search:read" and claims["tenant_id"] == "acme" and claims["jti"]
    assert jwt.get_unverified_header(pair.access_token)["typ"] == "at+jwt"
    assert REFRESH_TOKENS.parse(pair.refresh_token) is not None


async def test_rotation_spends_each_refresh_token_once(store: RelationalStore, clock: Clock) -> None:
    issuer = _issuer(store, clock)
    first = await issuer.issue("ada", "acme", SCOPES)
    second = await issuer.refresh(first.refresh_token)
    third = await issuer.refresh(second.refresh_token)
    assert len({first.refresh_token, second.refresh_token, third.refresh_token}) == 3
    assert second.access_token != first.access_token
    claims = jwt.decode(third.access_token, SECRET, algorithms=["HS256"], audience=AUDIENCE)
    assert (claims["sub"], claims["tenant_id"]) == ("ada", "acme")


async def test_reusing_a_spent_token_revokes_the_whole_family(store: RelationalStore, clock: Clock) -> None:
    issuer = _issuer(store, clock)
    stolen = await issuer.issue("ada", "acme", SCOPES)
    legit = await issuer.refresh(stolen.refresh_token)  # the client rotates as it should
    other_family = await issuer.issue("ada", "acme", SCOPES)  # another device of the same user
    assert await _refused(issuer, stolen.refresh_token) == "reused"  # the thief replays the old token
    assert await _refused(issuer, legit.refresh_token) == "revoked"  # and the rotated one stops working too
    assert await _refused(issuer, stolen.refresh_token) == "revoked"
    assert (await issuer.refresh(other_family.refresh_token)).refresh_token  # other families are untouched


async def test_expired_malformed_unknown_and_tampered_tokens_are_refused(store: RelationalStore, clock: Clock) -> None:
    issuer = _issuer(store, clock, refresh_lifetime=timedelta(hours=1))
    pair = await issuer.issue("ada", None, [])
    tampered = pair.refresh_token[:-1] + ("A" if pair.refresh_token[-1] != "A" else "B")
    assert await _refused(issuer, tampered) == "unknown"
    unknown_id = REFRESH_TOKENS.new()[1]
    assert await _refused(issuer, unknown_id) == "unknown"
    for garbage in ("", "gwr_", pair.access_token, "gwk_0123456789abcdef_" + "A" * 43):
        assert await _refused(issuer, garbage) == "malformed"
    clock.advance(timedelta(hours=1, seconds=1))
    assert await _refused(issuer, pair.refresh_token) == "expired"


async def test_of_two_concurrent_refreshes_one_rotates_and_the_other_revokes_the_family(
    open_store: Callable[[], RelationalStore], clock: Clock
) -> None:
    replicas = [_issuer(open_store(), clock), _issuer(open_store(), clock)]  # two gateways, one database
    pair = await replicas[0].issue("ada", "acme", SCOPES)
    outcomes: list[Any] = [None, None]

    async def present(index: int) -> None:
        try:
            outcomes[index] = await replicas[index].refresh(pair.refresh_token)
        except Unauthenticated as exc:
            outcomes[index] = exc.details["reason"]

    async with anyio.create_task_group() as group:
        for index in range(2):
            group.start_soon(present, index)
    rotated = [o for o in outcomes if not isinstance(o, str)]
    assert len(rotated) == 1 and [o for o in outcomes if isinstance(o, str)] == ["reused"]
    assert await _refused(replicas[0], rotated[0].refresh_token) == "revoked"


async def test_refresh_tokens_are_stored_as_sha256_digests_only(store: RelationalStore, clock: Clock) -> None:
    issuer = _issuer(store, clock)
    pair = await issuer.issue("ada", "acme", SCOPES)
    following = await issuer.refresh(pair.refresh_token)
    rows = await store.fetch_all("SELECT * FROM auth_refresh_tokens ORDER BY created_at, id")
    assert len(rows) == 2 and len({row["family_id"] for row in rows}) == 1
    digests = {hashlib.sha256(token.encode()).hexdigest() for token in (pair.refresh_token, following.refresh_token)}
    assert {row["token_hash"] for row in rows} == digests
    dumped = repr(rows)
    for token in (pair.refresh_token, following.refresh_token):
        assert token.split("_", 2)[2] not in dumped  # gwr_<id>_<secret>: the secret may hold "_" itself
    assert sum(row["used_at"] is not None for row in rows) == 1 and all(row["revoked_at"] is None for row in rows)


async def test_revoking_a_principal_ends_its_refresh_tokens(store: RelationalStore, clock: Clock) -> None:
    issuer = _issuer(store, clock)
    ada = [await issuer.issue("ada", "acme", SCOPES) for _ in range(2)]
    bob = await issuer.issue("bob", "acme", SCOPES)
    assert await issuer.revoke("ada", "acme") == 2
    for pair in ada:
        assert await _refused(issuer, pair.refresh_token) == "revoked"
    assert (await issuer.refresh(bob.refresh_token)).access_token


async def test_a_failing_store_is_503_not_401(tmp_path: Path, clock: Clock) -> None:
    from gateway_plugins.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "tokens.sqlite3")
    issuer = _issuer(store, clock)
    pair = await issuer.issue("ada", None, [])
    await store.close()
    with pytest.raises(ServiceUnavailable):
        await issuer.refresh(pair.refresh_token)


async def test_a_private_key_alone_signs_and_verifies_the_gateways_own_tokens(
    tmp_path: Path, store: RelationalStore, ec_key: SigningKey
) -> None:
    """The README's issuer table with only ``private_key_file``: its public half verifies, no other key needed."""
    own = tmp_path / "own.pem"
    own.write_bytes(
        ec_key.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    authenticator = _authenticator(
        tmp_path, store, algorithms=["ES256"], secret=None, issuing={"private_key_file": str(own)}
    )
    assert authenticator.issuer is not None
    pair = await authenticator.issuer.issue("ada", "acme", SCOPES)
    assert (await authenticator.authenticate(bearer(pair.access_token))).subject == "ada"


async def test_a_private_key_signs_and_an_identity_providers_keys_still_verify(
    tmp_path: Path, store: RelationalStore, ec_key: SigningKey, rsa_key: SigningKey
) -> None:
    own = tmp_path / "own.pem"
    own.write_bytes(
        ec_key.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    idp = write_jwks(tmp_path / "idp.json", rsa_key.jwk(alg="RS256"))
    table = {"algorithms": ["ES256", "RS256"], "secret": None, "jwks_file": str(idp)}
    issuing = {"private_key_file": str(own), "key_id": "gateway-1"}
    authenticator = _authenticator(tmp_path, store, **table, issuing=issuing)
    assert authenticator.issuer is not None
    pair = await authenticator.issuer.issue("ada", "acme", SCOPES)
    assert jwt.get_unverified_header(pair.access_token)["kid"] == "gateway-1"
    assert (await authenticator.authenticate(bearer(pair.access_token))).subject == "ada"
    external = rsa_key.sign({"iss": ISSUER, "aud": AUDIENCE, "sub": "eve", "exp": 2**31}, alg="RS256")
    assert (await authenticator.authenticate(bearer(external))).subject == "eve"
    forged = rsa_key.sign({"iss": ISSUER, "aud": AUDIENCE, "sub": "eve", "exp": 2**31}, alg="RS256", kid="gateway-1")
    with pytest.raises(Unauthenticated):  # an RS256 token cannot claim the gateway's ES256 key
        await authenticator.authenticate(bearer(forged))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"algorithms": ["ES256"], "secret": None, "issuing": {}}, "needs 'issuing.private_key_file'"),
        ({"issuing": {"private_key_file": "k.pem"}}, "HS* tokens are signed with 'secret'"),
        (
            {"algorithms": ["ES256"], "secret": None, "public_key_file": "p.pem", "issuing": {"private_key_file": "k"}},
            "set 'issuing.key_id'",
        ),
        ({"issuing": {"access_token_seconds": 5}}, "greater than or equal to 60"),
        ({"issuing": {"lifetime": 5}}, "Extra inputs are not permitted"),
    ],
)
def test_issuing_options_are_checked(table: dict[str, Any], message: str) -> None:
    base = {"algorithms": ["HS256"], "secret": SECRET, "issuer": ISSUER, "audience": AUDIENCE}
    with pytest.raises(ValidationError, match=message.replace("*", r"\*").replace("(", r"\(")):
        JwtConfig.model_validate({**base, **table})
