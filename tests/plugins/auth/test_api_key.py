"""The ``api_key`` authenticator on real stores (SQLite, PostgreSQL): the contract, key lifecycle, storage."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from gateway.api import NotFound, RelationalStore, ServiceUnavailable, Unauthenticated, ValidationFailed
from gateway.contracts.auth_contract import AuthenticatorContract, Credential
from gateway_plugins.auth.api_key import ApiKeyAuthenticator
from gateway_plugins.auth.keys import parse_key
from tests.plugins.auth.material import Clock

pytestmark = pytest.mark.anyio


def _secret(key: str) -> str:
    return key.split("_", 2)[2]


class TestApiKeyContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self, store: RelationalStore) -> ApiKeyAuthenticator:
        return ApiKeyAuthenticator(store)

    @pytest.fixture
    async def credential(self, authenticator: ApiKeyAuthenticator) -> Credential:
        issued = await authenticator.create_key(name="ci", scopes=["gim:read", "gim:write"], tenant="acme")
        return Credential(
            headers={"X-API-Key": issued.key},
            secret=_secret(issued.key),
            subject=f"key:{issued.info.id}",
            tenant="acme",
            scopes=frozenset({"gim:read", "gim:write"}),
            method="api_key",
        )


@pytest.fixture
def auth(store: RelationalStore, clock: Clock) -> ApiKeyAuthenticator:
    return ApiKeyAuthenticator(store, clock=clock)


async def _reason(auth: ApiKeyAuthenticator, key: str) -> tuple[str, str]:
    with pytest.raises(Unauthenticated) as caught:
        await auth.authenticate({"X-API-Key": key})
    return caught.value.details["reason"], caught.value.message


# -- refusals ---------------------------------------------------------------------------------------------------


async def test_each_refusal_has_its_own_reason_and_message(auth: ApiKeyAuthenticator, clock: Clock) -> None:
    live = await auth.create_key(name="live", scopes=[], tenant="t")
    revoked = await auth.create_key(name="gone", scopes=[], tenant="t")
    await auth.revoke_key(revoked.info.id)
    expiring = await auth.create_key(name="old", scopes=[], tenant="t", expires_at=clock() + timedelta(hours=1))
    clock.advance(timedelta(hours=2))

    outcomes = {
        "missing": await _reason(auth, ""),
        "malformed": await _reason(auth, "not-a-key"),
        "unknown": await _reason(auth, "gwk_0123456789abcdef_" + "A" * 43),
        "revoked": await _reason(auth, revoked.key),
        "expired": await _reason(auth, expiring.key),
    }
    assert {reason for reason, _ in outcomes.values()} == set(outcomes)
    assert all(reason == expected for expected, (reason, _) in outcomes.items())
    assert len({message for _, message in outcomes.values()}) == len(outcomes)
    assert (await auth.authenticate({"X-API-Key": live.key})).subject == f"key:{live.info.id}"


async def test_wrong_secret_for_a_real_id_looks_like_an_unknown_key(auth: ApiKeyAuthenticator) -> None:
    issued = await auth.create_key(name="a", scopes=[], tenant="t")
    forged = f"gwk_{issued.info.id}_{'A' * 43}"
    assert await _reason(auth, forged) == await _reason(auth, "gwk_0123456789abcdef_" + "A" * 43)


async def test_revoked_or_expired_status_is_told_only_to_the_key_holder(auth: ApiKeyAuthenticator) -> None:
    issued = await auth.create_key(name="a", scopes=[], tenant="t")
    await auth.revoke_key(issued.info.id)
    assert (await _reason(auth, issued.key))[0] == "revoked"
    assert (await _reason(auth, f"gwk_{issued.info.id}_{'B' * 43}"))[0] == "unknown"


async def test_key_works_until_it_expires(auth: ApiKeyAuthenticator, clock: Clock) -> None:
    issued = await auth.create_key(name="a", scopes=["x"], tenant="t", expires_at=clock() + timedelta(minutes=10))
    clock.advance(timedelta(minutes=9, seconds=59))
    assert (await auth.authenticate({"X-API-Key": issued.key})).scopes == {"x"}
    clock.advance(timedelta(seconds=1))
    assert (await _reason(auth, issued.key))[0] == "expired"


async def test_a_key_without_tenant_or_scopes(auth: ApiKeyAuthenticator) -> None:
    issued = await auth.create_key(name="bare", scopes=[])
    principal = await auth.authenticate({"x-api-key": issued.key})
    assert principal.tenant is None and principal.scopes == frozenset()
    assert principal.key == f"key%3A{issued.info.id}"  # ":" escaped without a tenant: never tenant "key"
    assert not principal.allows("gim:read") and principal.allows(None)


async def test_a_dead_store_is_a_service_failure_not_a_401(store: RelationalStore) -> None:
    auth = ApiKeyAuthenticator(store)
    issued = await auth.create_key(name="a", scopes=[], tenant="t")
    await store.close()
    with pytest.raises(ServiceUnavailable):
        await auth.authenticate({"X-API-Key": issued.key})


# -- storage ----------------------------------------------------------------------------------------------------


async def test_only_a_digest_of_the_key_is_stored(auth: ApiKeyAuthenticator, store: RelationalStore) -> None:
    issued = await auth.create_key(name="a", scopes=["s"], tenant="t")
    row = await store.fetch_one("SELECT * FROM auth_api_keys WHERE id = :id", {"id": issued.info.id})
    assert row is not None
    assert row["secret_hash"] == hashlib.sha256(issued.key.encode()).hexdigest()
    secret = _secret(issued.key)
    assert not any(secret[:12] in str(value) for value in row.values())
    assert secret not in repr(issued) and secret not in repr(await auth.list_keys())


async def test_key_format(auth: ApiKeyAuthenticator) -> None:
    keys = [await auth.create_key(name=f"k{i}", scopes=[], tenant="t") for i in range(5)]
    for issued in keys:
        assert issued.key.startswith("gwk_") and len(issued.key) == 64
        assert parse_key(issued.key) == issued.info.id
    assert len({k.key for k in keys}) == len({k.info.id for k in keys}) == 5


async def test_keys_survive_a_restart_and_migrations_run_once(open_store: Callable[[], RelationalStore]) -> None:
    first = open_store()
    issued = await ApiKeyAuthenticator(first).create_key(name="a", scopes=["s"], tenant="t")
    await first.close()

    # a second start must not re-run the migration (CREATE TABLE would fail) and must see the key
    auth = ApiKeyAuthenticator(open_store())
    principal = await auth.authenticate({"X-API-Key": issued.key})
    assert principal.subject == f"key:{issued.info.id}"
    await auth.create_key(name="b", scopes=[], tenant="t")
    assert [k.name for k in await auth.list_keys()] == ["a", "b"]


async def test_concurrent_creation_and_first_use_migrate_once(store: RelationalStore) -> None:
    auth = ApiKeyAuthenticator(store)
    issued = []

    async def create(i: int) -> None:
        issued.append(await auth.create_key(name=f"k{i}", scopes=[], tenant="t"))

    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(create, i)
    assert len({k.info.id for k in issued}) == 10
    assert len(await auth.list_keys()) == 10


# -- management -------------------------------------------------------------------------------------------------


async def test_list_revoke_and_status(auth: ApiKeyAuthenticator, clock: Clock) -> None:
    a = await auth.create_key(name="a", scopes=["s1", "s2"], tenant="t1")
    clock.advance(timedelta(seconds=1))
    b = await auth.create_key(name="b", scopes=[], tenant="t2", expires_at=clock() + timedelta(days=1))
    listed = await auth.list_keys()
    assert [k.id for k in listed] == [a.info.id, b.info.id]
    assert listed[0].scopes == {"s1", "s2"} and listed[1].expires_at == b.info.expires_at

    revoked = await auth.revoke_key(a.info.id)
    assert revoked.revoked_at == clock() and revoked.status(clock()) == "revoked"
    clock.advance(timedelta(hours=1))
    again = await auth.revoke_key(a.info.id)
    assert again.revoked_at == revoked.revoked_at  # the first revocation time stands
    assert [k.id for k in await auth.list_keys(include_revoked=False)] == [b.info.id]
    assert (await auth.list_keys())[0].to_json(clock())["status"] == "revoked"


async def test_revoking_an_unknown_or_invalid_id(auth: ApiKeyAuthenticator) -> None:
    with pytest.raises(NotFound):
        await auth.revoke_key("0123456789abcdef")
    with pytest.raises(ValidationFailed):
        await auth.revoke_key("../../etc")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"name": ""}, "name"),
        ({"name": "line\nbreak"}, "name"),
        ({"tenant": ""}, "tenant"),
        ({"scopes": ["has space"]}, "scope"),
        ({"scopes": ['quo"te']}, "scope"),
        ({"expires_at": datetime(2001, 1, 1, tzinfo=UTC)}, "past"),
        ({"expires_at": datetime(2999, 1, 1)}, "time zone"),
    ],
)
async def test_create_validates(auth: ApiKeyAuthenticator, fields: dict[str, object], problem: str) -> None:
    arguments: dict[str, object] = {"name": "ok", "scopes": ["a"], "tenant": "t", **fields}
    with pytest.raises(ValidationFailed, match=problem):
        await auth.create_key(**arguments)  # type: ignore[arg-type]
    assert await auth.list_keys() == []


async def test_rotate_at_once(auth: ApiKeyAuthenticator, clock: Clock) -> None:
    old = await auth.create_key(name="svc", scopes=["a", "b"], tenant="t")
    new, retired = await auth.rotate_key(old.info.id)
    assert (new.info.name, new.info.tenant, new.info.scopes) == ("svc", "t", {"a", "b"})
    assert retired.revoked_at == clock()
    assert (await _reason(auth, old.key))[0] == "revoked"
    assert (await auth.authenticate({"X-API-Key": new.key})).subject == f"key:{new.info.id}"


async def test_rotate_with_grace(auth: ApiKeyAuthenticator, clock: Clock) -> None:
    old = await auth.create_key(name="svc", scopes=[], tenant="t")
    new, retired = await auth.rotate_key(old.info.id, grace=timedelta(hours=1), expires_at=clock() + timedelta(days=90))
    assert retired.revoked_at is None and retired.expires_at == clock() + timedelta(hours=1)
    assert new.info.expires_at == clock() + timedelta(days=90)
    await auth.authenticate({"X-API-Key": old.key})  # both work during the grace period
    await auth.authenticate({"X-API-Key": new.key})
    clock.advance(timedelta(hours=1))
    assert (await _reason(auth, old.key))[0] == "expired"
    await auth.authenticate({"X-API-Key": new.key})


async def test_rotate_refuses_revoked_and_unknown_keys(auth: ApiKeyAuthenticator) -> None:
    old = await auth.create_key(name="svc", scopes=[], tenant="t")
    await auth.revoke_key(old.info.id)
    with pytest.raises(ValidationFailed, match="revoked"):
        await auth.rotate_key(old.info.id)
    with pytest.raises(NotFound):
        await auth.rotate_key("0123456789abcdef")
    assert len(await auth.list_keys()) == 1  # the failed rotation left nothing behind


async def test_rotate_refuses_expired_and_already_rotated_keys(auth: ApiKeyAuthenticator, clock: Clock) -> None:
    expiring = await auth.create_key(name="svc", scopes=[], tenant="t", expires_at=clock() + timedelta(hours=1))
    old = await auth.create_key(name="svc", scopes=[], tenant="t")
    successor, retired = await auth.rotate_key(old.info.id, grace=timedelta(hours=1))
    assert retired.replaced_by == successor.info.id
    with pytest.raises(ValidationFailed, match="already rotated"):  # in its grace period: one successor only
        await auth.rotate_key(old.info.id)
    clock.advance(timedelta(hours=2))
    with pytest.raises(ValidationFailed, match="expired: create a new key instead"):
        await auth.rotate_key(expiring.info.id)
    with pytest.raises(ValidationFailed, match="expired: create a new key instead"):  # after its grace period
        await auth.rotate_key(old.info.id, grace=timedelta(hours=1))
    keys = await auth.list_keys()
    assert len(keys) == 3 and [k.id for k in keys if k.status(clock()) == "active"] == [successor.info.id]


async def test_the_replacement_keeps_the_old_keys_expiry(auth: ApiKeyAuthenticator, clock: Clock) -> None:
    ends = clock() + timedelta(days=30)
    old = await auth.create_key(name="svc", scopes=["a"], tenant="t", expires_at=ends)
    new, _ = await auth.rotate_key(old.info.id, grace=timedelta(hours=1))
    assert new.info.expires_at == ends
    assert {k.id: k.expires_at for k in await auth.list_keys()}[new.info.id] == ends
    clock.advance(timedelta(days=30))
    assert (await _reason(auth, new.key))[0] == "expired"  # a rotation is no way to outlive the key's expiry


async def test_of_two_concurrent_rotations_one_wins(auth: ApiKeyAuthenticator) -> None:
    old = await auth.create_key(name="svc", scopes=[], tenant="t")
    outcomes: list[object] = []

    async def rotate() -> None:
        try:
            outcomes.append((await auth.rotate_key(old.info.id, grace=timedelta(hours=1)))[0])
        except ValidationFailed as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(rotate)
        tg.start_soon(rotate)
    assert sum(isinstance(o, ValidationFailed) for o in outcomes) == 1
    assert len(await auth.list_keys()) == 2  # the refused rotation left nothing behind


async def test_challenge_names_the_header(store: RelationalStore) -> None:
    assert ApiKeyAuthenticator(store, realm="acme").challenge() == 'ApiKey realm="acme", header="X-API-Key"'
