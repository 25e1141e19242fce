"""The pack on PostgreSQL: migrations, indexing, incremental re-index, search, removal, with portable SQL only."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.testing import running_gateway
from tests.plugins.context.support import add_file_connector, call, context_config, index_and_wait

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_context_on_postgres(repo: Path, data_dir: Path, postgres_db: str) -> None:
    config = context_config(store="postgres")
    config["plugins"]["store"] = {"postgres": {"dsn": postgres_db}}
    async with running_gateway(config, data_dir) as client:
        connector_id = await add_file_connector(client, repo)
        assert (await index_and_wait(client))["status"] == "completed"
        hits = await call(client, "context.search", {"query": "expired card refused", "top_k": 3})
        assert hits["results"][0]["metadata"]["symbol"] == "charge_card"
        (repo / "shop" / "money.py").write_text("def convert_currency(amount, rate):\n    return amount * rate\n")
        assert (await index_and_wait(client))["status"] == "completed"
    async with running_gateway(config, data_dir) as client:  # a restart rebuilds the index from PostgreSQL
        hits = await call(client, "context.search", {"query": "convert currency", "top_k": 3})
        assert hits["results"][0]["metadata"]["symbol"] == "convert_currency"
        await call(client, "context.connector_management", {"action": "remove", "connector_id": connector_id})
        gone = await call(client, "context.search", {"query": "convert currency"})
        assert gone["results"] == []
