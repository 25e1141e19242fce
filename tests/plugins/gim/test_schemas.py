"""The five tools as a client sees them: names, input schemas (required fields, enums, defaults), scopes,
annotations, and the server instructions. Checked through the MCP SDK client against the API reference."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

SPEC_REQUIRED = {
    "gim_search_issues": ["error_message"],
    "gim_get_fix_bundle": ["issue_id"],
    "gim_submit_issue": ["error_description", "root_cause", "fix_bundle", "model", "provider"],
    "gim_confirm_fix": ["issue_id", "success"],
    "gim_report_usage": ["event_type", "session_id", "timestamp"],
}


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow a ``$ref`` (and unwrap ``anyOf: [X, null]``) to the schema of a property."""
    if "$ref" in node:
        return _resolve(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        if len(options) == 1:
            return _resolve(schema, options[0])
    return node


async def _tools(client: Any) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_five_tools_with_the_spec_required_fields(gim: Any) -> None:
    tools = await _tools(gim)
    assert set(tools) == set(SPEC_REQUIRED)
    for name, required in SPEC_REQUIRED.items():
        assert sorted(tools[name].input_schema.get("required", [])) == sorted(required), name


async def test_search_schema_defaults_enums_and_pagination(gim: Any) -> None:
    schema = (await _tools(gim))["gim_search_issues"].input_schema
    props = schema["properties"]
    assert props["limit"]["default"] == 10
    assert props["offset"]["default"] == 0
    provider = _resolve(schema, props["provider"])
    assert provider["enum"] == ["anthropic", "openai", "google", "meta", "mistral", "other"]
    environment = _resolve(schema, props["environment"])
    assert set(environment["properties"]) == {"language", "framework", "os"}
    assert {"model", "error_message"} <= set(props)


async def test_submit_schema_fix_bundle_and_action_types(gim: Any) -> None:
    schema = (await _tools(gim))["gim_submit_issue"].input_schema
    fix = _resolve(schema, schema["properties"]["fix_bundle"])
    assert sorted(fix["required"]) == ["env_actions", "verification"]
    assert {"constraints", "code_fix"} <= set(fix["properties"])
    action = _resolve(schema, fix["properties"]["env_actions"]["items"])
    assert _resolve(schema, action["properties"]["type"])["enum"] == [
        "install",
        "upgrade",
        "downgrade",
        "config",
        "flag",
        "command",
    ]
    environment = _resolve(schema, schema["properties"]["environment"])
    assert set(environment["properties"]) == {"language", "language_version", "framework", "framework_version", "os"}


async def test_usage_schema_event_types_and_timestamp(gim: Any) -> None:
    schema = (await _tools(gim))["gim_report_usage"].input_schema
    props = schema["properties"]
    assert props["event_type"]["enum"] == ["search", "fix_retrieved", "fix_applied", "fix_confirmed", "issue_submitted"]
    assert props["timestamp"]["format"] == "date-time"


async def test_annotations_and_scopes(gim: Any) -> None:
    tools = await _tools(gim)
    for name in ("gim_search_issues", "gim_get_fix_bundle"):
        ann = tools[name].annotations
        assert ann.read_only_hint is True and ann.idempotent_hint is True, name
    for name in ("gim_submit_issue", "gim_confirm_fix", "gim_report_usage"):
        ann = tools[name].annotations
        assert ann.read_only_hint is False and ann.destructive_hint is False, name
    assert tools["gim_confirm_fix"].annotations.idempotent_hint is True
    assert tools["gim_submit_issue"].annotations.idempotent_hint is False
    runtime_tools = gim.runtime.tools
    assert {n: runtime_tools[n].tool.scope for n in SPEC_REQUIRED} == {
        "gim_search_issues": "gim:read",
        "gim_get_fix_bundle": "gim:read",
        "gim_submit_issue": "gim:write",
        "gim_confirm_fix": "gim:write",
        "gim_report_usage": "gim:write",
    }


async def test_instructions_tell_when_to_call_each_tool(gim: Any) -> None:
    text = gim.instructions or ""
    for phrase in ("gim_search_issues FIRST", "gim_confirm_fix", "ONLY for an issue you have actually RESOLVED"):
        assert phrase in text
