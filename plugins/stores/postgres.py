"""The ``postgres`` relational store: psycopg 3 over a :class:`psycopg_pool.AsyncConnectionPool`.

Any PostgreSQL 12+ server, Supabase included (point ``dsn`` at its *session* pooler with ``sslmode=require``).
Statements use ``:name`` parameters, translated to psycopg's ``%(name)s`` (:func:`~gateway_plugins.stores.sql.
to_pyformat`). Every pooled connection runs in autocommit mode with ``TimeZone`` UTC, the configured
``statement_timeout`` and, when ``schema`` is set, ``search_path`` = that schema (created if missing).
Transactions are explicit; migrations serialise on an advisory lock, so replicas starting together apply each
migration once.

Types: see :mod:`gateway_plugins.stores`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Literal

import psycopg
import psycopg_pool
import structlog
from psycopg import AsyncConnection, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import ConfigError, Migration, ProviderContext, ProviderUnavailable, Secret, StoreIntegrityError
from gateway.api.stores import Params, Row
from gateway_plugins.stores.guard import TransactionGuard
from gateway_plugins.stores.sql import MIGRATIONS_TABLE, check_applied, ordered_migrations, require_aware, to_pyformat

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


class PostgresStoreConfig(BaseModel):
    """``[plugins.store.postgres]``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    dsn: Secret = None
    """A libpq connection string or URI, from the environment: ``dsn = { env = "DATABASE_URL" }``."""
    min_size: int = Field(default=1, ge=0)
    max_size: int = Field(default=10, ge=1)
    connect_timeout: float = Field(default=10.0, gt=0)
    """Seconds to connect, and to wait for a free pooled connection."""
    statement_timeout: float | None = Field(default=30.0, ge=0)
    """Seconds a statement may run before the server cancels it (``None`` or 0: no limit)."""
    schema_name: str | None = Field(default=None, alias="schema", min_length=1, max_length=63)
    """Keep the gateway's tables in this schema (created if missing) instead of ``public``."""
    prepared_statements: bool = True
    """Let psycopg prepare a statement on the server after it ran ``prepare_threshold`` times on a connection.
    Turn off behind a pooler in *transaction* mode (Supabase port 6543, PgBouncer ``pool_mode = transaction``)."""
    prepare_threshold: int = Field(default=5, ge=0)
    application_name: str = "mcp-gateway"


def to_postgres_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return Jsonb(value)
    if isinstance(value, datetime):
        return require_aware(value)
    return value


def postgres_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: to_postgres_value(value) for key, value in (params or {}).items()}


class _Transaction:
    """The :class:`gateway.api.Transaction` of one pooled connection."""

    def __init__(self, connection: AsyncConnection[Row]) -> None:
        self._connection = connection
        self.rolled_back = False
        self.finished = False

    def _check(self) -> None:
        if self.finished:
            raise RuntimeError("this transaction is over: use it only inside its `async with` block")
        if self.rolled_back:
            raise RuntimeError("this transaction was rolled back after an integrity error")

    async def _run(self, sql_text: str, params: Params | None, fetch: Literal["none", "one", "all"]) -> Any:
        self._check()
        try:
            return await _run(self._connection, sql_text, params, fetch)
        except StoreIntegrityError:
            self.rolled_back = True  # PostgreSQL has aborted the transaction; it is rolled back on exit
            raise

    async def execute(self, sql: str, params: Params | None = None) -> int:
        return int(await self._run(sql, params, "none"))

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        self._check()
        try:
            async with self._connection.cursor() as cursor:
                await cursor.executemany(to_pyformat(sql), [postgres_params(row) for row in rows])
        except psycopg.IntegrityError as exc:
            self.rolled_back = True
            raise StoreIntegrityError(str(exc)) from exc

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        return await self._run(sql, params, "one")

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        return await self._run(sql, params, "all")


async def _run(
    connection: AsyncConnection[Row], sql_text: str, params: Params | None, fetch: Literal["none", "one", "all"]
) -> Any:
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(to_pyformat(sql_text), postgres_params(params))
            if fetch == "one":
                return await cursor.fetchone()
            if fetch == "all":
                return await cursor.fetchall()
            return cursor.rowcount
    except psycopg.IntegrityError as exc:
        raise StoreIntegrityError(str(exc)) from exc


