"""Statements on one connection of the ``postgres`` store: parameters, deadlines, transactions, migrations."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import psycopg
import structlog
from psycopg import AsyncConnection, sql
from psycopg.types.json import Jsonb

from gateway.api import ConfigError, Migration, StoreIntegrityError
from gateway.api.stores import Params, Row
from gateway_plugins.stores.guard import TransactionState
from gateway_plugins.stores.postgres_health import bounded
from gateway_plugins.stores.sql import MIGRATIONS_TABLE, check_applied, require_aware, to_pyformat

log = structlog.get_logger(__name__)

_LOCK_MIGRATIONS = "SELECT pg_advisory_xact_lock(hashtextextended('mcp-gateway:migrations', 0))"
_MIGRATIONS_DDL = f"""
CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
    namespace TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, version)
)
"""


def keepalives(connect_timeout: float) -> dict[str, int]:
    """TCP keepalives, and a limit on unacknowledged data, so that a server gone from the network (no reset ever
    comes) is noticed in about twice ``connect_timeout``. Settings the DSN makes itself win."""
    idle, interval, count = math.ceil(connect_timeout), math.ceil(connect_timeout / 3), 3
    return {
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": interval,
        "keepalives_count": count,
        "tcp_user_timeout": (idle + interval * count) * 1000,
    }


def to_postgres_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return Jsonb(value)
    if isinstance(value, datetime):
        return require_aware(value)
    return value


def postgres_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: to_postgres_value(value) for key, value in (params or {}).items()}


class Transaction(TransactionState):
    """The :class:`gateway.api.Transaction` of one pooled connection."""

    def __init__(self, connection: AsyncConnection[Row], deadline: float | None, provider: str) -> None:
        super().__init__()
        self._connection = connection
        self._deadline = deadline
        self._provider = provider

    async def _run(self, sql_text: str, params: Params | None, fetch: Literal["none", "one", "all"]) -> Any:
        self._check()
        try:
            return await run(self._connection, sql_text, params, fetch, self._deadline, self._provider)
        except StoreIntegrityError:
            self.rolled_back = True  # PostgreSQL has aborted the transaction; it is rolled back on exit
            raise

    async def execute(self, sql: str, params: Params | None = None) -> int:
        return int(await self._run(sql, params, "none"))

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        self._check()
        try:
            async with bounded(self._connection, self._deadline, self._provider), self._connection.cursor() as cursor:
                await cursor.executemany(to_pyformat(sql), [postgres_params(row) for row in rows])
        except psycopg.IntegrityError as exc:
            self.rolled_back = True
            raise StoreIntegrityError(str(exc)) from exc

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        return await self._run(sql, params, "one")

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        return await self._run(sql, params, "all")


async def run(
    connection: AsyncConnection[Row],
    sql_text: str,
    params: Params | None,
    fetch: Literal["none", "one", "all"],
    deadline: float | None,
    provider: str,
) -> Any:
    try:
        async with bounded(connection, deadline, provider), connection.cursor() as cursor:
            await cursor.execute(to_pyformat(sql_text), postgres_params(params))
            if fetch == "one":
                return await cursor.fetchone()
            if fetch == "all":
                return await cursor.fetchall()
            return cursor.rowcount
    except psycopg.IntegrityError as exc:
        raise StoreIntegrityError(str(exc)) from exc


async def apply_migration(connection: AsyncConnection[Row], namespace: str, migration: Migration) -> dict[int, str]:
    """Apply ``migration`` in a transaction of its own, unless it already is (after waiting for any other replica's
    migration); the versions applied before it, with their names."""
    async with connection.transaction():
        # a migration may outlast the per-statement timeout, and so may waiting for another replica's
        await connection.execute("SET LOCAL statement_timeout = 0", prepare=False)
        await connection.execute(_LOCK_MIGRATIONS, prepare=False)
        await connection.execute(_MIGRATIONS_DDL, prepare=False)
        cursor = await connection.execute(
            f"SELECT version, name FROM {MIGRATIONS_TABLE} WHERE namespace = %s", (namespace,), prepare=False
        )
        applied = {row["version"]: row["name"] for row in await cursor.fetchall()}
        if migration.version in applied:
            check_applied(namespace, migration, applied[migration.version])
            return applied
        try:
            await connection.execute(migration.for_dialect("postgres"), prepare=False)
        except psycopg.IntegrityError as exc:
            raise StoreIntegrityError(str(exc)) from exc
        await connection.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (namespace, version, name) VALUES (%s, %s, %s)",
            (namespace, migration.version, migration.name),
            prepare=False,
        )
    log.info("migration applied", store="postgres", namespace=namespace, version=migration.version)
    return applied


async def refuse_tables_out_of_reach(connection: AsyncConnection[Row], namespace: str, *, provider: str) -> None:
    """For a store with no ``schema`` of its own: a :class:`ConfigError` when ``namespace`` was migrated in a schema
    of the database its search path does not reach (``schema`` dropped from the config, say): the store would start
    a second, empty memory beside the real one."""
    query = (
        "SELECT to_regclass(%(t)s) IS NOT NULL AS here, (SELECT array_agg(DISTINCT table_schema::text) FROM "
        "information_schema.tables WHERE table_name = %(t)s) AS schemas"
    )
    row = await (await connection.execute(query, {"t": MIGRATIONS_TABLE}, prepare=False)).fetchone()
    if row is None or row["here"] or not row["schemas"]:
        return
    elsewhere = []
    for other in sorted(row["schemas"]):
        applied = sql.SQL("SELECT 1 FROM {}.{} WHERE namespace = %s LIMIT 1").format(
            sql.Identifier(other), sql.Identifier(MIGRATIONS_TABLE)
        )
        if await (await connection.execute(applied, (namespace,), prepare=False)).fetchone():
            elsewhere.append(repr(other))
    if elsewhere:
        raise ConfigError(
            f"{provider}: this database holds the {namespace!r} tables in schema {', '.join(elsewhere)}, which the "
            "store does not reach (it has no `schema`): set `schema` to it, or (behind a transaction pooler, where "
            "a session's search_path does not last) give the role that search path: ALTER ROLE ... SET "
            "search_path = <schema>"
        )
