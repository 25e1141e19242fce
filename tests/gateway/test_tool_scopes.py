"""A tool whose scope depends on its arguments (``ScopeByArgument``): listing, in-process calls, and over real HTTP
the MCP endpoint (refused before the SDK with ``insufficient_scope`` naming the scope of that call) and the REST
facade, with the real ``api_key`` authenticator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import pytest
from pydantic import BaseModel, ConfigDict

from gateway.api import AUTH, CallContext, Principal, ScopeByArgument, Tool, ToolPack, hookimpl
from gateway.app import prepare, running_runtime
from gateway.http_errors import JSONRPC_FORBIDDEN
from gateway.providers import ProviderHub
from gateway.testing import http_gateway
from tests.gateway.http_support import call_rest, challenges, config, post_mcp, rpc


class Ledger(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["show", "post", "close"]


class Done(BaseModel):
    action: str


async def _ledger(args: Ledger, ctx: CallContext) -> Done:
    return Done(action=args.action)


LEDGER = Tool(
    "ledger",
    "Show (ledger:read) or change (ledger:write; close: ledger:admin) the ledger.",
    Ledger,
    Done,
    _ledger,
    scope="ledger:write",
    scope_by=ScopeByArgument("action", {"show": "ledger:read", "close": "ledger:admin"}),
)


class LedgerPack(ToolPack):
    name = "ledger"

    def tools(self) -> list[Tool[Any, Any]]:
        return [LEDGER]


class LedgerPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("ledger", lambda ctx: LedgerPack())


PLUGINS = [("ledger", LedgerPlugin())]


def _principal(*scopes: str) -> Principal:
    return Principal(subject="ada", tenant="acme", scopes=frozenset(scopes), method="api_key")


def test_the_tool_knows_its_scopes_and_who_sees_it() -> None:
    assert LEDGER.scopes == {"ledger:read", "ledger:write", "ledger:admin"}
    assert LEDGER.scope_for({"action": "show"}) == "ledger:read"
    assert LEDGER.scope_for(Ledger(action="close")) == "ledger:admin"
    assert (
        LEDGER.scope_for({"action": "post"})
        == LEDGER.scope_for({"action": 3})
        == LEDGER.scope_for({})
        == ("ledger:write")
    )
    assert LEDGER.visible_to(_principal("ledger:read")) and not LEDGER.visible_to(_principal("other:read"))


def _run(tmp_path: Path, principal: Principal, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with running_runtime(
            config(tmp_path, "none", packs={"enabled": ["ledger"]}), extra_plugins=PLUGINS
        ) as rt:
            return await rt.call_tool("ledger", arguments, rt.new_context(principal=principal))

    return anyio.run(main)


@pytest.mark.parametrize(
    ("scopes", "action", "refused_for"),
    [
        (("ledger:read",), "show", None),
        (("ledger:read",), "post", "ledger:write"),
        (("ledger:write",), "post", None),
        (("ledger:write",), "show", "ledger:read"),  # writing does not imply reading: the scopes are as declared
        (("ledger:write",), "close", "ledger:admin"),
        ((), "show", "ledger:write"),  # a caller who may call nothing of it is refused before validation
    ],
)
def test_in_process_calls_need_the_scope_of_their_arguments(tmp_path: Path, scopes, action, refused_for) -> None:
    outcome = _run(tmp_path, _principal(*scopes), {"action": action})
    if refused_for is None:
        assert not outcome.is_error and outcome.body == {"action": action}
    else:
        assert outcome.error.http_status == 403 and outcome.error.details == {"required_scope": refused_for}


def test_invalid_arguments_of_a_visible_tool_are_a_validation_error(tmp_path: Path) -> None:
    outcome = _run(tmp_path, _principal("ledger:read"), {"action": "burn"})
    assert outcome.error.code == "validation_error"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, dict[str, str]]]]:
    cfg = config(tmp_path_factory.mktemp("ledger"), "api_key", packs={"enabled": ["ledger"]})

    async def issue() -> dict[str, dict[str, str]]:
        loaded, plugins = prepare(cfg, extra_plugins=PLUGINS)
        hub = ProviderHub(loaded, plugins.registry)
        try:
            manager, made = hub.get(AUTH, "api_key"), {}
            for name, scopes in (("reader", ["ledger:read"]), ("writer", ["ledger:write"])):
                made[name] = {"X-API-Key": (await manager.create_key(name=name, scopes=scopes, tenant="acme")).key}
            return made
        finally:
            await hub.aclose()

    keys = anyio.run(issue)
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _runtime):
        yield base, keys


def test_over_http_the_refusal_names_the_scope_of_that_call(served) -> None:
    base, keys = served
    listed = httpx.get(f"{base}/api/v1/tools", headers=keys["reader"], timeout=30).json()["tools"]
    assert [t["name"] for t in listed] == ["ledger"]
    assert listed[0]["scope_by"] == {"argument": "action", "scopes": {"show": "ledger:read", "close": "ledger:admin"}}
    assert call_rest(base, "ledger", {"action": "show"}, keys["reader"]).json() == {"action": "show"}
    for response in (
        call_rest(base, "ledger", {"action": "post"}, keys["reader"]),
        post_mcp(base, rpc("tools/call", {"name": "ledger", "arguments": {"action": "post"}}), keys["reader"]),
    ):
        assert response.status_code == 403, response.text
        body = response.json()
        error = body["error"]["data"] if "jsonrpc" in body else body["error"]
        assert error["code"] == "AUTHORIZATION_ERROR" and error["details"]["scope"] == "ledger:write"
        assert "jsonrpc" not in body or body["error"]["code"] == JSONRPC_FORBIDDEN
        assert "apikey" in challenges(response)
    assert call_rest(base, "ledger", {"action": "post"}, keys["writer"]).json() == {"action": "post"}
    refused = call_rest(base, "ledger", {"action": "show"}, keys["writer"])
    assert refused.status_code == 403 and refused.json()["error"]["details"]["scope"] == "ledger:read"
