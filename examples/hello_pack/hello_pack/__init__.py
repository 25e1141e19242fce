"""A complete third-party tool pack: two tools and one resource, found through the ``mcp_gateway`` entry point."""

from __future__ import annotations

from pydantic import BaseModel, Field

from gateway.api import CallContext, Resource, ResourceContent, Tool, ToolAnnotations, ToolPack, hookimpl


class GreetIn(BaseModel):
    name: str = Field(min_length=1, max_length=100, description="Who to greet")


class GreetOut(BaseModel):
    greeting: str
    caller: str


class AddIn(BaseModel):
    a: float
    b: float


class AddOut(BaseModel):
    sum: float


async def greet(args: GreetIn, ctx: CallContext) -> GreetOut:
    return GreetOut(greeting=f"Hello, {args.name}!", caller=ctx.principal.subject)


async def add(args: AddIn, ctx: CallContext) -> AddOut:
    return AddOut(sum=args.a + args.b)


async def motd(ctx: CallContext) -> ResourceContent:
    return ResourceContent(text="Have a nice day.", mime_type="text/plain")


class HelloPack(ToolPack):
    name = "hello"
    instructions = "Call hello_greet to greet someone."

    def tools(self) -> list[Tool]:
        safe = ToolAnnotations(read_only=True, idempotent=True)
        return [
            Tool("hello_greet", "Greet someone by name.", GreetIn, GreetOut, greet, annotations=safe),
            Tool("hello_add", "Add two numbers.", AddIn, AddOut, add, annotations=safe),
        ]

    def resources(self) -> list[Resource]:
        return [Resource("hello://motd", "motd", motd, description="Message of the day", mime_type="text/plain")]


@hookimpl
def gateway_register_tool_packs(register) -> None:
    register("hello", lambda ctx: HelloPack(), description="Example pack")
