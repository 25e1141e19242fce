"""The spec's scopes, route by route and tool by tool, with the real ``api_key`` authenticator over real HTTP: the
right scope passes, any other set of scopes gets 403 ``AUTHORIZATION_ERROR`` naming the one missing, no
credentials 401. MCP tools over Streamable HTTP with the SDK client: ``index:read`` may ask for the index status
but not start a job, ``connectors:read`` may list but not add."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.http_support import challenges, mcp_client, post_mcp, rpc
from tests.plugins.context.rest_support import SCOPES, Api, envelope, rest_config, serve
from tests.plugins.context.support import sample_repo

pytestmark = [pytest.mark.anyio]

Request = tuple[str, str, dict[str, Any], set[int]]


def _requests(root: Path) -> dict[str, list[Request]]:
    """Per scope: the routes it opens, each with a request and the statuses a permitted caller may get."""
    return {
        "search:read": [
            ("POST", "/search", {"json": {"query": "card"}}, {200}),
            ("GET", "/search/suggestions", {"params": {"q": "char"}}, {200}),
        ],
        "index:read": [
            ("GET", "/index/status", {}, {200}),
            ("GET", "/status", {}, {200}),
        ],
        "index:write": [
            ("POST", "/index/start", {"json": {}}, {202, 409}),
            ("POST", "/index/stop", {}, {200, 404}),
            ("POST", "/index/force-reindex", {"json": {"confirm_destructive": True}}, {202, 409}),
        ],
        "connectors:read": [
            ("GET", "/connectors", {}, {200}),
            ("GET", "/connectors/file-shop", {}, {200}),
        ],
        "connectors:write": [
            ("POST", "/connectors", {"json": {"type": "file", "name": "spare", "config": {"root": str(root)}}}, {201}),
            ("PUT", "/connectors/file-spare", {"json": {"name": "spare"}}, {200}),
            ("DELETE", "/connectors/file-spare", {}, {204}),
        ],
        "config:read": [("GET", "/config", {}, {200})],
        "config:write": [("PATCH", "/config", {"json": {"search": {"max_results": None}}}, {200})],
    }


KEYS = {
    **{f"only {scope}": ("acme", [scope]) for scope in SCOPES},
    **{f"all but {scope}": ("acme", [s for s in SCOPES if s != scope]) for scope in SCOPES},
    "admin": ("acme", SCOPES),
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    tmp = tmp_path_factory.mktemp("context_scopes")
    repo = sample_repo(tmp / "shop")
    with serve(rest_config(tmp / "data"), KEYS) as api:
        api.add_file_connector("admin", repo)
        api.index("admin")
        yield api


@pytest.fixture(scope="module")
def requests(api: Api) -> dict[str, list[Request]]:
    return _requests(Path(api.ok("GET", "/connectors/file-shop", "admin")["config"]["root"]))


@pytest.mark.parametrize("scope", SCOPES)
def test_each_scope_opens_its_routes_and_nothing_else_does(api: Api, requests, scope: str) -> None:
    for method, path, kwargs, allowed in requests[scope]:
        refused = api.call(method, path, f"all but {scope}", **kwargs)
        error = envelope(refused, 403, "AUTHORIZATION_ERROR")
        assert error["details"]["scope"] == scope, (method, path)
        assert challenges(refused)["apikey"]  # the authenticator's challenge comes with the refusal
        envelope(api.call(method, path, None, **kwargs), 401, "AUTHENTICATION_ERROR")
        passed = api.call(method, path, f"only {scope}", **kwargs)
        assert passed.status_code in allowed, (method, path, passed.text)
        if method in ("POST", "PUT") and path.startswith("/index"):
            api.wait_for_job("admin")


def test_every_route_of_the_pack_needs_its_scope_but_health(api: Api, requests) -> None:
    document = api.ok("GET", "/openapi.json", "admin")
    operations = {
        (method.upper(), path.removeprefix("/api/v1"))
        for path, item in document["paths"].items()
        for method in item
        if not path.startswith(("/api/v1/tools", "/health", "/api/v1/openapi"))
    }
    covered = {
        (m, p.replace("file-spare", "{id}").replace("file-shop", "{id}"))
        for reqs in requests.values()
        for m, p, _, _ in reqs
    }
    assert operations == covered | {("GET", "/health")}
    assert api.call("GET", "/health").status_code == 200


def _tool_calls() -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, the scope that call needs)."""
    return [
        ("context.search", {"query": "card"}, "search:read"),
        ("context.get_related_info", {"file_path": "shop/billing.py"}, "search:read"),
        ("context.index_control", {"action": "status"}, "index:read"),
        ("context.index_control", {"action": "stop"}, "index:write"),
        ("context.connector_management", {"action": "list"}, "connectors:read"),
        ("context.connector_management", {"action": "remove", "connector_id": "file-none"}, "connectors:write"),
    ]


async def test_mcp_tools_need_the_scope_of_what_they_are_asked(api: Api) -> None:
    url = f"{api.base}/mcp"
    for tool, arguments, scope in _tool_calls():
        async with mcp_client(url, api.keys[f"only {scope}"]) as client:
            result = await client.call_tool(tool, arguments)
            if result.is_error:  # a permitted call may still fail on purpose (nothing to stop, no such connector)
                assert '"not_found"' in result.content[0].text, (tool, arguments, result.content[0].text)
        refused = post_mcp(
            api.base, rpc("tools/call", {"name": tool, "arguments": arguments}), api.keys[f"all but {scope}"]
        )
        assert refused.status_code == 403, (tool, arguments, refused.text)
        data = refused.json()["error"]["data"]
        assert data["code"] == "AUTHORIZATION_ERROR" and data["details"]["scope"] == scope
    shown: Callable[[str], Any] = lambda key: mcp_client(url, api.keys[key])  # noqa: E731
    async with shown("only index:read") as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"context.index_control"}
    async with shown("only connectors:read") as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"context.connector_management"}
    async with shown("only search:read") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"context.search", "context.get_related_info"}
        read = await client.read_resource("engine://files/shop/money.py")
        assert "round_cents" in read.contents[0].text
    async with shown("all but search:read") as client:
        assert not any(str(r.uri).startswith("engine://") for r in (await client.list_resources()).resources)
