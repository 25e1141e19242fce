"""The ``postgres`` store when its server freezes, stops, keeps a lock or refuses a privilege.

The tests that freeze or stop the server start one of their own (the session's is shared). Time bounds are generous:
they tell "answers within its deadlines" from "hangs" or "waits out the pool's timeout on every call".
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from gateway.api import ConfigError, ProviderUnavailable
from gateway.contracts.store_contract import ITEMS
from gateway_plugins.stores.postgres import PostgresStore
from tests.fakes.postgres import PostgresServer, started_server

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of this test's own, which it may freeze or stop."""
    yield from started_server()


async def _served_again(store: PostgresStore, within: float = 60.0) -> None:
    """Wait until the store answers again (the breaker may refuse calls for a moment after a failure)."""
    deadline = time.monotonic() + within
    while True:
        try:
            assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}
            return
        except ProviderUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def test_a_frozen_server_fails_the_call_instead_of_hanging(own_server: PostgresServer) -> None:
    """The pooled connection's check gets no answer: the call fails within the client's deadlines."""
    store = PostgresStore(own_server.dsn(), statement_timeout=1, connect_timeout=2, min_size=1, max_size=2)
    try:
        assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}
        own_server.freeze()
        try:
            started = time.monotonic()
            with pytest.raises(ProviderUnavailable, match="store:postgres"):
                async with asyncio.timeout(90):  # the unfixed store waited for ever
                    await store.fetch_one("SELECT 2 AS two")
            assert time.monotonic() - started < 30
        finally:
            own_server.thaw()
        await _served_again(store)
    finally:
        await store.close()


async def test_a_server_freezing_during_a_transaction_fails_it_and_its_connection_is_discarded(
    own_server: PostgresServer,
) -> None:
    store = PostgresStore(own_server.dsn(), statement_timeout=2, connect_timeout=2, min_size=1, max_size=1)
    try:
        before = await store.fetch_one("SELECT pg_backend_pid() AS pid")

        async def freeze_once_sleeping() -> None:
            async with await psycopg.AsyncConnection.connect(own_server.dsn(), autocommit=True) as admin:
                while not await (
                    await admin.execute("SELECT 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(1.5)'")
                ).fetchone():
                    await asyncio.sleep(0.05)
            own_server.freeze()

        freezer = asyncio.create_task(freeze_once_sleeping())
        try:
            started = time.monotonic()
            with pytest.raises(ProviderUnavailable, match="did not answer"):
                async with asyncio.timeout(90), store.transaction() as tx:
                    await tx.execute("SELECT pg_sleep(1.5)")
                    await freezer  # frozen during that statement (which then failed) or by now, however slow
                    await tx.execute("SELECT 1")
            assert time.monotonic() - started < 30
            await freezer
        finally:
            own_server.thaw()
        await _served_again(store)
        after = await store.fetch_one("SELECT pg_backend_pid() AS pid")
        assert after != before  # the connection left in an unknown state was not handed out again
    finally:
        await store.close()


async def test_a_stopped_server_fails_each_call_at_once_with_the_real_cause(own_server: PostgresServer) -> None:
    dsn = own_server.dsn().replace("postgres@", "postgres:Sekr1tPass@")
    store = PostgresStore(dsn, min_size=2, max_size=4, connect_timeout=10)
    try:
        assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}
        own_server.stop()
        for _ in range(4):
            started = time.monotonic()
            with pytest.raises(ProviderUnavailable) as failed:
                await store.fetch_one("SELECT 1")
            assert time.monotonic() - started < 5  # the unfixed store waited out connect_timeout (10 s) every time
            assert "refused" in failed.value.reason
            assert "no free connection" not in failed.value.reason
            assert "Sekr1tPass" not in str(failed.value)
    finally:
        await store.close()


async def test_once_a_pooled_connection_stops_answering_the_others_are_not_waited_on(
    own_server: PostgresServer,
) -> None:
    """A frozen server: the first call finds its pooled connection silent; the next must not try the other idle
    (as silent) ones one by one, waiting out ``connect_timeout`` on each."""
    store = PostgresStore(own_server.dsn(), min_size=4, max_size=4, connect_timeout=5, statement_timeout=1)
    try:
        assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}
        await _pool_filled(store, 4)
        own_server.freeze()
        try:
            with pytest.raises(ProviderUnavailable):
                await store.fetch_one("SELECT 1")
            started = time.monotonic()
            with pytest.raises(ProviderUnavailable):
                await store.fetch_one("SELECT 1")
            assert time.monotonic() - started < 2.5  # not the 5 s of another silent connection
        finally:
            own_server.thaw()
        await _served_again(store)
    finally:
        await store.close()


