"""The stores plugin registers through its entry point like any third-party plugin."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pluggy

from gateway import hookspecs
from gateway.api import PROJECT_NAME
from gateway_plugins.stores import plugin
from gateway_plugins.stores.postgres import PostgresStoreConfig
from gateway_plugins.stores.sqlite import SqliteStoreConfig


def test_the_entry_point_offers_the_sqlite_and_postgres_stores() -> None:
    (entry_point,) = [ep for ep in importlib.metadata.entry_points(group=PROJECT_NAME) if ep.name == "stores"]
    assert entry_point.load() is plugin
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    manager.register(plugin)
    offered: dict[tuple[str, str], dict[str, Any]] = {}

    def register(kind: str, name: str, factory: Any, **options: Any) -> None:
        offered[(kind, name)] = {"factory": factory, **options}

    manager.hook.gateway_register_providers(register=register)
    assert set(offered) == {("store", "sqlite"), ("store", "postgres")}
    assert offered[("store", "sqlite")]["config_model"] is SqliteStoreConfig
    assert offered[("store", "postgres")]["config_model"] is PostgresStoreConfig
    assert all(entry["description"] for entry in offered.values())
