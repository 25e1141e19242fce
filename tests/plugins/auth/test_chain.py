"""The ``chain`` authenticator over real members: JWT (HS256) first, then API keys in a real store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from pydantic import ValidationError

from gateway.api import AUTH, Forbidden, ProviderContext, RelationalStore, Unauthenticated
from gateway.contracts.auth_contract import AuthenticatorContract, Credential
from gateway_plugins.auth import api_key, jwt_bearer
from gateway_plugins.auth.chain import ChainAuthenticator, ChainConfig, build
from gateway_plugins.stores.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

SECRET = "chain-secret-" + "z" * 40


def _token(**overrides: Any) -> str:
    now = int(time.time())
    claims = {"iss": "idp", "aud": "gw", "sub": "ada", "exp": now + 600, "scope": "a:read", "tenant_id": "t1"}
    claims.update(overrides)
    return jwt.encode(claims, SECRET, algorithm="HS256")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[RelationalStore]:
    """SQLite only: the store itself is covered on both backends by the api_key tests."""
    store = SqliteStore(tmp_path / "chain.sqlite3")
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def members(tmp_path: Path, store: RelationalStore) -> dict[str, Any]:
    return {
        "jwt": jwt_bearer.build(
            ProviderContext(
                kind=AUTH,
                name="jwt",
                config=jwt_bearer.JwtConfig(algorithms=["HS256"], secret=SECRET, issuer="idp", audience="gw"),
                data_dir=tmp_path,
                provider=lambda kind, name=None: None,
            )
        ),
        "api_key": api_key.ApiKeyAuthenticator(store),
    }


@pytest.fixture
def chain(tmp_path: Path, members: dict[str, Any]) -> ChainAuthenticator:
    """Built the way the host builds it: each member is a provider looked up by name."""

    def provider(kind: str, name: str | None = None) -> Any:
        assert kind == AUTH and name is not None
        return members[name]

    return build(ProviderContext(kind=AUTH, name="chain", config=ChainConfig(), data_dir=tmp_path, provider=provider))


class TestChainWithApiKeyContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, chain: ChainAuthenticator) -> ChainAuthenticator:
        return chain

    @pytest.fixture
    async def credential(self, members: dict[str, Any]) -> Credential:
        issued = await members["api_key"].create_key(name="svc", scopes=["b:write"], tenant="t2")
        return Credential(
            headers={"X-API-Key": issued.key},
            secret=issued.key.split("_", 2)[2],
            subject=f"key:{issued.info.id}",
            tenant="t2",
            scopes=frozenset({"b:write"}),
            method="api_key",
        )


class TestChainWithJwtContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, chain: ChainAuthenticator) -> ChainAuthenticator:
        return chain

    @pytest.fixture
    def credential(self) -> Credential:
        token = _token()
        return Credential(
            headers={"Authorization": f"Bearer {token}"},
            secret=token.rsplit(".", 1)[1],
            subject="ada",
            tenant="t1",
            scopes=frozenset({"a:read"}),
            method="jwt",
        )


async def test_first_member_with_a_credential_decides(chain: ChainAuthenticator, members: dict[str, Any]) -> None:
    issued = await members["api_key"].create_key(name="svc", scopes=[], tenant="t2")
    both = {"Authorization": f"Bearer {_token()}", "X-API-Key": issued.key}
    assert (await chain.authenticate(both)).method == "jwt"

    # a present but invalid token is refused, not retried with the API key
    with pytest.raises(Unauthenticated) as caught:
        await chain.authenticate({"Authorization": f"Bearer {_token(aud='x')}", "X-API-Key": issued.key})
    assert caught.value.details == {"reason": "invalid_audience", "method": "jwt"}

    # another Authorization scheme (a proxy's Basic auth) is not a bearer token: the API key decides
    principal = await chain.authenticate({"Authorization": "Basic dTpw", "X-API-Key": issued.key})
    assert principal.method == "api_key"


async def test_no_credential_at_all(chain: ChainAuthenticator) -> None:
    with pytest.raises(Unauthenticated) as caught:
        await chain.authenticate({})
    assert caught.value.details == {"reason": "missing"}
    assert "Bearer" in caught.value.message and "X-API-Key" in caught.value.message


async def test_challenge_lists_every_method_and_shows_the_error_to_its_member(chain: ChainAuthenticator) -> None:
    api = 'ApiKey realm="gateway", header="X-API-Key"'
    assert chain.challenge() == f'Bearer realm="gateway", {api}'
    with pytest.raises(Unauthenticated) as bad_token:
        await chain.authenticate({"Authorization": f"Bearer {_token(exp=1)}"})
    assert chain.challenge(bad_token.value) == (
        f'Bearer realm="gateway", error="invalid_token", error_description="token expired", {api}'
    )
    with pytest.raises(Unauthenticated) as bad_key:
        await chain.authenticate({"X-API-Key": "nope"})
    assert chain.challenge(bad_key.value) == f'Bearer realm="gateway", {api}'
    assert 'error="insufficient_scope"' in (chain.challenge(Forbidden("no", details={"scope": "s"})) or "")


class _ProtocolOnly:
    """A third-party member implementing exactly the protocol (challenge() takes no error)."""

    name = "custom"

    async def authenticate(self, headers: Any) -> Any:
        raise Unauthenticated("bad custom credential", details={"reason": "malformed"})

    def challenge(self) -> str | None:
        return 'Custom realm="x"'


async def test_members_that_implement_only_the_protocol() -> None:
    chain = ChainAuthenticator([_ProtocolOnly()])
    with pytest.raises(Unauthenticated) as caught:
        await chain.authenticate({})
    assert chain.challenge(caught.value) == 'Custom realm="x"'


@pytest.mark.parametrize("methods", [[], ["jwt", "jwt"], ["chain"]])
def test_config_is_validated(methods: list[str]) -> None:
    with pytest.raises(ValidationError):
        ChainConfig(methods=methods)
