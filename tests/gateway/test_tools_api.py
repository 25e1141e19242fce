"""Mistakes a pack author makes when declaring a tool fail where the tool is declared, naming it."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from pydantic import BaseModel

from gateway.api import Tool

pytestmark = pytest.mark.anyio


class In(BaseModel):
    x: int = 0


class Out(BaseModel):
    y: int = 0


async def handler(args: In, ctx: Any) -> Out:
    return Out(y=args.x)


def blocking(args: In, ctx: Any) -> Out:
    return Out(y=args.x)


class AsyncCallable:
    async def __call__(self, args: In, ctx: Any) -> Out:
        return Out(y=args.x)


def test_a_handler_that_is_not_async_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match=r"tool 'acme_sync': the handler must be an async function"):
        Tool("acme_sync", "Blocks.", In, Out, blocking)


@pytest.mark.parametrize("async_handler", [handler, functools.partial(handler), AsyncCallable()])
def test_async_functions_partials_and_async_callables_are_handlers(async_handler: Any) -> None:
    assert Tool("acme_ok", "Fine.", In, Out, async_handler).name == "acme_ok"


@pytest.mark.parametrize("name", ["", "acme a/b!", "x" * 129, "ünïcode"])
def test_a_local_tool_name_outside_the_mcp_convention_is_refused(name: str) -> None:
    with pytest.raises(TypeError, match="a tool name is 1 to 128 letters"):
        Tool(name, "Named badly.", In, Out, handler)


def test_a_remote_servers_tool_keeps_the_name_it_has() -> None:
    tool = Tool.from_json_schema("odd name!", "Remote.", {"type": "object"}, handler, upstream="far")
    assert tool.name == "odd name!"


async def test_a_pack_offering_one_name_twice_is_told_so(tmp_path: Any) -> None:
    from gateway.api import ConfigError, ToolPack, hookimpl
    from gateway.testing import running_gateway

    class Twice(ToolPack):
        name = "twice"

        def tools(self) -> list[Tool[Any, Any]]:
            return [Tool("twice_a", "One.", In, Out, handler), Tool("twice_a", "Again.", In, Out, handler)]

    class Plugin:
        @hookimpl
        def gateway_register_tool_packs(self, register: Any) -> None:
            register("twice", lambda context: Twice())

    config = {"gateway": {"data_dir": str(tmp_path)}, "packs": {"enabled": ["twice"]}}
    with pytest.raises(ConfigError, match=r"pack 'twice' offers two tools named 'twice_a'$"):
        async with running_gateway(config, extra_plugins=[("twice", Plugin())]):
            pass


def test_optional_scopes_are_listed_but_never_needed_to_see_or_call_the_tool() -> None:
    from gateway.api import Principal

    tool = Tool("t", "T.", In, Out, handler, scope="a:read", optional_scopes=("a:workspace",))
    assert tool.scopes == {"a:read", "a:workspace"}  # what a client may ask for (OAuth scopes_supported)
    assert not tool.visible_to(Principal(subject="s", scopes=frozenset({"a:workspace"})))
    assert tool.visible_to(Principal(subject="s", scopes=frozenset({"a:read"})))
    assert Tool("u", "U.", In, Out, handler, optional_scopes=("a:workspace",)).scope_for({}) is None
