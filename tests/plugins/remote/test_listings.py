"""A server's listing with entries the protocol refuses: each is left out, logged once per catalogue read naming
the server and the entry, and the rest is served, in both protocol eras."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from gateway.mcp_adapter.listings import sdk_internals_present, sound_page
from gateway.testing import running_gateway
from tests.plugins.remote.support import eventually, http_upstream, py_http_server, py_stdio_server, remote_config

LEFT_OUT = "upstream tool left out: not valid MCP"


async def _serves_the_rest(config: dict[str, Any], era: str) -> list[dict[str, Any]]:
    with capture_logs(processors=[merge_contextvars]) as logs:
        async with running_gateway(config) as client:
            upstream = client.runtime.packs["remote"].upstreams[0]
            assert upstream.state == "up", upstream.last_error
            assert (upstream.session.protocol_version == "2026-07-28") == (era == "modern")
            listed = {t.name for t in (await client.list_tools()).tools}
            echoed = await client.call_tool("py_echo", {"text": "still here"})
            seen: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append(progress)

            # through the SDK's client (progress asked for): it knows the tools kept, output schemas included
            added = await client.call_tool("py_add", {"a": 2, "b": 3}, progress_callback=on_progress)
            await client.call_tool("py_grow", {"name": "later"})  # a change: the catalogue is read again
            assert await eventually(lambda: "py_later" in client.runtime.tools)
    assert "py_lopsided" not in listed and {"py_echo", "py_add", "py_whoami"} <= listed
    assert echoed.structured_content == {"result": "still here"}
    assert not added.is_error and added.structured_content == {"total": 5}, added
    return [e for e in logs if e["event"] == LEFT_OUT]


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_tool_the_protocol_refuses_is_left_out_and_the_rest_served_over_stdio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = {**py_stdio_server(tmp_path / "state"), "env": {"PY_SERVER_BAD_SCHEMA": "1"}}
    told = await _serves_the_rest(remote_config(tmp_path, [server]), "modern")
    assert len(told) == 2, told  # once per catalogue read: at the start, and after the change
    assert all(e["upstream"] == "py" and e["entry"] == "lopsided" for e in told), told
    assert "inputSchema.type" in told[0]["error"], told


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_a_tool_the_protocol_refuses_is_left_out_over_http_in_both_eras(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    monkeypatch.setenv("PY_SERVER_BAD_SCHEMA", "1")
    with http_upstream(tmp_path) as upstream:
        config = remote_config(tmp_path, [py_http_server(upstream, protocol=protocol)])
        told = await _serves_the_rest(config, "legacy" if protocol == "legacy" else "modern")
    assert len(told) == 2 and {e["upstream"] for e in told} == {"py"}, told


PAGES = {
    "prompts/list": ("prompts", {"name": "ok"}, {"name": "odd", "arguments": [{"required": True}]}, "odd"),
    "resources/list": ("resources", {"uri": "a://ok", "name": "ok"}, {"uri": "a://odd"}, "a://odd"),
    "resources/templates/list": (
        "resourceTemplates",
        {"uriTemplate": "a://{x}", "name": "ok"},
        {"uriTemplate": "a://{y}", "name": 7},
        "a://{y}",
    ),
    "tools/list": ("tools", {"name": "ok", "inputSchema": {"type": "object"}}, {"inputSchema": {}}, "#1"),
}


@pytest.mark.parametrize("method", sorted(PAGES))
@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_every_listing_leaves_out_only_the_entries_refused(method: str, version: str) -> None:
    key, good, bad, label = PAGES[method]
    result, left_out = sound_page(method, version, {key: [good, bad, good], "nextCursor": "2"})
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert len(dumped[key]) == 2 and dumped["nextCursor"] == "2"
    assert [entry for entry, _ in left_out] == [label], left_out


def test_a_page_refused_as_a_whole_still_fails() -> None:
    with pytest.raises(ValidationError):
        sound_page("tools/list", "2025-11-25", {"tools": [], "nextCursor": 3})
    with pytest.raises(ValidationError):
        sound_page("tools/list", "2025-11-25", {"tools": "none"})
    with pytest.raises(ValidationError):  # the 2026-07-28 era's page fields are required
        sound_page("tools/list", "2026-07-28", {"tools": [{"name": "ok", "inputSchema": {"type": "object"}}]})


def test_an_sdk_without_the_members_used_leaves_pages_whole() -> None:
    """The untyped re-read uses private members of the SDK's session; without them, a page the SDK refuses fails as
    a whole (as before), not with an AttributeError taken for a bug. The tests above show they are present now."""
    assert not sdk_internals_present(object())
