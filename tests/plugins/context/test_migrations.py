"""Migration 2 on a store that issue 16's schema filled: a connector keeps the id its tenant knows (now its public
id) and everything indexed from it stays reachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.api import STORE
from gateway.app import prepare
from gateway.providers import ProviderHub
from gateway.testing import running_gateway, with_data_dir
from gateway_plugins.context.migrations import MIGRATIONS, NAMESPACE
from tests.plugins.context.support import call, context_config, index_and_wait

pytestmark = [pytest.mark.anyio]


async def test_a_version_1_connector_keeps_its_id(repo: Path, data_dir: Path) -> None:
    config = context_config()
    loaded, plugins = prepare(with_data_dir(config, data_dir))
    hub = ProviderHub(loaded, plugins.registry)
    try:
        store = hub.get(STORE)
        await store.migrate(NAMESPACE, MIGRATIONS[:1])
        await store.execute(
            "INSERT INTO ctx_connectors (id, tenant, type, name, config, origin, status, created_at, updated_at, "
            "documents) VALUES ('file-shop', 'default', 'file', 'shop', :config, 'tool', 'configured', "
            "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 0)",
            {"config": {"root": str(repo)}},
        )
    finally:
        await hub.aclose()
    async with running_gateway(config, data_dir) as client:
        listed = await call(client, "context.connector_management", {"action": "list"})
        assert [c["id"] for c in listed["connectors"]] == ["file-shop"]
        assert (await index_and_wait(client, ["file-shop"]))["status"] == "completed"
        hits = await call(client, "context.search", {"query": "expired card refused", "top_k": 1})
        assert hits["results"][0]["metadata"]["connector_id"] == "file-shop"
        added = await call(
            client,
            "context.connector_management",
            {"action": "add", "connector_config": {"type": "file", "name": "shop two", "root": str(repo)}},
        )
        assert added["connectors"][0]["id"] == "file-shop-two"
