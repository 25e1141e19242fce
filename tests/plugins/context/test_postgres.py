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


async def test_rest_pagination_and_settings_on_postgres(tmp_path: Path, data_dir: Path, postgres_db: str) -> None:
    from gateway_plugins.context.pages import search_page
    from gateway_plugins.context.rest_models import RestSearchInput
    from gateway_plugins.context.settings import ConfigPatch, patch_config, read_config

    root = tmp_path / "handlers"
    for n in range(12):
        (root / f"p{n % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"p{n % 3}" / f"mod_{n}.py").write_text(f"def handler_{n}(request):\n    return request.path\n")
    config = context_config(store="postgres")
    config["plugins"]["store"] = {"postgres": {"dsn": postgres_db}}
    async with running_gateway(config, data_dir) as client:
        service = client.runtime.packs["context"].service
        await add_file_connector(client, root, name="handlers")
        await index_and_wait(client)
        await patch_config(service, "default", ConfigPatch.model_validate({"search": {"max_results": 10}}))
        assert (await read_config(service, "default")).search.max_results == 10
        seen, cursor = [], None
        while True:
            query = {"query": "handler request", "pagination": {"limit": 4, "cursor": cursor}}
            page = await search_page(service, "default", RestSearchInput.model_validate(query))
            seen += [r.metadata.path for r in page.results]
            cursor = page.pagination.next_cursor
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == 10 and page.pagination.total_results == 10
