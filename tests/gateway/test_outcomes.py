"""What a handler returns or raises that JSON cannot carry: a NaN in a result, a datetime in an error's details."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from gateway.api import CallContext, Tool, ToolError, ToolPack, hookimpl
from gateway.outcomes import non_json_fields
from gateway.testing import running_gateway

pytestmark = pytest.mark.anyio


class MeasureIn(BaseModel):
    value: str


class Measure(BaseModel):
    value: float


class OddPack(ToolPack):
    name = "odd"

    def tools(self) -> list[Tool[Any, Any]]:
        async def measure(args: MeasureIn, ctx: CallContext) -> Measure:
            return Measure(value=float(args.value))

        async def refuse(args: MeasureIn, ctx: CallContext) -> Measure:
            details = {"when": datetime(2026, 1, 2, tzinfo=UTC), "tags": {"a"}, "ratio": math.nan, "n": 3}
            raise ToolError("not today", code="insufficient_data", details=details)

        async def raw(args: dict[str, Any], ctx: CallContext) -> Mapping[str, Any]:
            return {"value": float(args["value"])}

        schema = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
        return [
            Tool("odd_measure", "A measurement.", MeasureIn, Measure, measure),
            Tool("odd_refuse", "Refuses with details JSON cannot carry.", MeasureIn, Measure, refuse),
            Tool.from_json_schema("odd_raw", "A JSON Schema tool's measurement.", schema, raw),
            Tool.from_json_schema(  # as a remote pack serves a server's tool: its output schema is the server's
                "odd_remote", "A remote measurement.", schema, raw, output_schema=schema, upstream="meter"
            ),
        ]


class OddPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("odd", lambda context: OddPack())


def _config(tmp_path: Any) -> dict[str, Any]:
    return {"gateway": {"data_dir": str(tmp_path / "data")}, "packs": {"enabled": ["odd"]}, "sanitize": {"logs": ""}}


@pytest.mark.parametrize("tool", ["odd_measure", "odd_raw"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
async def test_a_result_json_cannot_carry_is_an_invalid_result_naming_the_field(
    tmp_path: Any, tool: str, value: str
) -> None:
    async with running_gateway(_config(tmp_path), extra_plugins=[("odd", OddPlugin())]) as client:
        with capture_logs() as logs:
            result = await client.call_tool(tool, {"value": value})
        fine = await client.call_tool(tool, {"value": "1.5"})
    body = json.loads(result.content[0].text)
    assert result.is_error and body["error"]["code"] == "internal_error"
    assert body["error"]["message"] == "the tool produced an invalid result"
    assert body["error"]["details"] == {"errors": ["value"]}
    assert any(e["event"] == "tool result holds values JSON cannot carry" and e["tool"] == tool for e in logs)
    assert not fine.is_error and json.loads(fine.content[0].text) == {"value": 1.5}


async def test_error_details_json_cannot_carry_reach_the_caller_as_text(tmp_path: Any) -> None:
    async with running_gateway(_config(tmp_path), extra_plugins=[("odd", OddPlugin())]) as client:
        with capture_logs() as logs:
            result = await client.call_tool("odd_refuse", {"value": "1"})
    body = json.loads(result.content[0].text)
    assert result.is_error and body["error"]["code"] == "insufficient_data"
    assert body["error"]["details"] == {"when": "2026-01-02 00:00:00+00:00", "tags": "{'a'}", "ratio": "nan", "n": 3}
    (logged,) = [e for e in logs if e["event"] == "tool error holds values JSON cannot carry; sent as text"]
    assert sorted(logged["fields"]) == ["error.details.ratio", "error.details.tags", "error.details.when"]


async def test_a_remote_result_its_own_output_schema_refuses_is_the_servers_error(tmp_path: Any) -> None:
    async with running_gateway(_config(tmp_path), extra_plugins=[("odd", OddPlugin())]) as client:
        result = await client.call_tool("odd_remote", {"value": "1.5"})  # a number where its schema says a string
    error = json.loads(result.content[0].text)["error"]
    assert result.is_error and error["code"] == "upstream_error"
    assert error["message"] == "upstream server 'meter' answered with a result its own output schema refuses"
    assert error["details"] == {"upstream": "meter", "errors": ["value"]}


def test_non_json_fields_are_named_by_their_path() -> None:
    value = {"a": [1, {"b": math.inf}], "c": object(), 3: "x", "d": {"e": None, "f": True}}
    assert non_json_fields(value) == ["a[1].b", "c", "3"]
    assert non_json_fields({"fine": [1, 2.5, "x", None, {"y": False}]}) == []
