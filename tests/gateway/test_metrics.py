"""The metric series follow the catalogue: a tool no longer served takes its series with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.api import Tool, ToolPack
from gateway.catalogue import Catalogue
from gateway.metrics import GatewayMetrics


class Changing(ToolPack):
    name = "changing"

    def __init__(self) -> None:
        self.names = ["keep", "churn"]

    def tools(self) -> list[Tool[Any, Any]]:
        async def handler(args: dict[str, Any], ctx: Any) -> Mapping[str, Any]:
            return {}

        schema = {"type": "object"}
        return [Tool.from_json_schema(name, "A tool.", schema, handler, upstream="up") for name in self.names]


def test_a_tool_no_longer_served_takes_its_series_with_it() -> None:
    metrics = GatewayMetrics()
    catalogue = Catalogue(metrics)
    pack = Changing()
    catalogue.add_pack("remote", pack)
    for name in ("keep", "churn"):
        bound = catalogue.tools[name].metrics
        assert bound is not None
        bound.observe(0.01, None)
        bound.observe(0.02, "upstream_error")
    pack.names = ["keep"]
    catalogue.replace_pack("remote", pack)
    kept = catalogue.tools["keep"].metrics
    assert kept is not None
    kept.observe(0.01, None)
    text = metrics.render().decode()
    assert 'tool="churn"' not in text
    assert 'gateway_tool_calls_total{pack="remote",tool="keep",upstream="up"} 3.0' in text
    assert 'gateway_tool_errors_total{code="upstream_error",pack="remote",tool="keep",upstream="up"} 1.0' in text
    pack.names = []
    catalogue.replace_pack("remote", pack)
    assert 'tool="keep"' not in metrics.render().decode()  # error codes counted under an earlier binding too