class PostgresStore:
    """:class:`gateway.api.RelationalStore` on PostgreSQL. The pool opens on first use."""

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
        statement_timeout: float | None = 30.0,
        schema: str | None = None,
        prepare_threshold: int | None = 5,
        application_name: str = "mcp-gateway",
        provider: str = "store:postgres",
    ) -> None:
        """``provider`` names this store in :class:`gateway.api.ProviderUnavailable` errors."""
        try:
            parts = conninfo_to_dict(dsn)
        except psycopg.ProgrammingError:  # its message quotes the string, password included: not passed on
            raise ConfigError(
                f"{provider}: 'dsn' is not a valid PostgreSQL connection string (in a URL, %-escape the special "
                "characters of the user name and password)"
            ) from None
        url = dsn.startswith(("postgresql://", "postgres://"))
        if url and "@" in str(parts.get("host") or "").lstrip("@"):  # a password cut at its '@' (a leading '@' is
            # libpq's abstract Unix socket): the rest would be a host name, which errors quote
            raise ConfigError(
                f"{provider}: 'dsn' has an '@' in its host: in a URL, write an '@' of the user name or password as %40"
            )
        self._dsn = dsn
        self._provider = provider
        self._schema = schema
        self._statement_timeout = statement_timeout
        self._connect_timeout = connect_timeout
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "row_factory": dict_row,
            "prepare_threshold": prepare_threshold,
            "connect_timeout": max(2, round(connect_timeout)),
            "application_name": application_name,
        }
        self._min_size = min_size
        self._max_size = max(max_size, min_size)
        self._pool: AsyncConnectionPool[AsyncConnection[Row]] | None = None
        self._open_lock = asyncio.Lock()
        self._closed = False
        self._guard = TransactionGuard(self)

    @property
    def dialect(self) -> Literal["postgres"]:
        return "postgres"

    async def _configure(self, connection: AsyncConnection[Any]) -> None:
        settings = {"TimeZone": "UTC", "statement_timeout": str(round((self._statement_timeout or 0) * 1000))}
        if self._schema:
            settings["search_path"] = sql.Identifier(self._schema).as_string(connection)
        calls = ", ".join("set_config(%s, %s, false)" for _ in settings)
        values = [item for pair in settings.items() for item in pair]
        await connection.execute(f"SELECT {calls}", values, prepare=False)

    async def _ensure_open(self) -> AsyncConnectionPool[AsyncConnection[Row]]:
        if self._closed:
            raise RuntimeError("the PostgreSQL store is closed")
        if self._pool is None:
            async with self._open_lock:
                if self._pool is None:
                    self._pool = await self._open()
        return self._pool

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[Row]]:
        # One direct connection first: a wrong password or host fails here with the server's own message,
        # where the pool would only report a timeout. It also creates the schema.
        try:
            probe = await AsyncConnection.connect(self._dsn, **self._connect_kwargs)
        except psycopg.OperationalError as exc:
            raise ProviderUnavailable(self._provider, f"cannot connect: {exc}".strip()) from exc
        async with probe:
            if self._schema:
                async with probe.transaction():
                    await probe.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended('mcp-gateway:schema', 0))", prepare=False
                    )
                    await probe.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self._schema)))
        pool: AsyncConnectionPool[AsyncConnection[Row]] = AsyncConnectionPool(
            self._dsn,
            kwargs=self._connect_kwargs,
            min_size=self._min_size,
            max_size=self._max_size,
            timeout=self._connect_timeout,
            configure=self._configure,
            check=self._check,  # a connection broken while the server was away is replaced
            open=False,
            name="gateway-store",
        )
        try:
            await pool.open(wait=True, timeout=self._connect_timeout)
        except psycopg_pool.PoolTimeout as exc:
            await pool.close()
            raise ProviderUnavailable(self._provider, f"the connection pool did not fill: {exc}") from exc
        log.debug("postgres store opened", schema=self._schema, max_size=self._max_size)
        return pool

    async def probe(self) -> None:
        """Whether the server answers, on a connection of its own (``/health``): every pooled one may be busy with
        long queries, and a busy store is not a down one. Raises :class:`ProviderUnavailable` when it does not."""
        try:
            async with await AsyncConnection.connect(self._dsn, **self._connect_kwargs) as connection:
                await connection.execute("SELECT 1", prepare=False)
        except psycopg.OperationalError as exc:
            raise ProviderUnavailable(self._provider, f"cannot connect: {exc}".strip()) from exc

    async def _check(self, connection: AsyncConnection[Any]) -> None:
        """The pool's check of a connection it hands out. One found broken means the server went away (restarted,
        or ended the sessions), and so are the other idle ones: they are all checked and replaced at once, where the
        pool would try them one by one with a growing pause (1 s, 2 s, 4 s...) and time the caller out."""
        try:
            await AsyncConnectionPool.check_connection(connection)
        except Exception:
            if self._pool is not None:
                await self._pool.check()
            raise

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Row]]:
        """A pooled connection (autocommit); given back, rolled back if need be, when the block ends. Losing the
        server meanwhile (a restart, a timeout, an administrator's shutdown) is :class:`ProviderUnavailable`."""
        pool = await self._ensure_open()
        try:
            connection = await pool.getconn()
        except psycopg_pool.PoolTimeout as exc:
            raise ProviderUnavailable(self._provider, f"no free connection in the pool: {exc}") from exc
        try:
            yield connection
        except psycopg.errors.QueryCanceled:
            raise  # statement_timeout: the statement's own doing, which a retry would repeat
        except psycopg.OperationalError as exc:
            raise ProviderUnavailable(self._provider, f"the database failed the request: {exc}".strip()) from exc
        finally:
            await pool.putconn(connection)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """A transaction on one pooled connection: committed when the block ends, rolled back if it raises."""
        self._guard.refuse_nesting()
        async with self._connection() as connection:
            tx = _Transaction(connection)
            with self._guard.active():
                try:
                    async with connection.transaction():
                        yield tx
                        if tx.rolled_back:  # an integrity error was caught inside the block: undo everything
                            raise psycopg.Rollback()
                except psycopg.IntegrityError as exc:  # a deferred constraint, checked at COMMIT
                    raise StoreIntegrityError(str(exc)) from exc
                finally:
                    tx.finished = True

    async def execute(self, sql: str, params: Params | None = None) -> int:
        """One statement, committed on its own."""
        self._guard.refuse_nesting()
        async with self._connection() as connection:
            return int(await _run(connection, sql, params, "none"))

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        async with self._connection() as connection:
            return await _run(connection, sql, params, "one")

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        async with self._connection() as connection:
            return await _run(connection, sql, params, "all")

    async def migrate(self, namespace: str, migrations: Sequence[Migration]) -> None:
        """Apply the migrations of ``namespace`` not yet applied, in version order, each in its own transaction.

        Each transaction first takes a cluster-wide advisory lock, so replicas migrating at once take turns and
        each migration runs exactly once. A migration's SQL may hold several statements.
        """
        ordered = ordered_migrations(namespace, migrations)
        self._guard.refuse_nesting()
        applied: dict[int, str] = {}
        for migration in ordered:
            async with self._connection() as connection, connection.transaction():
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
                    continue
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
        newest = max(applied, default=0)
        if ordered and newest > ordered[-1].version:
            log.warning("database schema is newer than the code", namespace=namespace, applied=newest)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        async with self._open_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


def create_postgres_store(ctx: ProviderContext) -> PostgresStore:
    """Provider factory of ``store``/``postgres``."""
    config = ctx.config if isinstance(ctx.config, PostgresStoreConfig) else PostgresStoreConfig()
    return postgres_store_from_config(config, provider=f"{ctx.kind}:{ctx.name}")


def postgres_store_from_config(config: PostgresStoreConfig, *, provider: str) -> PostgresStore:
    if config.dsn is None:
        raise ProviderUnavailable(provider, 'no dsn configured: set dsn = { env = "DATABASE_URL" } in its table')
    return PostgresStore(
        config.dsn.get_secret_value(),
        min_size=config.min_size,
        max_size=config.max_size,
        connect_timeout=config.connect_timeout,
        statement_timeout=config.statement_timeout,
        schema=config.schema_name,
        prepare_threshold=config.prepare_threshold if config.prepared_statements else None,
        application_name=config.application_name,
        provider=provider,
    )
