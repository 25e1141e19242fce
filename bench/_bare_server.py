"""A bare lowlevel SDK server with the same trivial tool as the example pack (the benchmark's reference).

Run as ``python bench/_bare_server.py stdio`` or ``python bench/_bare_server.py http PORT``.
"""

from __future__ import annotations

import json
import sys

import anyio
import mcp.types as mt
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, Field, ValidationError


class GreetIn(BaseModel):
    name: str = Field(min_length=1, max_length=100)


class GreetOut(BaseModel):
    greeting: str
    caller: str


TOOL = mt.Tool(
    name="hello_greet",
    description="Greet someone by name.",
    input_schema=GreetIn.model_json_schema(),
    output_schema=GreetOut.model_json_schema(),
)


async def list_tools(ctx, params) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=[TOOL])


async def call_tool(ctx, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    try:
        args = GreetIn.model_validate(params.arguments or {})
    except ValidationError as exc:
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=str(exc))], is_error=True)
    out = GreetOut(greeting=f"Hello, {args.name}!", caller="bare").model_dump()
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=json.dumps(out))], structured_content=out)


def build() -> Server:
    return Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    if sys.argv[1] == "stdio":
        anyio.run(serve_stdio)
    else:
        app = build().streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")


if __name__ == "__main__":
    main()
