"""An in-code plugin for the core tests: an echo pack, a clashing pack, and configurable interceptors."""

from __future__ import annotations

import json
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import (
    CallContext,
    ConfigError,
    Interceptor,
    NotFound,
    Resource,
    ResourceContent,
    ResourceTemplate,
    Tool,
    ToolAnnotations,
    ToolCall,
    ToolError,
    ToolPack,
    hookimpl,
)


class EchoIn(BaseModel):
    text: str = Field(description="What to echo")
    times: int = Field(1, ge=1, le=5)


class EchoOut(BaseModel):
    echoed: str
    caller: str


class FailIn(BaseModel):
    mode: str = Field(description="'tool_error', 'crash', 'bad_output', 'misconfigured', 'missing' or 'in_task_group'")


class EchoPackConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "echo"


async def echo(args: EchoIn, ctx: CallContext) -> EchoOut:
    return EchoOut(echoed=" ".join([args.text] * args.times), caller=ctx.principal.subject)


async def fail(args: FailIn, ctx: CallContext) -> Any:
    if args.mode == "tool_error":
        raise ToolError("a deliberate failure", code="insufficient_data", details={"why": "test"})
    if args.mode == "missing":
        raise NotFound("no such thing", details={"id": "x"})
    if args.mode == "bad_output":
        return {"echoed": 42}
    if args.mode == "misconfigured":  # found only when the tool runs (a stored index of another embedder, say)
        raise ConfigError("the vector collection 'x' holds another embedder's vectors: run gateway reindex")
    if args.mode == "in_task_group":  # the ToolError reaches the runtime inside an exception group

        async def refuse() -> None:
            raise NotFound("not in the group either", details={"id": "y"})

        async with anyio.create_task_group() as group:
            group.start_soon(refuse)
            await anyio.sleep(5)
    raise RuntimeError("secret internal detail at /srv/app/internal.py")


class EchoPack(ToolPack):
    name = "echo"
    instructions = "Use echo_echo to echo text."

    def __init__(self, config: EchoPackConfig) -> None:
        self.config = config
        self.started = False

    async def start(self) -> None:
        self.started = True

    def tools(self) -> list[Tool[Any, Any]]:
        return [
            Tool("echo_echo", "Echo text back.", EchoIn, EchoOut, echo, annotations=ToolAnnotations(read_only=True)),
            Tool("echo_fail", "Fail in a chosen way.", FailIn, EchoOut, fail),
            Tool("echo_admin", "Needs a scope.", EchoIn, EchoOut, echo, scope="echo:admin"),
        ]

    def resources(self) -> list[Resource]:
        async def read(ctx: CallContext) -> ResourceContent:
            return ResourceContent(text=json.dumps({"greeting": self.config.greeting}))

        return [Resource("echo://greeting", "greeting", read)]

    def resource_templates(self) -> list[ResourceTemplate]:
        async def read(params: Any, ctx: CallContext) -> ResourceContent:
            return ResourceContent(text=f"item {params['item_id']}", mime_type="text/plain")

        return [ResourceTemplate("echo://items/{item_id}", "item", read)]


class ClashPack(ToolPack):
    name = "clash"

    def tools(self) -> list[Tool[Any, Any]]:
        return [Tool("echo_echo", "Same name as the echo pack.", EchoIn, EchoOut, echo)]


class CustomErrorPack(ToolPack):
    """A pack that renders its own error body (as the Sequential Thinking spec requires)."""

    name = "custom"

    def tools(self) -> list[Tool[Any, Any]]:
        return [Tool("custom_echo", "Echo with a custom error shape.", EchoIn, EchoOut, echo)]

    def format_error(self, error: ToolError) -> dict[str, Any]:
        return {"error": error.message, "status": "failed", "details": error.details}


class RecorderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = "r"
    behaviour: str = "pass"  # pass | refuse | crash | crash_after | observe


class Recorder(Interceptor):
    """Records the order in which calls pass; can refuse or crash on demand."""

    def __init__(self, config: RecorderConfig, trace: list[str]) -> None:
        self.config = config
        self.trace = trace

    async def __call__(self, call: ToolCall, call_next: Any) -> Any:
        self.trace.append(f"{self.config.label}:before")
        if self.config.behaviour == "refuse":
            raise ToolError("refused by policy", code="rate_limit_exceeded")
        if self.config.behaviour == "crash":
            raise RuntimeError("interceptor bug")
        try:
            result = await call_next(call)
        except BaseException as exc:
            if self.config.behaviour == "observe":
                self.trace.append(f"{self.config.label}:saw {type(exc).__name__}")
            raise
        self.trace.append(f"{self.config.label}:after")
        if self.config.behaviour == "crash_after":
            raise RuntimeError("interceptor bug after the call")
        return result


class SamplePlugin:
    """Interceptors append to ``self.trace`` so a test can see the order calls passed in."""

    def __init__(self) -> None:
        self.trace: list[str] = []

    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("echo", lambda ctx: EchoPack(ctx.config), config_model=EchoPackConfig)
        register("clash", lambda ctx: ClashPack())
        register("custom", lambda ctx: CustomErrorPack())

    @hookimpl
    def gateway_register_interceptors(self, register: Any) -> None:
        for label in ("first", "second"):
            register(label, lambda ctx: Recorder(ctx.config, self.trace), config_model=RecorderConfig)


def sample_config(tmp_path: Any, **tables: Any) -> dict[str, Any]:
    """A minimal config serving the echo pack, with data under ``tmp_path``."""
    config: dict[str, Any] = {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "tester"},
        "packs": {"enabled": ["echo"]},
        "sanitize": {"logs": ""},
    }
    for key, value in tables.items():
        config[key] = value
    return config
