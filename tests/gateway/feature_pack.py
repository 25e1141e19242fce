"""An in-code pack exercising what any pack may use: JSON Schema tools, content passed through, prompts, progress,
cancellation, binary resources, and a catalogue that changes while serving."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
from pydantic import BaseModel, Field

from gateway.api import (
    CallContext,
    PackContext,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptResult,
    Resource,
    ResourceContent,
    Tool,
    ToolPack,
    ToolResult,
    hookimpl,
)

DOUBLE_IN = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0}, "note": {"type": "string"}},
    "required": ["n"],
    "additionalProperties": False,
}
DOUBLE_OUT = {"type": "object", "properties": {"doubled": {"type": "integer"}}, "required": ["doubled"]}
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


class WorkIn(BaseModel):
    steps: int = Field(3, ge=1, le=100)
    seconds: float = Field(0.05, ge=0)


class WorkOut(BaseModel):
    done: int


class FeaturePack(ToolPack):
    name = "feat"

    def __init__(self, context: PackContext) -> None:
        self.context = context
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.extra: list[str] = []

    async def double(self, args: dict[str, Any], ctx: CallContext) -> Mapping[str, Any]:
        return {"doubled": args["n"] * 2} if args["n"] != 13 else {"doubled": "unlucky"}

    async def picture(self, args: dict[str, Any], ctx: CallContext) -> ToolResult:
        return ToolResult(
            content=[{"type": "text", "text": "a pixel"}, {"type": "image", "data": PIXEL, "mimeType": "image/png"}]
        )

    async def work(self, args: WorkIn, ctx: CallContext) -> WorkOut:
        self.started.append(ctx.correlation_id)
        try:
            for step in range(1, args.steps + 1):
                await anyio.sleep(args.seconds)
                await ctx.report_progress(step, args.steps, f"step {step}")
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(ctx.correlation_id)
            raise
        return WorkOut(done=args.steps)

    async def grow(self, args: dict[str, Any], ctx: CallContext) -> Mapping[str, Any]:
        self.extra.append(args["name"])
        await self.context.catalogue_changed()
        return {"tools": len(self.tools())}

    def tools(self) -> list[Tool[Any, Any]]:
        name_schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        tools = [
            Tool.from_json_schema("feat_double", "Double n.", DOUBLE_IN, self.double, output_schema=DOUBLE_OUT),
            Tool.from_json_schema("feat_picture", "A picture.", {"type": "object"}, self.picture),
            Tool("feat_work", "Work in steps, reporting progress.", WorkIn, WorkOut, self.work),
            Tool.from_json_schema("feat_grow", "Add a tool.", name_schema, self.grow),
        ]
        for extra in self.extra:

            async def hello(args: dict[str, Any], ctx: CallContext, extra: str = extra) -> Mapping[str, Any]:
                return {"hello": extra}

            tools.append(Tool.from_json_schema(extra, "Added while serving.", {"type": "object"}, hello))
        return tools

    def prompts(self) -> list[Prompt]:
        async def greet(arguments: Mapping[str, str], ctx: CallContext) -> PromptResult:
            style = arguments.get("style", "plain")
            ask = PromptMessage.text("user", f"Greet {arguments['name']} ({style}).")
            return PromptResult([ask, PromptMessage.text("assistant", "OK")], description="A greeting")

        return [
            Prompt(
                "greet",
                greet,
                "Greet someone.",
                (PromptArgument("name", "Who", required=True), PromptArgument("style", "How")),
                title="Greeting",
            ),
            Prompt("classified", greet, "Scoped.", (PromptArgument("name", required=True),), scope="feat:secret"),
        ]

    def resources(self) -> list[Resource]:
        async def blob(ctx: CallContext) -> list[ResourceContent]:
            return [
                ResourceContent(mime_type="application/octet-stream", blob=b"\x00\x01\x02"),
                ResourceContent(text="second part", mime_type="text/plain", uri="feat://bytes#2"),
            ]

        return [Resource("feat://bytes", "bytes", blob, mime_type="application/octet-stream")]


class FeaturePlugin:
    def __init__(self) -> None:
        self.pack: FeaturePack | None = None

    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        def build(context: PackContext) -> FeaturePack:
            self.pack = FeaturePack(context)
            return self.pack

        register("feat", build)


def feature_config(tmp_path: Any, **tables: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "tester"},
        "packs": {"enabled": ["feat"]},
        "sanitize": {"logs": ""},
        "providers": {"store": "sqlite", "rate_limiter": "memory"},
    }
    for key, value in tables.items():
        base[key] = {**base.get(key, {}), **value}
    return base
