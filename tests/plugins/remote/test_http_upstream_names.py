"""A server built with the Python SDK over Streamable HTTP, fronted by the gateway: which of its names are served.
Allow and deny lists, a remote tool, resource or prompt named like a local one, a tool name two servers share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.api import Prompt, PromptMessage, PromptResult, Resource, ResourceContent, ToolPack, hookimpl
from gateway.inventory import upstream_lines
from gateway.testing import running_gateway
from tests.plugins.remote.support import HttpUpstream, py_http_server, remote_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_allow_and_deny_lists(tmp_path: Path, py_http: HttpUpstream):
    servers = [
        py_http_server(py_http, name="only", prefix="a_", tools={"allow": ["echo", "add"]}),
        py_http_server(py_http, name="most", prefix="b_", tools={"deny": ["leak", "grow", "crash", "shout", "big"]}),
    ]
    async with running_gateway(remote_config(tmp_path, servers)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert {n for n in names if n.startswith("a_")} == {"a_echo", "a_add"}
    assert {n for n in names if n.startswith("b_")} == {
        "b_echo",
        "b_add",
        "b_slow",
        "b_overlap",
        "b_pause",
        "b_pid",
        "b_whoami",
        "b_regional",
    }


async def test_a_remote_tool_never_takes_a_local_name_nor_stops_the_start(tmp_path: Path, py_http: HttpUpstream):
    """A server that adds a tool named like a local one (no prefix): the local tool keeps its name, now and at the
    next start, whose catalogue copy holds the clashing tool."""
    config = remote_config(tmp_path, [py_http_server(py_http, prefix="")], packs={"enabled": ["thinking", "remote"]})
    for _ in range(2):
        async with running_gateway(config) as client:
            await client.call_tool("grow", {"name": "sequentialthinking"})
            served = client.runtime.catalogue.tools["sequentialthinking"]
            assert served.pack == "thinking" and served.tool.upstream is None
            answer = await client.call_tool(
                "sequentialthinking",
                {"thought": "t", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False},
            )
            assert not answer.is_error and "thoughtNumber" in answer.content[0].text
            remote = sum(1 for tool in client.runtime.tools.values() if tool.pack == "remote")
            (summary,) = upstream_lines(client.runtime)  # the operator's count: served, not offered
            assert f"remote/py  http  up  {remote} tools" in summary, summary


class _LocalTwins(ToolPack):
    """A local pack offering the resource URI and the prompt name the Python SDK server offers."""

    name = "twins"

    def resources(self) -> list[Resource]:
        async def read(ctx: Any) -> ResourceContent:
            return ResourceContent(text="local greeting", mime_type="text/plain")

        return [Resource("py://greeting", "greeting", read, mime_type="text/plain")]

    def prompts(self) -> list[Prompt]:
        async def render(arguments: Any, ctx: Any) -> PromptResult:
            return PromptResult([PromptMessage.text("user", "the local review prompt")])

        return [Prompt("review", render)]


class _TwinsPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("twins", lambda context: _LocalTwins())


@pytest.mark.parametrize("order", [["twins", "remote"], ["remote", "twins"]])
async def test_a_remote_resource_or_prompt_never_takes_a_local_one_nor_stops_the_start(
    tmp_path: Path, py_http: HttpUpstream, order: list[str]
):
    config = remote_config(tmp_path, [py_http_server(py_http, prefix="")], packs={"enabled": order})
    for _ in range(2):  # the second start reads the server's offer from the catalogue copy
        async with running_gateway(config, extra_plugins=[("twins", _TwinsPlugin())]) as client:
            greeting = await client.read_resource("py://greeting")
            review = await client.get_prompt("review", {"code": "x = 1"})
            item = await client.read_resource("py://items/7")  # the server's other entries are served
        assert greeting.contents[0].text == "local greeting"
        assert review.messages[0].content.text == "the local review prompt"
        assert "7" in item.contents[0].text


async def test_a_tool_name_two_servers_share_is_logged_once(tmp_path: Path, py_http: HttpUpstream):
    from structlog.testing import capture_logs

    servers = [{"name": name, "url": py_http.url, "prefix": "py_"} for name in ("first", "second")]
    with capture_logs() as logs:
        async with running_gateway(remote_config(tmp_path, servers)) as client:
            for _ in range(3):
                await client.list_tools()
                client.runtime.upstream_statuses()  # what every /metrics scrape and `gateway plugins` read
            echo = await client.call_tool("py_echo", {"text": "x"})
    clashes = [e for e in logs if e["event"].startswith("remote tool name clash") and e["tool"] == "py_echo"]
    assert len(clashes) == 1 and clashes[0]["kept"] == "first" and clashes[0]["left_out"] == "second"
    assert echo.structured_content == {"result": "x"}
