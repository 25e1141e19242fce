"""Entry point of the built-in stores plugin: the ``sqlite`` and ``postgres`` relational stores."""

from __future__ import annotations

from gateway.api import STORE, ProviderRegistrar, hookimpl
from gateway_plugins.stores.postgres import PostgresStoreConfig, create_postgres_store
from gateway_plugins.stores.sqlite import SqliteStoreConfig, create_sqlite_store


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        STORE,
        "sqlite",
        create_sqlite_store,
        config_model=SqliteStoreConfig,
        description="SQLite file in the data dir (WAL, one writer, safe across processes on one machine)",
    )
    register(
        STORE,
        "postgres",
        create_postgres_store,
        config_model=PostgresStoreConfig,
        description="PostgreSQL (or Supabase) through a psycopg connection pool, for several replicas",
    )