async def _pool_filled(store: PostgresStore, size: int, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while (store._pool is None or store._pool.get_stats().get("pool_available", 0) < size) and (
        time.monotonic() < deadline
    ):
        await asyncio.sleep(0.05)


async def test_a_failed_new_connection_leaves_calls_on_the_pooled_ones(own_server: PostgresServer) -> None:
    """A server that stops taking new sessions (a pooler at its client limit behaves alike) while the pool holds a
    working connection: a failed probe (what ``/health`` does) must not fail the calls the open one can serve."""
    name = own_server.create_database()
    store = PostgresStore(own_server.dsn(name), min_size=1, max_size=1)
    admin = psycopg.connect(own_server.dsn(), autocommit=True)
    try:
        assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(name)))
        with pytest.raises(ProviderUnavailable):
            await store.probe()
        for _ in range(3):
            assert await store.fetch_one("SELECT 1 AS one") == {"one": 1}
        async with store.transaction() as tx:
            assert await tx.fetch_one("SELECT 2 AS two") == {"two": 2}
    finally:
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name)))
        admin.close()
        await store.close()


async def test_a_statement_kept_waiting_by_a_lock_is_a_retryable_unavailability(postgres_db: str) -> None:
    store = PostgresStore(postgres_db, statement_timeout=0.5)
    try:
        await store.execute("CREATE TABLE held (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        await store.execute("INSERT INTO held VALUES (1, 0)")
        async with await psycopg.AsyncConnection.connect(postgres_db) as holder:
            await holder.execute("SELECT n FROM held WHERE id = 1 FOR UPDATE")  # a transaction left open
            with pytest.raises(ProviderUnavailable, match=r"statement_timeout \(0\.5 s\).*lock"):
                await store.execute("UPDATE held SET n = n + 1 WHERE id = 1")
            with pytest.raises(ProviderUnavailable, match="statement_timeout"):
                async with store.transaction() as tx:
                    await tx.execute("UPDATE held SET n = n + 1 WHERE id = 1")
            await holder.rollback()
        assert await store.execute("UPDATE held SET n = n + 1 WHERE id = 1") == 1
    finally:
        await store.close()


async def test_connections_carry_tcp_keepalives_unless_the_dsn_sets_them(postgres_db: str) -> None:
    for dsn, idle in ((postgres_db, "10"), (f"{postgres_db}?keepalives_idle=77", "77")):
        store = PostgresStore(dsn)
        try:
            async with store.transaction() as tx:
                parameters = tx._connection.info.get_parameters()
            assert parameters["keepalives"] == "1"
            assert parameters["keepalives_idle"] == idle
            assert int(parameters["tcp_user_timeout"]) > 0
        finally:
            await store.close()


@pytest.fixture
def unprivileged_dsn(postgres_db: str) -> Iterator[tuple[str, str]]:
    """The DSN of a role that may connect to the test database but create nothing in it, and the role's name."""
    role = f"gw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_db, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")  # PostgreSQL < 15 grants it to everyone
    try:
        yield postgres_db.replace("postgresql://postgres@", f"postgresql://{role}@"), role
    finally:
        with psycopg.connect(postgres_db, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,), prepare=False
            )
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        with psycopg.connect(postgres_db.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


async def test_a_role_that_may_not_create_tables_is_a_config_error_naming_store_role_and_schema(
    unprivileged_dsn: tuple[str, str],
) -> None:
    dsn, role = unprivileged_dsn
    store = PostgresStore(dsn)
    try:
        with pytest.raises(ConfigError) as refused:
            await store.migrate("contract", [ITEMS])
        message = str(refused.value)
        assert message.startswith("store:postgres: ")
        assert f"role {role!r}" in message and "schema 'public'" in message
        assert f'GRANT CREATE ON SCHEMA "public" TO "{role}"' in message
    finally:
        await store.close()


async def test_a_role_that_may_not_create_the_schema_is_a_config_error_naming_it(
    unprivileged_dsn: tuple[str, str],
) -> None:
    dsn, role = unprivileged_dsn
    store = PostgresStore(dsn, schema="gateway_data")
    try:
        with pytest.raises(ConfigError) as refused:
            await store.fetch_one("SELECT 1")
        message = str(refused.value)
        assert message.startswith("store:postgres: ") and f"role {role!r}" in message
        assert "'gateway_data'" in message and "CREATE on database" in message
    finally:
        await store.close()


async def test_a_schema_made_beforehand_for_the_role_needs_no_create_on_the_database(
    unprivileged_dsn: tuple[str, str], postgres_db: str
) -> None:
    """What the error above advises works: PostgreSQL's ``CREATE SCHEMA IF NOT EXISTS`` checks the privilege first."""
    dsn, role = unprivileged_dsn
    with psycopg.connect(postgres_db, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA gateway_data AUTHORIZATION {}").format(sql.Identifier(role)))
    store = PostgresStore(dsn, schema="gateway_data")
    try:
        assert await store.fetch_one("SELECT current_schema() AS s") == {"s": "gateway_data"}
    finally:
        await store.close()
