"""Tenant search settings: the deployment's values from ``[plugins.context.search]``, a tenant's own changes kept
in the store and applied to its next search (the MCP tool's too), ``null`` going back to the deployment's value."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.testing import running_gateway
from gateway_plugins.context.settings import ConfigPatch, patch_config, read_config
from tests.plugins.context.support import add_file_connector, call, context_config, index_and_wait

pytestmark = [pytest.mark.anyio]


async def test_a_tenants_settings_apply_to_its_mcp_searches_only(repo: Path, data_dir: Path) -> None:
    config = context_config(context={"search": {"default_top_k": 4}})
    async with running_gateway(config, data_dir) as client:
        service = client.runtime.packs["context"].service
        await add_file_connector(client, repo)
        await index_and_wait(client)
        view = await read_config(service, "default")
        assert view.search.default_top_k == 4 and view.search.max_results == 100  # the deployment's values
        assert len((await call(client, "context.search", {"query": "card invoice total"}))["results"]) == 4
        patch = ConfigPatch.model_validate({"search": {"default_top_k": 2, "max_results": 3}})
        updated = await patch_config(service, "default", patch)
        assert updated.updated == ["search.default_top_k", "search.max_results"] and not updated.requires_restart
        assert len((await call(client, "context.search", {"query": "card invoice total"}))["results"]) == 2
        capped = await call(client, "context.search", {"query": "card invoice total", "top_k": 50})
        assert len(capped["results"]) == 3  # max_results caps top_k
        assert (await read_config(service, "other")).search.default_top_k == 4  # another tenant: unchanged
        await patch_config(service, "default", ConfigPatch.model_validate({"search": {"default_top_k": None}}))
        assert (await read_config(service, "default")).search.default_top_k == 4
        assert (await read_config(service, "default")).search.max_results == 3  # not in the patch: kept


async def test_reranking_off_ranks_by_the_fused_scores_alone(repo: Path, data_dir: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        service = client.runtime.packs["context"].service
        await add_file_connector(client, repo)
        await index_and_wait(client)
        query = {"query": "charge card", "top_k": 10}

        async def best_by_path() -> dict[str, float]:
            best: dict[str, float] = {}
            for result in (await call(client, "context.search", query))["results"]:
                path = result["metadata"]["path"]
                best[path] = max(best.get(path, 0.0), result["score"])
            return best

        ranked = await best_by_path()
        await patch_config(service, "default", ConfigPatch.model_validate({"search": {"enable_reranking": False}}))
        plain = await best_by_path()
        # The test file is no longer ranked down (the priors are a re-ranking stage), the code is no longer boosted
        # for defining charge_card.
        assert plain["tests/test_billing.py"] > ranked["tests/test_billing.py"]
        assert plain["shop/billing.py"] < ranked["shop/billing.py"]
