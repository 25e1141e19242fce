"""The ``postgres`` relational store: psycopg 3 over a :class:`psycopg_pool.AsyncConnectionPool`.

Any PostgreSQL 12+ server, Supabase included (point ``dsn`` at its *session* pooler with ``sslmode=require``).
Statements use ``:name`` parameters, translated to psycopg's ``%(name)s`` (:func:`~gateway_plugins.stores.sql.
to_pyformat`). Every pooled connection runs in autocommit mode with ``TimeZone`` UTC, the configured
``statement_timeout`` and, when ``schema`` is set, ``search_path`` = that schema (created if missing).
Transactions are explicit; migrations serialise on an advisory lock, so replicas starting together apply each
migration once. Every exchange with the server also has a client-side deadline, and TCP keepalives detect a
vanished peer (:mod:`gateway_plugins.stores.postgres_health`). Types: see :mod:`gateway_plugins.stores`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import psycopg
import psycopg_pool
import structlog
from psycopg import AsyncConnection, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import ConfigError, Migration, ProviderContext, ProviderUnavailable, Secret
from gateway.api.stores import Params, Row
from gateway_plugins.stores.guard import TransactionGuard
from gateway_plugins.stores.postgres_health import ServerHealth, bounded, recording_connection_class
from gateway_plugins.stores.postgres_sql import (
    Transaction,
    apply_migration,
    keepalives,
    refuse_tables_out_of_reach,
    run,
)
from gateway_plugins.stores.sql import ordered_migrations

log = structlog.get_logger(__name__)


class PostgresStoreConfig(BaseModel):
    """``[plugins.store.postgres]``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    dsn: Secret = None
    """A libpq connection string or URI, from the environment: ``dsn = { env = "DATABASE_URL" }``."""
    min_size: int = Field(default=1, ge=0)
    max_size: int = Field(default=10, ge=1)
    connect_timeout: float = Field(default=10.0, gt=0)
    """Seconds to connect, to wait for a free pooled connection, and for a pooled one to pass its check."""
    statement_timeout: float | None = Field(default=30.0, ge=0)
    """Seconds a statement may run before the server cancels it (``None`` or 0: no limit). The client gives up on
    a server that does not answer within ``statement_timeout + connect_timeout`` (one that is frozen or cut off)."""
    schema_name: str | None = Field(default=None, alias="schema", min_length=1, max_length=63)
    """Keep the gateway's tables in this schema (created if missing) instead of ``public``."""
    prepared_statements: bool = True
    """Let psycopg prepare a statement on the server after it ran ``prepare_threshold`` times on a connection.
    Turn off behind a pooler in *transaction* mode (Supabase port 6543, PgBouncer ``pool_mode = transaction``)."""
    prepare_threshold: int = Field(default=5, ge=0)
    application_name: str = "mcp-gateway"


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
        # beyond the server's own statement_timeout, the client waits connect_timeout more before giving up on it
        self._deadline = statement_timeout + connect_timeout if statement_timeout else None
        self._health = ServerHealth(provider, secret=str(parts.get("password") or "") or None)
        self._connection_class = recording_connection_class(self._health)
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "row_factory": dict_row,
            "prepare_threshold": prepare_threshold,
            "connect_timeout": max(2, round(connect_timeout)),
            "application_name": application_name,
        }
        self._connect_kwargs |= {k: v for k, v in keepalives(connect_timeout).items() if k not in parts}
        self._min_size = min_size
        self._max_size = max(max_size, min_size)
        self._pool: AsyncConnectionPool[AsyncConnection[Row]] | None = None
        self._open_lock = asyncio.Lock()
        self._reach_lock = asyncio.Lock()
        self._abandoned: set[asyncio.Future[Any]] = set()
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
        async with bounded(connection, self._connect_timeout, self._provider):
            await connection.execute(f"SELECT {calls}", values, prepare=False)

    async def _ensure_open(self) -> AsyncConnectionPool[AsyncConnection[Row]]:
        if self._closed:
            raise RuntimeError("the PostgreSQL store is closed")
        if self._pool is None:
            async with self._open_lock:
                if self._pool is None:
                    self._pool = await self._open()
        return self._pool

    async def _connect(self) -> AsyncConnection[Row]:
        """A connection of its own (not pooled); :class:`ProviderUnavailable` with the server's message if none."""
        try:
            return await self._connection_class.connect(self._dsn, **self._connect_kwargs)
        except psycopg.OperationalError:
            raise self._health.unavailable() from None  # the message, without the password, is the health's

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[Row]]:
        # One direct connection first: a wrong password or host fails here with the server's own message,
        # where the pool would only report a timeout. It also creates the schema.
        async with await self._connect() as probe:
            if self._schema:
                try:
                    async with bounded(probe, self._deadline, self._provider), probe.transaction():
                        await probe.execute(
                            "SELECT pg_advisory_xact_lock(hashtextextended('mcp-gateway:schema', 0))", prepare=False
                        )
                        exists = "SELECT 1 FROM pg_namespace WHERE nspname = %s"  # CREATE checks the privilege first
                        if not await (await probe.execute(exists, (self._schema,), prepare=False)).fetchone():
                            await probe.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self._schema)))
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise ConfigError(
                        f"{self._provider}: role {probe.info.user!r} may not create the schema {self._schema!r} "
                        f"(PostgreSQL: {exc}): create it beforehand, owned by that role, or grant CREATE on database "
                        f"{probe.info.dbname!r} to it"
                    ) from None
        pool: AsyncConnectionPool[AsyncConnection[Row]] = AsyncConnectionPool(
            self._dsn,
            connection_class=self._connection_class,
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
            reason = self._health.describe(f"the connection pool did not fill: {exc}")
            raise ProviderUnavailable(self._provider, reason) from exc
        log.debug("postgres store opened", schema=self._schema, max_size=self._max_size)
        return pool

    async def probe(self) -> None:
        """Whether the server answers, on a connection of its own (``/health``): every pooled one may be busy with
        long queries, and a busy store is not a down one. Raises :class:`ProviderUnavailable` when it does not."""
        async with await self._connect() as connection:
            try:
                async with bounded(connection, self._connect_timeout, self._provider):
                    await connection.execute("SELECT 1", prepare=False)
            except psycopg.OperationalError as exc:
                raise ProviderUnavailable(self._provider, f"cannot connect: {exc}".strip()) from exc

    async def _check(self, connection: AsyncConnection[Any]) -> None:
        """The pool's check of a connection it hands out, within ``connect_timeout``. One found broken means the
        server went away (restarted, or ended the sessions), and so are the other idle ones: they are all checked
        and replaced at once, where the pool would try them one by one with a growing pause (1 s, 2 s, 4 s...) and
        time the caller out. One that does not answer in time is discarded, and the server taken as down."""
        try:
            async with bounded(connection, self._connect_timeout, self._provider):
                await AsyncConnectionPool.check_connection(connection)
            self._health.connected()  # the server answers
        except ProviderUnavailable as exc:
            self._health.failed(exc, pooled=True)  # frozen or cut off: the other idle connections would wait as long
            raise
        except Exception:
            if self._pool is not None:
                await self._pool.check()
            raise

    async def _reach(self) -> None:
        """After a failed connection attempt, whether the server is back: one connection of our own (one at a
        time), rather than waiting for the pool, whose attempts space out while the server is away."""
        async with self._reach_lock:
            self._health.raise_if_open()  # another call has just tried
            if self._health.failing:
                connection = await self._connect()
                await connection.close()

    async def _getconn(self, pool: AsyncConnectionPool[AsyncConnection[Row]]) -> AsyncConnection[Row]:
        """A pooled connection, or :class:`ProviderUnavailable` as soon as a connection attempt fails meanwhile. While
        the pool holds an idle connection, that is tried first: a failed new connection (a pooler at its client
        limit, a slow ``/health`` probe) does not mean the connections already open stopped working; a pooled one
        that stopped answering does."""
        if self._health.pooled_failed or not pool.get_stats().get("pool_available", 0):
            self._health.raise_if_open()
            if self._health.failing:
                await self._reach()
        getting = asyncio.ensure_future(pool.getconn())
        failure = asyncio.ensure_future(self._health.next_failure())
        try:
            await asyncio.wait((getting, failure), return_when=asyncio.FIRST_COMPLETED)
        finally:
            failure.cancel()
            if not getting.done():  # not cancelled: the pool's checks swallow cancellation
                self._abandoned.add(getting)
                getting.add_done_callback(functools.partial(self._give_back, pool))
        if not getting.done():
            raise self._health.unavailable()
        try:
            return getting.result()
        except psycopg_pool.PoolTimeout as exc:
            raise ProviderUnavailable(self._provider, self._health.describe(f"no free connection: {exc}")) from exc

    def _give_back(self, pool: AsyncConnectionPool[AsyncConnection[Row]], getting: asyncio.Task[Any]) -> None:
        """Return to the pool the connection a call stopped waiting for (or retrieve the wait's error)."""
        self._abandoned.discard(getting)
        if not getting.cancelled() and getting.exception() is None:
            returning = asyncio.ensure_future(pool.putconn(getting.result()))
            self._abandoned.add(returning)
            returning.add_done_callback(self._abandoned.discard)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Row]]:
        """A pooled connection (autocommit); given back, rolled back if need be, when the block ends. Losing the
        server meanwhile (a restart, a timeout, an administrator's shutdown) is :class:`ProviderUnavailable`."""
        pool = await self._ensure_open()
        connection = await self._getconn(pool)
        try:
            yield connection
        except psycopg.errors.QueryCanceled as exc:
            raise ProviderUnavailable(
                self._provider,
                f"a statement ran past statement_timeout ({self._statement_timeout:g} s): a slow query, or a wait "
                f"for a lock another session holds ({exc})",
            ) from exc
        except psycopg.OperationalError as exc:
            raise ProviderUnavailable(self._provider, f"the database failed the request: {exc}".strip()) from exc
        finally:
            await pool.putconn(connection)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """A transaction on one pooled connection: committed when the block ends, rolled back if it raises."""
        self._guard.refuse_nesting()
        async with self._connection() as connection:
            tx = Transaction(connection, self._deadline, self._provider)
            with self._guard.active():
                try:
                    await self._run(connection, "BEGIN")
                    yield tx
                    await self._run(connection, "ROLLBACK" if tx.rolled_back else "COMMIT")
                except BaseException:
                    if not connection.closed and connection.info.transaction_status != TransactionStatus.IDLE:
                        with contextlib.suppress(ProviderUnavailable, psycopg.Error):  # else the pool discards it
                            await self._run(connection, "ROLLBACK")
                    raise
                finally:
                    tx.finished = True

    async def _run(self, connection: AsyncConnection[Row], command: str) -> None:
        await run(connection, command, None, "none", self._deadline, self._provider)

    async def execute(self, sql: str, params: Params | None = None) -> int:
        """One statement, committed on its own."""
        self._guard.refuse_nesting()
        async with self._connection() as connection:
            return int(await run(connection, sql, params, "none", self._deadline, self._provider))

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        async with self._connection() as connection:
            return await run(connection, sql, params, "one", self._deadline, self._provider)

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        async with self._connection() as connection:
            return await run(connection, sql, params, "all", self._deadline, self._provider)

    async def migrate(self, namespace: str, migrations: Sequence[Migration]) -> None:
        """Apply the migrations of ``namespace`` not yet applied, in version order, each in its own transaction.

        Each transaction first takes a cluster-wide advisory lock, so replicas migrating at once take turns and
        each migration runs exactly once. A migration's SQL may hold several statements. A role lacking a privilege
        they need is a :class:`ConfigError` naming it.
        """
        ordered = ordered_migrations(namespace, migrations)
        self._guard.refuse_nesting()
        if self._schema is None:  # a deployment with a schema of its own may share the database with others
            async with self._connection() as connection, bounded(connection, self._connect_timeout, self._provider):
                await refuse_tables_out_of_reach(connection, namespace, provider=self._provider)
        applied: dict[int, str] = {}
        for migration in ordered:
            async with self._connection() as connection:
                try:
                    applied = await apply_migration(connection, namespace, migration)
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise await self._privilege_error(connection, namespace, migration, exc) from None
        newest = max(applied, default=0)
        if ordered and newest > ordered[-1].version:
            log.warning("database schema is newer than the code", namespace=namespace, applied=newest)

    async def _privilege_error(
        self, connection: AsyncConnection[Row], namespace: str, migration: Migration, exc: psycopg.Error
    ) -> ConfigError:
        """The :class:`ConfigError` of a migration the role may not apply: which store, role, schema and grant."""
        schema = self._schema
        if schema is None:
            with contextlib.suppress(psycopg.Error):  # the transaction is over: the connection answers again
                async with bounded(connection, self._connect_timeout, self._provider):
                    row = await (await connection.execute("SELECT current_schema() AS s", prepare=False)).fetchone()
                schema = row["s"] if row else None
        where = repr(schema) if schema else "the schema of its search_path"
        role = connection.info.user
        grant = sql.SQL("GRANT CREATE ON SCHEMA {} TO {}").format(
            sql.Identifier(schema or "<schema>"), sql.Identifier(role)
        )
        return ConfigError(
            f"{self._provider}: role {role!r} lacks a privilege that migration {migration.version} "
            f"({migration.name!r}) of {namespace!r} needs in schema {where} (PostgreSQL: {exc}). The gateway creates "
            f"its tables there: {grant.as_string()}; or set `schema` to one the role owns"
        )

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
