"""The ``postgres`` store against a real PostgreSQL server: the shared contract, plus its own options."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import psycopg
import pytest

from gateway.api import ConfigError, Migration, ProviderContext, ProviderUnavailable
from gateway.contracts.store_contract import ITEMS, OpenStore, StoreContract
from gateway_plugins.stores.postgres import PostgresStore, PostgresStoreConfig, create_postgres_store

pytestmark = pytest.mark.postgres


class TestPostgresStoreContract(StoreContract):
    @pytest.fixture
    def open_store(self, postgres_db: str) -> OpenStore:
        return lambda: PostgresStore(postgres_db, max_size=4)


class TestPostgresStoreInASchemaWithoutPreparedStatements(StoreContract):
    """``schema`` set and ``prepare_threshold = 0`` (everything prepared: placeholders and scripts must cope)."""

    @pytest.fixture
    def open_store(self, postgres_db: str) -> OpenStore:
        return lambda: PostgresStore(postgres_db, schema="gateway data", prepare_threshold=0, min_size=0)


def _context(config: PostgresStoreConfig) -> ProviderContext:
    def no_provider(kind: str, name: str | None = None) -> object:
        raise AssertionError(f"unexpected provider lookup {kind}/{name}")

    return ProviderContext("store", "postgres", config, Path("/nonexistent"), no_provider)


@pytest.mark.anyio
async def test_config_from_toml_shape_with_the_dsn_in_the_environment(
    postgres_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_GATEWAY_DSN", postgres_db)
    config = PostgresStoreConfig.model_validate(
        {"dsn": {"env": "TEST_GATEWAY_DSN"}, "schema": "gw", "max_size": 3, "statement_timeout": 0.5}
    )
    assert postgres_db not in repr(config)  # the DSN may hold a password: never in reprs or logs
    store = create_postgres_store(_context(config))
    try:
        await store.migrate("contract", [ITEMS])
        assert await store.fetch_one("SELECT current_schema() AS s, current_setting('TimeZone') AS tz") == {
            "s": "gw",
            "tz": "UTC",
        }
        with psycopg.connect(postgres_db) as raw:
            tables = raw.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = 'items'")
            assert tables.fetchall() == [("gw",)]
        with pytest.raises(ProviderUnavailable, match=r"statement_timeout \(0\.5 s\)"):  # in force, and retryable
            await store.execute("SELECT pg_sleep(5)")
    finally:
        await store.close()


def test_no_dsn_makes_the_provider_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_GATEWAY_DSN", raising=False)
    config = PostgresStoreConfig.model_validate({"dsn": {"env": "UNSET_GATEWAY_DSN"}})
    with pytest.raises(ProviderUnavailable, match="no dsn"):
        create_postgres_store(_context(config))


@pytest.mark.anyio
async def test_an_unreachable_server_is_reported_with_its_cause() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = PostgresStore(f"postgresql://nobody@127.0.0.1:{port}/x", connect_timeout=2)
    with pytest.raises(ProviderUnavailable, match="refused"):
        await store.fetch_one("SELECT 1")
    await store.close()


def test_an_at_sign_left_in_a_password_is_refused_without_quoting_it() -> None:
    with pytest.raises(ConfigError, match="%40") as refused:
        PostgresStore("postgresql://gateway:Sec@ret77xyz@127.0.0.1:5432/gw")
    assert "ret77xyz" not in str(refused.value)
    PostgresStore("host=@pgsock dbname=gw")  # a leading '@' is libpq's abstract Unix socket
    PostgresStore("postgresql://gw@/gw?host=@pgsock")


@pytest.mark.anyio
async def test_a_connection_lost_during_a_call_is_the_store_unavailable(postgres_db: str) -> None:
    store = PostgresStore(postgres_db, max_size=2)
    try:
        await store.execute("SELECT set_config('application_name', 'doomed', false)")

        async def end_the_session() -> None:
            await asyncio.sleep(0.5)
            async with await psycopg.AsyncConnection.connect(postgres_db, autocommit=True) as admin:
                await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(%'"
                )

        ender = asyncio.create_task(end_the_session())
        with pytest.raises(ProviderUnavailable, match="store:postgres"):
            async with store.transaction() as tx:
                await tx.execute("SELECT pg_sleep(10)")
        await ender
        assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}  # and the next call is served
    finally:
        await store.close()


@pytest.mark.anyio
async def test_postgres_casts_and_dollar_quotes_survive_translation(postgres_db: str) -> None:
    store = PostgresStore(postgres_db)
    try:
        row = await store.fetch_one(
            "SELECT :n::int + 1 AS n, $$:not_a_param 100%$$ AS body, '{1,2}'::int[] AS arr", {"n": "41"}
        )
        assert row == {"n": 42, "body": ":not_a_param 100%", "arr": [1, 2]}
    finally:
        await store.close()


@pytest.mark.anyio
async def test_replicas_migrating_at_once_apply_each_migration_once(postgres_db: str) -> None:
    slow = Migration(1, "slow", "SELECT pg_sleep(0.2); CREATE TABLE once (x INTEGER); INSERT INTO once VALUES (1)")
    replicas = [PostgresStore(postgres_db) for _ in range(4)]
    try:
        await asyncio.gather(*(replica.migrate("race", [slow]) for replica in replicas))
        assert await replicas[0].fetch_all("SELECT x FROM once") == [{"x": 1}]
    finally:
        await asyncio.gather(*(replica.close() for replica in replicas))


@pytest.mark.parametrize("prepared", [True, False])
@pytest.mark.anyio
async def test_prepared_statements_can_be_turned_off_for_transaction_poolers(postgres_db: str, prepared: bool) -> None:
    config = PostgresStoreConfig.model_validate(
        {"dsn": postgres_db, "prepared_statements": prepared, "min_size": 1, "max_size": 1}
    )
    store = create_postgres_store(_context(config))
    try:
        for n in range(10):
            assert await store.fetch_one("SELECT :n::int AS v", {"n": n}) == {"v": n}
        row = await store.fetch_one("SELECT count(*) AS n FROM pg_prepared_statements")  # this session's
        assert row is not None and (row["n"] > 0) is prepared
    finally:
        await store.close()


@pytest.mark.anyio
@pytest.mark.parametrize("size", [2, 10])
async def test_connections_the_server_dropped_are_replaced_not_handed_out(postgres_db: str, size: int) -> None:
    """After a restart (or an administrator ending sessions) the pool's idle connections are dead: the next call
    gets a fresh one instead of failing (with ten of them, the pool alone would try them one by one, pausing 1, 2,
    4 s... between them, and time the call out)."""
    store = PostgresStore(postgres_db, min_size=size, max_size=size)
    try:
        assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}
        async with await psycopg.AsyncConnection.connect(postgres_db, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        await asyncio.sleep(0.2)
        assert await store.fetch_one("SELECT 2 AS two") == {"two": 2}
        assert await store.fetch_one("SELECT 3 AS three") == {"three": 3}
    finally:
        await store.close()


@pytest.mark.anyio
async def test_tables_in_a_schema_the_store_does_not_reach_are_a_config_error(postgres_db: str) -> None:
    """``schema`` dropped from the config (as for a transaction pooler) would start an empty memory beside the real
    one: the store says where the tables are instead."""
    first = PostgresStore(postgres_db, schema="gateway")
    try:
        await first.migrate("items", [Migration(1, "items", "CREATE TABLE items (x INTEGER)")])
    finally:
        await first.close()
    elsewhere = PostgresStore(postgres_db)
    try:
        with pytest.raises(ConfigError, match="the 'items' tables in schema 'gateway', which the store does not reach"):
            await elsewhere.migrate("items", [Migration(1, "items", "CREATE TABLE items (x INTEGER)")])
        assert await elsewhere.fetch_one("SELECT to_regclass('public.items') AS t") == {"t": None}  # nothing made
    finally:
        await elsewhere.close()
    staging = PostgresStore(postgres_db, schema="staging")  # a deployment of its own in the same database
    try:
        await staging.migrate("items", [Migration(1, "items", "CREATE TABLE items (x INTEGER)")])
    finally:
        await staging.close()
