"""Two tenants on one deployment, over REST and over MCP (Streamable HTTP, the SDK client), with the real
``api_key`` authenticator: each may name a connector the same (``file-shop`` for both), and neither sees the
other's connectors, jobs, search results, suggestions, related information, files or settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.http_support import mcp_client
from tests.plugins.context.rest_support import SCOPES, Api, envelope, rest_config, serve
from tests.plugins.context.support import sample_repo

pytestmark = [pytest.mark.anyio]

GLOBEX = {
    "ledger/secret_ledger.py": 'def reconcile_globex_ledger(books):\n    """Globex only."""\n    return books\n',
    "ledger/notes.md": "# Globex quarterly close\n\nOnly Globex reads this.\n",
}


def _globex_tree(root: Path, files: int = 1) -> Path:
    for rel, text in GLOBEX.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for n in range(files):
        (root / "bulk" / f"m{n % 5}").mkdir(parents=True, exist_ok=True)
        (root / "bulk" / f"m{n % 5}" / f"mod_{n}.py").write_text(f"def bulk_{n}(x):\n    return x + {n}\n")
    return root


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    tmp = tmp_path_factory.mktemp("tenancy")
    acme_root, globex_root = sample_repo(tmp / "acme"), _globex_tree(tmp / "globex", files=300)
    keys = {"acme": ("acme", SCOPES), "globex": ("globex", SCOPES)}
    with serve(rest_config(tmp / "data", embed_batch=8), keys) as api:
        assert api.add_file_connector("acme", acme_root, name="shop") == "file-shop"
        assert api.add_file_connector("globex", globex_root, name="shop") == "file-shop"  # the same name and id
        api.index("acme")
        api.index("globex")
        yield api


def test_connectors_of_the_same_name_stay_apart(api: Api) -> None:
    acme = api.ok("GET", "/connectors", "acme")["connectors"]
    globex = api.ok("GET", "/connectors", "globex")["connectors"]
    assert [c["id"] for c in acme] == [c["id"] for c in globex] == ["file-shop"]
    assert acme[0]["config"]["root"] != globex[0]["config"]["root"]
    assert api.ok("GET", "/connectors/file-shop", "acme")["stats"]["documents_indexed"] == 6
    assert api.ok("GET", "/connectors/file-shop", "globex")["stats"]["documents_indexed"] == 302


def test_search_results_and_suggestions_stay_in_their_tenant(api: Api) -> None:
    mine = api.ok("POST", "/search", "globex", json={"query": "reconcile globex ledger"})
    assert mine["results"][0]["metadata"]["symbol"] == "reconcile_globex_ledger"
    theirs = api.ok("POST", "/search", "acme", json={"query": "reconcile globex ledger quarterly close"})
    assert all(not r["metadata"]["path"].startswith(("ledger/", "bulk/")) for r in theirs["results"])
    assert theirs["query_metadata"]["sources_searched"] == 1
    acme_card = api.ok("POST", "/search", "acme", json={"query": "expired card"})
    assert acme_card["results"][0]["metadata"]["path"] == "shop/billing.py"
    assert not any(
        r["metadata"]["path"] == "shop/billing.py"
        for r in api.ok("POST", "/search", "globex", json={"query": "expired card charge"})["results"]
    )
    assert api.ok("GET", "/search/suggestions", "globex", params={"q": "reconc"})["suggestions"] == [
        "reconcile_globex_ledger"
    ]
    assert (
        "reconcile_globex_ledger"
        not in api.ok("GET", "/search/suggestions", "acme", params={"q": "reconc"})["suggestions"]
    )
    assert (
        "charge_card"
        not in api.ok("GET", "/search/suggestions", "globex", params={"q": "charge", "limit": 50})["suggestions"]
    )


def test_a_cursor_is_no_use_to_another_tenant(api: Api) -> None:
    page = api.ok("POST", "/search", "globex", json={"query": "bulk", "pagination": {"limit": 5}})
    cursor = page["pagination"]["next_cursor"]
    assert cursor
    body = {"query": "bulk", "pagination": {"limit": 5, "cursor": cursor}}
    error = envelope(api.call("POST", "/search", "acme", json=body), 400, "VALIDATION_ERROR")
    assert error["details"]["errors"][0]["field"] == "pagination.cursor"
    assert api.ok("POST", "/search", "globex", json=body)["results"]


def test_jobs_status_and_stop_are_per_tenant(api: Api) -> None:
    started = api.ok("POST", "/index/force-reindex", "globex", 202, json={"confirm_destructive": True})
    try:
        envelope(api.call("POST", "/index/stop", "acme"), 404, "NOT_FOUND_ERROR")  # acme has nothing running
        acme_status = api.ok("GET", "/index/status", "acme")
        assert acme_status["current_job"]["id"] != started["job_id"]
        assert api.ok("GET", "/status", "acme")["indexing"]["status"] == "idle"
        assert api.ok("POST", "/index/start", "acme", 202, json={})["job_id"]  # not blocked by globex's job
        assert api.ok("GET", "/index/status", "globex")["current_job"]["id"] == started["job_id"]
    finally:
        api.wait_for_job("globex")
        api.wait_for_job("acme")


def test_settings_are_per_tenant(api: Api) -> None:
    api.ok("PATCH", "/config", "globex", json={"search": {"default_top_k": 1}})
    try:
        assert len(api.ok("POST", "/search", "globex", json={"query": "bulk"})["results"]) == 1
        assert api.ok("GET", "/config", "acme")["search"]["default_top_k"] == 20
        assert len(api.ok("POST", "/search", "acme", json={"query": "card"})["results"]) > 1
    finally:
        api.ok("PATCH", "/config", "globex", json={"search": {"default_top_k": None}})


async def test_over_mcp_tools_and_files_stay_in_their_tenant(api: Api) -> None:
    url = f"{api.base}/mcp"
    async with mcp_client(url, api.keys["acme"]) as acme:
        listed = (await acme.call_tool("context.connector_management", {"action": "list"})).structured_content
        assert [(c["id"], c["stats"]["documents_indexed"]) for c in listed["connectors"]] == [("file-shop", 6)]
        found = (await acme.call_tool("context.search", {"query": "reconcile globex ledger"})).structured_content
        assert all(not r["metadata"]["path"].startswith(("ledger/", "bulk/")) for r in found["results"])
        related = await acme.call_tool("context.get_related_info", {"file_path": "ledger/secret_ledger.py"})
        assert related.is_error and json.loads(related.content[0].text)["error"]["code"] == "not_found"
        uris = {str(r.uri) for r in (await acme.list_resources()).resources}
        assert "engine://files/shop/billing.py" in uris and not any("ledger" in u or "bulk" in u for u in uris)
        with pytest.raises(Exception, match="no indexed file or directory"):
            await acme.read_resource("engine://files/ledger/secret_ledger.py")
        top = json.loads((await acme.read_resource("engine://files/")).contents[0].text)
        assert {e["name"] for e in top["entries"]} == {"README.md", "shop", "tests", "web"}
        status = (await acme.call_tool("context.index_control", {"action": "status"})).structured_content
    async with mcp_client(url, api.keys["globex"]) as globex:
        read = await globex.read_resource("engine://files/ledger/secret_ledger.py")
        assert "reconcile_globex_ledger" in read.contents[0].text
        theirs = (await globex.call_tool("context.index_control", {"action": "status"})).structured_content
        assert theirs["current_job"]["id"] != status["current_job"]["id"]
        removed = await globex.call_tool(
            "context.connector_management", {"action": "remove", "connector_id": "file-shop"}
        )
        assert not removed.is_error
    assert api.ok("GET", "/connectors", "globex")["connectors"] == []  # globex's went, acme's stays
    assert api.ok("POST", "/search", "acme", json={"query": "expired card"})["results"][0]["metadata"]["path"] == (
        "shop/billing.py"
    )
