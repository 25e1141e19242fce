"""HTTP upstreams at the edges: what two servers (or a server and a local pack) both offer, and large results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway.api import ResourceContent, ResourceTemplate, ToolPack, hookimpl
from gateway.mcp_adapter import upstream as upstream_wire
from gateway.testing import running_gateway
from tests.plugins.remote.support import HttpUpstream, remote_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TEMPLATES = ("py://items/{item_id}", "py://search{?q,limit}", "py://files{/path*}")


async def test_what_two_servers_both_offer_is_served_once_and_each_left_out_entry_logged_once(
    tmp_path: Path, py_http: HttpUpstream
):
    servers = [{"name": name, "url": py_http.url, "prefix": "py_"} for name in ("first", "second")]
    with capture_logs() as logs:
        async with running_gateway(remote_config(tmp_path, servers)) as client:
            for _ in range(3):
                templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
                resources = [str(r.uri) for r in (await client.list_resources()).resources]
                prompts = [p.name for p in (await client.list_prompts()).prompts]
                client.runtime.upstream_statuses()
            served = [t.upstream for _, t, _ in client.runtime.catalogue.templates]
            item = await client.read_resource("py://items/7")
    assert sorted(templates) == sorted(TEMPLATES) and served == ["first"] * len(TEMPLATES)
    assert resources.count("py://greeting") == 1 and prompts == ["py_review"]
    assert "7" in item.contents[0].text
    clashes = [e for e in logs if e["event"].startswith("remote ") and "clash" in e["event"]]
    told = sorted(
        (e["event"].split(" clash")[0], e.get("tool") or e.get("resource") or e.get("resource_template") or e["prompt"])
        for e in clashes
    )
    assert len(told) == len(set(told)), told  # once each, however often listed
    assert {what for what, _ in told} == {
        "remote tool name",
        "remote resource",
        "remote resource template",
        "remote prompt name",
    }
    assert {key for what, key in told if what == "remote resource template"} == set(TEMPLATES)
    assert all(e["kept"] == "first" and e["left_out"] == "second" for e in clashes)


class _LocalItems(ToolPack):
    """A local pack offering one of the Python SDK server's resource templates."""

    name = "items"

    def resource_templates(self) -> list[ResourceTemplate]:
        async def read(variables: Any, ctx: Any) -> ResourceContent:
            return ResourceContent(text=f"local item {variables['item_id']}", mime_type="text/plain")

        return [ResourceTemplate("py://items/{item_id}", "item", read, mime_type="text/plain")]


class _ItemsPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("items", lambda context: _LocalItems())


@pytest.mark.parametrize("order", [["items", "remote"], ["remote", "items"]])
async def test_a_local_resource_template_keeps_its_uri_template(
    tmp_path: Path, py_http: HttpUpstream, order: list[str]
):
    config = remote_config(tmp_path, [{"name": "py", "url": py_http.url}], packs={"enabled": order})
    for _ in range(2):  # the second start reads the server's offer from the catalogue copy
        async with running_gateway(config, extra_plugins=[("items", _ItemsPlugin())]) as client:
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            item = await client.read_resource("py://items/7")
            search = await client.read_resource("py://search?q=x")
        assert templates.count("py://items/{item_id}") == 1
        assert item.contents[0].text == "local item 7"
        assert search.contents[0].text.startswith("searched")


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_a_result_over_a_megabyte_arrives_in_both_eras(tmp_path: Path, py_http: HttpUpstream, protocol: str):
    """The SDK's client refuses a server-sent event over 1 MiB by default; the legacy era answers in one."""
    server = {"name": "py", "url": py_http.url, "prefix": "py_", "protocol": protocol}
    async with running_gateway(remote_config(tmp_path, [server])) as client:
        result = await client.call_tool("py_big", {"size": 2_000_000})
    assert not result.is_error, result.content[0].text[:500]
    assert result.structured_content == {"result": "x" * 2_000_000}


async def test_a_result_past_the_event_limit_fails_that_call_only(tmp_path: Path, py_http: HttpUpstream, monkeypatch):
    """Not ``upstream_unavailable`` (retrying cannot help) and not a broken session: the next call goes through."""
    monkeypatch.setattr(upstream_wire, "MAX_EVENT_BYTES", 1_000_000)  # instead of sending 64 MiB
    server = {"name": "py", "url": py_http.url, "prefix": "py_", "protocol": "legacy"}
    async with running_gateway(remote_config(tmp_path, [server])) as client:
        result = await client.call_tool("py_big", {"size": 2_000_000})
        after = await client.call_tool("py_echo", {"text": "still here"})
        starts = client.runtime.packs["remote"].upstreams[0].starts
    error = json.loads(result.content[0].text)["error"]
    assert error["code"] == "upstream_error" and "exceeds 1000000 bytes" in error["message"], error
    assert after.structured_content == {"result": "still here"} and starts == 1
