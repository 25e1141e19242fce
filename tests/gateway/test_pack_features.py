"""Host features any pack may use, through the official client: tools declared with JSON Schemas (validated with
``jsonschema``, content passed through), prompts, binary resources, progress, cancellation, catalogue changes
announced to clients in both protocol eras, and the call metrics."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.types as mt
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from gateway.api import Principal
from gateway.testing import http_gateway, running_gateway
from tests.gateway.feature_pack import DOUBLE_IN, DOUBLE_OUT, FeaturePlugin, feature_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def plugin() -> FeaturePlugin:
    return FeaturePlugin()


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error
    return json.loads(result.content[0].text)["error"]


async def test_json_schema_tools(tmp_path: Path, plugin: FeaturePlugin) -> None:
    async with running_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        doubled = await client.call_tool("feat_double", {"n": 21})
        bad = await client.call_tool("feat_double", {"n": -1, "extra": True})
        missing = await client.call_tool("feat_double", {})
        invalid_out = await client.call_tool("feat_double", {"n": 13})
        picture = await client.call_tool("feat_picture", {})
    assert tools["feat_double"].input_schema == DOUBLE_IN and tools["feat_double"].output_schema == DOUBLE_OUT
    assert doubled.structured_content == {"doubled": 42} and json.loads(doubled.content[0].text) == {"doubled": 42}
    fields = {e["field"]: e["type"] for e in _error(bad)["details"]["errors"]}
    assert fields == {"n": "minimum", "(root)": "additionalProperties"}
    assert _error(missing)["details"]["errors"] == [
        {"field": "n", "message": "'n' is a required property", "type": "required"}
    ]
    assert _error(invalid_out)["code"] == "internal_error"
    assert [c.type for c in picture.content] == ["text", "image"] and picture.structured_content is None
    assert base64.b64decode(picture.content[1].data).startswith(b"\x89PNG")


async def test_prompts(tmp_path: Path, plugin: FeaturePlugin) -> None:
    config = feature_config(tmp_path, packs={"enabled": ["feat"], "prefix": {"feat": "f_"}})
    async with running_gateway(config, extra_plugins=[("feat", plugin)]) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        got = await client.get_prompt("f_greet", {"name": "Ada", "style": "warm"})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("f_greet", {})
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nope", {})
        runtime = client.runtime
        reader = Principal("reader", scopes=frozenset())
        visible = [name for name, _ in runtime.visible_prompts(reader)]
    assert set(listed) == {"f_greet", "f_classified"}
    greet = listed["f_greet"]
    assert greet.title == "Greeting" and [(a.name, a.required) for a in greet.arguments] == [
        ("name", True),
        ("style", False),
    ]
    assert [(m.role, m.content.text) for m in got.messages] == [("user", "Greet Ada (warm)."), ("assistant", "OK")]
    assert got.description == "A greeting"
    assert "name" in missing.value.message and missing.value.error.data["details"]["errors"][0]["field"] == "name"
    assert "nope" in unknown.value.message
    assert visible == ["f_greet"]  # the scoped prompt is shown only to callers with feat:secret


async def test_binary_resources_and_several_contents(tmp_path: Path, plugin: FeaturePlugin) -> None:
    async with running_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as client:
        read = await client.read_resource("feat://bytes")
    first, second = read.contents
    assert base64.b64decode(first.blob) == b"\x00\x01\x02" and first.uri == "feat://bytes"
    assert second.text == "second part" and second.uri == "feat://bytes#2"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_progress_reaches_the_caller(tmp_path: Path, plugin: FeaturePlugin, mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with running_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)], mode=mode) as client:
        result = await client.call_tool("feat_work", {"steps": 3, "seconds": 0}, progress_callback=on_progress)
        quiet = await client.call_tool("feat_work", {"steps": 2, "seconds": 0})  # nobody asked: nothing sent
    assert result.structured_content == {"done": 3} and quiet.structured_content == {"done": 2}
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_cancellation_reaches_the_handler(tmp_path: Path, plugin: FeaturePlugin, mode: str) -> None:
    with http_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as (base, runtime):
        async with Client(f"{base}/mcp", mode=mode) as client:
            with anyio.move_on_after(0.5) as scope:
                await client.call_tool("feat_work", {"steps": 100, "seconds": 1})
            for _ in range(200):
                if plugin.pack and plugin.pack.cancelled:
                    break
                await anyio.sleep(0.05)
            after = await client.call_tool("feat_work", {"steps": 1, "seconds": 0})
        metrics = runtime.metrics.render().decode()
    assert scope.cancelled_caught
    assert plugin.pack is not None and len(plugin.pack.cancelled) == 1
    assert after.structured_content == {"done": 1}
    assert 'gateway_tool_errors_total{code="cancelled",pack="feat",tool="feat_work",upstream=""} 1.0' in metrics


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_catalogue_changes_are_announced(tmp_path: Path, plugin: FeaturePlugin, mode: str) -> None:
    announced = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            announced.set()

    with http_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as (base, _runtime):
        async with Client(f"{base}/mcp", mode=mode, message_handler=on_message) as client:
            before = {t.name for t in (await client.list_tools()).tools}
            if mode == "legacy":
                await client.call_tool("feat_grow", {"name": "feat_new"})
                with anyio.fail_after(10):
                    await announced.wait()
            else:
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("feat_grow", {"name": "feat_new"})
                    with anyio.fail_after(10):
                        await subscription.__anext__()
            after = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
            hello = await client.call_tool("feat_new", {})
    assert "feat_new" not in before and "feat_new" in after
    assert hello.structured_content == {"hello": "feat_new"}


async def test_a_name_clash_after_a_change_is_left_out(tmp_path: Path, plugin: FeaturePlugin) -> None:
    async with running_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as client:
        clash = await client.call_tool("feat_grow", {"name": "feat_double"})
        still = await client.call_tool("feat_double", {"n": 1})
    assert not clash.is_error and still.structured_content == {"doubled": 2}


async def test_schema_tools_over_rest(tmp_path: Path, plugin: FeaturePlugin) -> None:
    with http_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as (base, _runtime):
        ok = httpx.post(f"{base}/api/v1/tools/feat_double", json={"n": 4}, timeout=30)
        bad = httpx.post(f"{base}/api/v1/tools/feat_double", json={"n": "x"}, timeout=30)
        picture = httpx.post(f"{base}/api/v1/tools/feat_picture", json={}, timeout=30)
        document = httpx.get(f"{base}/api/v1/openapi.json", timeout=30).json()
    assert ok.status_code == 200 and ok.json() == {"doubled": 8}
    assert bad.status_code == 400 and bad.json()["error"]["details"]["code"] == "validation_error"
    assert picture.json()["content"][1]["type"] == "image" and picture.json()["isError"] is False
    operation = document["paths"]["/api/v1/tools/feat_double"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == DOUBLE_IN
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == DOUBLE_OUT


@pytest.mark.parametrize("setting", ["public", "off"])
async def test_metrics_route_settings(tmp_path: Path, plugin: FeaturePlugin, setting: str) -> None:
    config = feature_config(tmp_path, transport={"metrics": setting}, providers={"auth": "api_key"})
    with http_gateway(config, extra_plugins=[("feat", plugin)]) as (base, _runtime):
        response = httpx.get(f"{base}/metrics", timeout=30)
    if setting == "public":
        assert response.status_code == 200 and "gateway_tool_calls_total" in response.text
    else:
        assert response.status_code in (401, 404)
