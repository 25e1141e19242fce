"""``sequentialthinking`` behaves as the reference server does, seen through the MCP SDK client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.testing import running_gateway
from tests.plugins.thinking.conftest import call, gateway_config, thought

pytestmark = pytest.mark.anyio


async def test_the_tool_is_listed_with_the_reference_schema(tmp_path: Path) -> None:
    async with running_gateway(gateway_config(audit=False), tmp_path / "data") as client:
        [tool] = (await client.list_tools()).tools
    assert tool.name == "sequentialthinking"
    schema = tool.input_schema
    assert schema["required"] == ["thought", "nextThoughtNeeded", "thoughtNumber", "totalThoughts"]
    assert set(schema["properties"]) == {
        "thought", "nextThoughtNeeded", "thoughtNumber", "totalThoughts", "isRevision", "revisesThought",
        "branchFromThought", "branchId", "needsMoreThoughts",
    }  # fmt: skip
    assert schema["properties"]["thoughtNumber"] == {
        "description": "Current thought number (numeric value, e.g., 1, 2, 3)",
        "minimum": 1,
        "title": "Thoughtnumber",
        "type": "integer",
    }
    assert schema["properties"]["revisesThought"]["type"] == "integer"  # optional, but not "anyOf [.., null]"
    assert schema["properties"]["revisesThought"]["minimum"] == 1
    assert set(tool.output_schema["required"]) == {
        "thoughtNumber", "totalThoughts", "nextThoughtNeeded", "branches", "thoughtHistoryLength"
    }  # fmt: skip
    assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is False
    assert "Code audits are enabled" not in (tool.description or "")


async def test_response_is_one_json_text_item_with_the_standard_fields(tmp_path: Path) -> None:
    async with running_gateway(gateway_config(audit=False), tmp_path / "data") as client:
        result = await client.call_tool("sequentialthinking", thought("First, list the constraints.", 1, 3))
    assert not result.is_error and len(result.content) == 1 and result.content[0].type == "text"
    text = result.content[0].text
    assert text == json.dumps(
        {"thoughtNumber": 1, "totalThoughts": 3, "nextThoughtNeeded": True, "branches": [], "thoughtHistoryLength": 1},
        indent=2,
    )


async def test_history_grows_and_total_is_raised_to_the_thought_number(tmp_path: Path) -> None:
    async with running_gateway(gateway_config(audit=False), tmp_path / "data") as client:
        first = await call(client, thought("Plan.", 1, 2))
        second = await call(client, thought("Go on.", 2, 2))
        beyond = await call(client, thought("One more than planned.", 3, 2, needsMoreThoughts=True))
        last = await call(client, thought("Done.", 4, 4, next_needed=False))
    assert [b["thoughtHistoryLength"] for b in (first, second, beyond, last)] == [1, 2, 3, 4]
    assert beyond["thoughtNumber"] == 3 and beyond["totalThoughts"] == 3
    assert last["nextThoughtNeeded"] is False and last["totalThoughts"] == 4
    assert all("sessionId" not in b and "gan" not in b for b in (first, second, beyond, last))


async def test_branches_are_recorded_only_with_both_fields(tmp_path: Path) -> None:
    async with running_gateway(gateway_config(audit=False), tmp_path / "data") as client:
        await call(client, thought("Root.", 1, 5))
        only_id = await call(client, thought("Id without a branching point.", 2, 5, branchId="lonely"))
        only_from = await call(client, thought("Branching point without an id.", 3, 5, branchFromThought=1))
        both = await call(client, thought("A real branch.", 4, 5, branchFromThought=1, branchId="alt-a"))
        again = await call(client, thought("Same branch.", 5, 5, branchFromThought=1, branchId="alt-a"))
        other = await call(client, thought("Another branch.", 6, 6, branchFromThought=2, branchId="alt-b"))
    assert only_id["branches"] == [] and only_from["branches"] == []
    assert both["branches"] == ["alt-a"] and again["branches"] == ["alt-a"]
    assert other["branches"] == ["alt-a", "alt-b"]
    assert other["thoughtHistoryLength"] == 6  # every thought joins the history, branched or not


async def test_revision_fields_are_accepted(tmp_path: Path) -> None:
    async with running_gateway(gateway_config(audit=False), tmp_path / "data") as client:
        await call(client, thought("Assume the cache is warm.", 1, 3))
        revised = await call(
            client, thought("The cache is cold after deploys.", 2, 3, isRevision=True, revisesThought=1)
        )
        coerced = await call(client, thought("Strings coerce like zod's.", "3", "3", next_needed="false"))  # type: ignore[arg-type]
    assert revised["thoughtHistoryLength"] == 2 and revised["thoughtNumber"] == 2
    assert coerced["thoughtNumber"] == 3 and coerced["nextThoughtNeeded"] is False


@pytest.mark.parametrize(
    ("arguments", "fields"),
    [
        ({"nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 1}, {"thought": "missing"}),
        (thought("x", 0, 1), {"thoughtNumber": "greater_than_equal"}),
        (thought("x", 1, 0), {"totalThoughts": "greater_than_equal"}),
        (thought("", 1, 1), {"thought": "string_too_short"}),
        (thought("x", 1, 1, next_needed="maybe"), {"nextThoughtNeeded": "bool_parsing"}),  # type: ignore[arg-type]
        (
            thought("x", 1, 1, revisesThought=0, branchFromThought=-2),
            {"revisesThought": "greater_than_equal", "branchFromThought": "greater_than_equal"},
        ),
    ],
)
async def test_invalid_input_uses_the_spec_error_shape(tmp_path: Path, arguments: dict, fields: dict) -> None:
    async with running_gateway(gateway_config(audit=False), tmp_path / "data") as client:
        result = await client.call_tool("sequentialthinking", arguments)
        after = await call(client, thought("Still works.", 1, 1))
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert set(body) == {"error", "status", "details"} and body["status"] == "failed"
    assert body["details"]["code"] == "validation_error"
    assert {e["field"]: e["type"] for e in body["details"]["errors"]} == fields
    assert all(name in body["error"] for name in fields)
    assert after["thoughtHistoryLength"] == 1  # a refused thought is not recorded


async def test_an_oversized_thought_is_refused_naming_the_field(tmp_path: Path) -> None:
    async with running_gateway(gateway_config(audit=False, max_thought_chars=100), tmp_path / "data") as client:
        result = await client.call_tool("sequentialthinking", thought("x" * 101))
    body = json.loads(result.content[0].text)
    assert result.is_error and body["details"]["errors"][0]["field"] == "thought"


async def test_without_auditing_code_is_not_reviewed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENABLE_GAN_AUDITING", raising=False)
    code = "```python\nimport os\n```"
    async with running_gateway(gateway_config(tmp_path, audit=False), tmp_path / "data") as client:
        body = await call(client, thought(code))
    assert "gan" not in body and "sessionId" not in body


async def test_the_environment_switch_turns_audits_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENABLE_GAN_AUDITING", "true")
    async with running_gateway(gateway_config(tmp_path, audit=False), tmp_path / "data") as client:
        [tool] = (await client.list_tools()).tools
        body = await call(client, thought("```python\ndef f(:\n```", branchId="env-on"))
    assert "Code audits are enabled" in (tool.description or "")
    assert body["sessionId"] == "env-on" and body["gan"]["verdict"] == "reject"
