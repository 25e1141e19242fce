"""The gateway through the SDK's Client, in-process, in both protocol eras."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from gateway.testing import running_gateway
from tests.gateway.sample_plugin import sample_config

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
async def test_lists_tools_with_schemas_from_models(tmp_path, sample, mode):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)], mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"echo_echo", "echo_fail", "echo_admin"}
    echo = tools["echo_echo"]
    assert echo.input_schema["required"] == ["text"]
    assert echo.input_schema["properties"]["times"]["maximum"] == 5
    assert set(echo.output_schema["properties"]) == {"echoed", "caller"}
    assert echo.annotations.read_only_hint is True


@pytest.mark.parametrize("mode", MODES)
async def test_call_returns_structured_content_and_json_text(tmp_path, sample, mode):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)], mode=mode) as client:
        result = await client.call_tool("echo_echo", {"text": "hi", "times": 2})
    assert not result.is_error
    assert result.structured_content == {"echoed": "hi hi", "caller": "tester"}
    assert json.loads(result.content[0].text) == result.structured_content


async def test_argument_validation_names_each_field(tmp_path, sample):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_echo", {"times": 9})
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert body["error"]["code"] == "validation_error"
    fields = {e["field"]: e["type"] for e in body["error"]["details"]["errors"]}
    assert fields == {"text": "missing", "times": "less_than_equal"}
    assert "text" in body["error"]["message"] and "times" in body["error"]["message"]


async def test_tool_errors_use_the_gim_error_format(tmp_path, sample):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        failed = await client.call_tool("echo_fail", {"mode": "tool_error"})
        missing = await client.call_tool("echo_fail", {"mode": "missing"})
    assert failed.is_error and failed.structured_content is None
    assert json.loads(failed.content[0].text) == {
        "error": {"code": "insufficient_data", "message": "a deliberate failure", "details": {"why": "test"}}
    }
    assert json.loads(missing.content[0].text)["error"]["code"] == "not_found"


async def test_a_tool_error_raised_in_a_task_group_keeps_its_code(tmp_path, sample):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_fail", {"mode": "in_task_group"})
    body = json.loads(result.content[0].text)
    assert result.is_error and body["error"]["code"] == "not_found"
    assert body["error"]["details"] == {"id": "y"}


async def test_crash_is_internal_error_without_internals(tmp_path, sample):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_fail", {"mode": "crash"})
    text = result.content[0].text
    body = json.loads(text)
    assert result.is_error and body["error"]["code"] == "internal_error"
    assert body["error"]["details"]["correlation_id"]
    for leak in ("Traceback", "/srv/app", "secret internal detail", "RuntimeError"):
        assert leak not in text


async def test_a_configuration_error_found_by_a_call_is_said_not_hidden(tmp_path, sample):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_fail", {"mode": "misconfigured"})
    error = json.loads(result.content[0].text)["error"]
    assert result.is_error and error["code"] == "internal_error" and error["details"]["correlation_id"]
    assert error["message"].startswith("misconfigured: the vector collection 'x' holds another embedder's vectors")


async def test_output_is_validated_against_the_output_model(tmp_path, sample):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_fail", {"mode": "bad_output"})
    body = json.loads(result.content[0].text)
    assert result.is_error and body["error"]["code"] == "internal_error"
    assert body["error"]["message"] == "the tool produced an invalid result"


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_is_a_protocol_error(tmp_path, sample, mode):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)], mode=mode) as client:
        with pytest.raises(MCPError, match="Unknown tool: nope"):
            await client.call_tool("nope", {})


async def test_pack_may_render_its_own_error_body(tmp_path, sample):
    config = sample_config(tmp_path, packs={"enabled": ["custom"]})
    async with running_gateway(config, extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("custom_echo", {})
    body = json.loads(result.content[0].text)
    assert body["status"] == "failed" and "text" in body["error"]
    assert body["details"]["errors"][0]["field"] == "text"


async def test_resources_and_templates(tmp_path, sample):
    config = sample_config(tmp_path, plugins={"echo": {"greeting": "howdy"}})
    async with running_gateway(config, extra_plugins=[("sample", sample)]) as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        greeting = await client.read_resource("echo://greeting")
        item = await client.read_resource("echo://items/42")
    assert [str(r.uri) for r in resources] == ["echo://greeting"]
    assert [t.uri_template for t in templates] == ["echo://items/{item_id}"]
    assert json.loads(greeting.contents[0].text) == {"greeting": "howdy"}
    assert item.contents[0].text == "item 42"


async def test_instructions_come_from_the_packs(tmp_path, sample):
    async with running_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)], mode="legacy") as client:
        assert "echo_echo" in (client.instructions or "")


async def test_prefix_per_pack(tmp_path, sample):
    config = sample_config(tmp_path, packs={"enabled": ["echo"], "prefix": {"echo": "team_"}})
    async with running_gateway(config, extra_plugins=[("sample", sample)]) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("team_echo_echo", {"text": "x"})
    assert names == {"team_echo_echo", "team_echo_fail", "team_echo_admin"}
    assert not result.is_error
