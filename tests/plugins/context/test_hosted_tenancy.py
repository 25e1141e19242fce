"""Hosted documents per tenant: one tenant's GitHub issues and pull requests (the GitHub fake on loopback) are its
suggestions, search results and related information, with its connector ids; another tenant sees none of them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.api import Principal
from gateway.testing import running_gateway
from gateway_plugins.context.suggestions import suggest
from tests.fakes.github import FakeGitHub
from tests.plugins.connectors.support import TOKEN
from tests.plugins.context.support import context_config, sample_repo
from tests.plugins.context.test_hosted import seed_github

pytestmark = [pytest.mark.anyio]


async def test_hosted_documents_stay_in_their_tenant(
    tmp_path: Path, data_dir: Path, fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTED_TEST_TOKEN", TOKEN)
    seed_github(fake_github)
    async with running_gateway(context_config(), data_dir) as client:
        runtime = client.runtime
        service = runtime.packs["context"].service

        async def call(tenant: str, tool: str, arguments: dict[str, Any]) -> Any:
            principal = Principal(subject="dev", tenant=tenant, scopes=frozenset(), method="test", all_scopes=True)
            return await runtime.call_tool(tool, arguments, runtime.new_context(principal=principal))

        async def add(tenant: str, config: dict[str, Any]) -> str:
            added = await call(tenant, "context.connector_management", {"action": "add", "connector_config": config})
            assert not added.is_error, added.text
            return added.body["connectors"][0]["id"]

        async def index(tenant: str) -> None:
            assert not (await call(tenant, "context.index_control", {"action": "start"})).is_error
            while (await call(tenant, "context.index_control", {"action": "status"})).body["status"] == "running":
                await asyncio.sleep(0.1)

        github = {"repository": "octo/shop", "base_url": fake_github.base_url, "token": {"env": "HOSTED_TEST_TOKEN"}}
        assert await add("acme", {"type": "github", "name": "shop", **github}) == "github-shop"
        await add("acme", {"type": "file", "name": "code", "root": str(sample_repo(tmp_path / "acme"))})
        await add("globex", {"type": "file", "name": "code", "root": str(sample_repo(tmp_path / "globex"))})
        await index("acme")
        await index("globex")

        assert "Card charge fails for expired cards" in await suggest(service, "acme", "card charge", 5)
        assert "octo/shop#1" in await suggest(service, "acme", "octo/shop#", 10)
        assert not any("Comment by" in s for s in await suggest(service, "acme", "comment", 20))
        assert "Card charge fails for expired cards" not in await suggest(service, "globex", "card charge", 50)

        query = {"query": "card charge fails expired", "filters": {"source_types": ["github"]}}
        found = (await call("acme", "context.search", query)).body["results"]
        assert found and {r["metadata"]["connector_id"] for r in found} == {"github-shop"}
        assert (await call("globex", "context.search", query)).body["results"] == []

        related = (await call("acme", "context.get_related_info", {"file_path": "shop/money.py"})).body
        assert related["connector_id"] == "file-code"
        assert [p["connector_id"] for p in related["pull_requests"]] == ["github-shop"]
        theirs = await call("globex", "context.get_related_info", {"file_path": "shop/money.py"})
        assert theirs.body["pull_requests"] == [] and theirs.body["tickets"] == []
        ticket = (await call("globex", "context.get_related_info", {"ticket_id": "octo/shop#1"})).body
        assert (
            ticket["pull_requests"] == ticket["tickets"] == [] and "not in any connected tracker" in ticket["summary"]
        )
        assert "octo/shop" not in json.dumps(theirs.body)
