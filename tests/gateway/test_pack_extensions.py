"""Host features packs use beyond tools: a tool's own text block, listable resource templates with ``{+path}``,
and several configured instances of one provider kind (``PackContext.instantiate``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import (
    CallContext,
    NotFound,
    PackContext,
    ProviderContext,
    ResourceContent,
    ResourceEntry,
    ResourcePage,
    ResourceTemplate,
    Tool,
    ToolPack,
    ValidationFailed,
    hookimpl,
)
from gateway.testing import running_gateway

pytestmark = pytest.mark.anyio

PAGES = {None: (["a", "b"], "2"), "2": (["c"], None)}


class Ask(BaseModel):
    q: str


class Answer(BaseModel):
    answer: str


class WidgetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(ge=1)


class Widget:
    def __init__(self, context: ProviderContext) -> None:
        assert isinstance(context.config, WidgetConfig)
        self.size = context.config.size


class ExtPack(ToolPack):
    name = "ext"

    def __init__(self, context: PackContext) -> None:
        self.context = context

    def tools(self) -> Sequence[Tool[Any, Any]]:
        async def ask(args: Ask, ctx: CallContext) -> Answer:
            return Answer(answer=args.q.upper())

        async def build(args: Ask, ctx: CallContext) -> Answer:
            widgets = [self.context.instantiate("widget", "square", {"size": int(n)}) for n in args.q.split(",")]
            return Answer(answer=",".join(str(w.size) for w in widgets))

        return [
            Tool("ext_ask", "Ask.", Ask, Answer, ask, text=lambda out: f"The answer is {out.answer}."),
            Tool("ext_build", "Build widgets.", Ask, Answer, build),
        ]

    def resource_templates(self) -> Sequence[ResourceTemplate]:
        async def read(variables: Mapping[str, str], ctx: CallContext) -> ResourceContent:
            return ResourceContent(text=variables["path"], mime_type="text/plain")

        async def listing(cursor: str | None, ctx: CallContext) -> ResourcePage:
            names, following = PAGES[cursor]
            return ResourcePage([ResourceEntry(f"ext://files/dir/{n}.txt", n) for n in names], following)

        return [ResourceTemplate("ext://files/{+path}", "Files", read, list=listing)]


class ExtPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("ext", ExtPack)

    @hookimpl
    def gateway_register_providers(self, register: Any) -> None:
        register("widget", "square", Widget, config_model=WidgetConfig)


def _config(tmp_path: Path) -> dict[str, Any]:
    return {"gateway": {"data_dir": str(tmp_path / "data")}, "packs": {"enabled": ["ext"]}, "sanitize": {"logs": ""}}


async def test_a_tool_renders_its_own_text_block(tmp_path: Path) -> None:
    async with running_gateway(_config(tmp_path), extra_plugins=[("ext", ExtPlugin())]) as client:
        result = await client.call_tool("ext_ask", {"q": "hi"})
        plain = await client.call_tool("ext_build", {"q": "1"})
    assert result.structured_content == {"answer": "HI"}
    assert result.content[0].text == "The answer is HI."
    assert json.loads(plain.content[0].text) == {"answer": "1"}  # without a renderer: the JSON dump


async def test_template_members_are_listed_page_by_page_and_read_across_slashes(tmp_path: Path) -> None:
    async with running_gateway(_config(tmp_path), extra_plugins=[("ext", ExtPlugin())]) as client:
        first = await client.list_resources()
        second = await client.list_resources(cursor=first.next_cursor)
        read = await client.read_resource("ext://files/dir/sub/c.txt")
    assert [r.name for r in first.resources] == ["a", "b"] and first.next_cursor
    assert [r.name for r in second.resources] == ["c"] and second.next_cursor is None
    assert read.contents[0].text == "dir/sub/c.txt"


async def test_several_configured_instances_of_one_provider_kind(tmp_path: Path) -> None:
    async with running_gateway(_config(tmp_path), extra_plugins=[("ext", ExtPlugin())]) as client:
        built = await client.call_tool("ext_build", {"q": "2,3"})
        assert built.structured_content == {"answer": "2,3"}
        refused = await client.call_tool("ext_build", {"q": "0"})
        error = json.loads(refused.content[0].text)["error"]
        assert error["code"] == "validation_error" and error["details"]["errors"][0]["field"] == "size"
        instantiate = client.runtime.packs["ext"].context.instantiate
        with pytest.raises(NotFound) as caught:
            instantiate("widget", "circle", {})
        assert "installed: square" in caught.value.message
        with pytest.raises(ValidationFailed):
            instantiate("widget", "square", {"size": 1, "colour": "red"})
