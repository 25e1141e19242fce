"""Mistakes in contributed REST routes fail loudly: when the route is declared (``RestRoute`` checks itself) or when
the HTTP app is built (collisions, unknown tiers, path parameters that are not fields), naming the pack."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from gateway.api import CallContext, ConfigError, RateTier, RestRoute, ToolPack, hookimpl
from gateway.app import running_runtime
from gateway.http import build_http_app
from tests.gateway.rest_sample import PLUGINS, Pong, notes_config


class KeyIn(BaseModel):
    key: str


async def _pong(args: BaseModel, ctx: CallContext) -> Pong:
    return Pong(caller="x")


class OnePack(ToolPack):
    def __init__(self, *routes: RestRoute) -> None:
        self._routes = routes

    def rest_routes(self) -> Sequence[RestRoute]:
        return self._routes


class OnePlugin:
    def __init__(self, *routes: RestRoute) -> None:
        self.routes = routes

    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("other", lambda ctx: OnePack(*self.routes))


def _get(path: str, **kwargs: Any) -> RestRoute:
    return RestRoute("GET", path, "A route", _pong, output_model=Pong, **kwargs)


async def _build(tmp_path: Path, *routes: RestRoute, **tables: Any) -> None:
    config = notes_config(tmp_path, auth="none", **tables)
    config["packs"]["enabled"] = ["notes", "other"]
    async with running_runtime(
        config, extra_plugins=[*PLUGINS, ("other", OnePlugin(*routes))], configure_logs=False
    ) as rt:
        build_http_app(rt)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("route", "message"),
    [
        (_get("/ping"), "REST route GET /ping is offered by pack 'notes' and by pack 'other'"),
        (_get("/notes/{key}", input_model=KeyIn), "REST route GET /notes/{key} is offered by pack 'notes'"),
        (_get("/tools"), "REST route GET /tools is offered by the gateway and by pack 'other'"),
        (_get("/openapi.json"), "is offered by the gateway"),
        (_get("/other", tier="bulk"), "names the rate-limit tier 'bulk', which neither the gateway nor [rest.tiers]"),
        (
            _get("/other", tier=RateTier("search", 50)),
            "declares tier 'search' as 50 per 60 s, but the gateway declares it",
        ),
        (_get("/other/{thing}"), "path parameter(s) thing are not fields of NoInput"),
        (
            _get("/other", operation_id="get_ping"),
            "operation id 'get_ping' is used by pack 'notes' and by pack 'other'",
        ),
    ],
)
async def test_conflicting_or_dangling_routes_stop_the_start(tmp_path: Path, route: RestRoute, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        await _build(tmp_path, route)
    assert message in str(raised.value)
    assert str(raised.value).startswith("<config>:")


@pytest.mark.anyio
async def test_a_tier_declared_by_one_route_serves_others_and_config_resizes_it(tmp_path: Path) -> None:
    routes = (_get("/a", tier=RateTier("bulk", 7)), _get("/b", tier="bulk"), _get("/c", tier="notes_edit"))
    await _build(tmp_path, *routes)
    await _build(tmp_path, *routes, rest={"tiers": {"bulk": {"limit": 3, "period_seconds": 1}}})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": "connectors"}, "the path is '/'-separated segments"),
        ({"path": "/a//b"}, "the path is '/'-separated segments"),
        ({"path": "/a/{x-y}"}, "the path is '/'-separated segments"),
        ({"output_model": None}, "a route without an output model answers 204"),
        ({"status": 204}, "a route with an output model answers a 2xx status other than 204"),
        ({"status": 302}, "a route with an output model answers a 2xx status"),
        ({"public": True, "scope": "x:read"}, "a public route cannot require a scope"),
        ({"errors": (418,)}, "errors [418] are not statuses of the error envelope"),
    ],
)
def test_a_route_checks_its_own_declaration(kwargs: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {"method": "GET", "path": "/a", "summary": "s", "handler": _pong, "output_model": Pong}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        RestRoute(**{**fields, **kwargs})


@pytest.mark.parametrize(("name", "limit", "period"), [("Search", 1, 60), ("x", 0, 60), ("x", 1, 0)])
def test_a_tier_checks_its_size_and_name(name: str, limit: int, period: float) -> None:
    with pytest.raises(ValueError):
        RateTier(name, limit, period)


def test_operation_ids_default_to_method_and_path() -> None:
    assert _get("/connectors/{id}/sync").name == "get_connectors_id_sync"
    assert _get("/x", operation_id="custom").name == "custom"
