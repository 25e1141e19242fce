"""The official reference servers (``server-everything``, ``server-filesystem``, from npm, over stdio) through the
gateway, reached by the official SDK client over stdio and over HTTP in both protocol eras: list and call tools,
read resources, get prompts, receive progress, cancel a long call."""

from __future__ import annotations

import base64
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from gateway.testing import http_gateway, running_gateway
from tests.plugins.remote.support import (
    EVERYTHING,
    everything_server,
    filesystem_server,
    remote_config,
    write_toml,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _config(tmp_path: Path, node: str) -> dict[str, Any]:
    root = tmp_path / "files"
    root.mkdir(exist_ok=True)
    return remote_config(tmp_path, [everything_server(node), filesystem_server(node, root)])


@asynccontextmanager
async def _client(transport: str, mode: str, tmp_path: Path, node: str) -> AsyncIterator[Client]:
    config = _config(tmp_path, node)
    if transport == "stdio":
        path = write_toml(tmp_path / "gateway.toml", config)
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "gateway", "serve", "--config", str(path)], env=dict(os.environ)
        )
        async with Client(params, mode=mode) as client:
            yield client
    else:
        with http_gateway(config) as (base, _runtime):
            async with Client(f"{base}/mcp", mode=mode) as client:
                yield client


@pytest.mark.parametrize(
    ("transport", "mode"), [("stdio", "legacy"), ("stdio", "auto"), ("http", "legacy"), ("http", "auto")]
)
async def test_reference_servers_through_the_gateway(tmp_path: Path, node: str, transport: str, mode: str) -> None:
    async with _client(transport, mode, tmp_path, node) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        total = await client.call_tool("ev_get-sum", {"a": 2, "b": 3})
        weather = await client.call_tool("ev_get-structured-content", {"location": "Chicago"})
        image = await client.call_tool("ev_get-tiny-image", {})
        written = await client.call_tool("fs_write_file", {"path": str(tmp_path / "files" / "a.txt"), "content": "hi"})
        read_back = await client.call_tool("fs_read_text_file", {"path": str(tmp_path / "files" / "a.txt")})
        refused = await client.call_tool("fs_read_text_file", {"path": "/etc/passwd"})
        static = await client.read_resource("demo://resource/static/document/architecture.md")
        dynamic = await client.read_resource("demo://resource/dynamic/text/2")
        blob = await client.read_resource("demo://resource/dynamic/blob/2")
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        prompt = await client.get_prompt("ev_args-prompt", {"city": "Oslo"})

        steps: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)

        long = await client.call_tool(
            "ev_trigger-long-running-operation", {"duration": 0.8, "steps": 4}, progress_callback=on_progress
        )

        started = time.monotonic()
        with anyio.move_on_after(1.0) as cancelled:
            await client.call_tool("ev_trigger-long-running-operation", {"duration": 60, "steps": 60})
        waited = time.monotonic() - started
        after_cancel = await client.call_tool("ev_echo", {"message": "still here"})

    assert {"ev_echo", "ev_get-sum", "ev_trigger-long-running-operation", "fs_read_text_file", "fs_write_file"} <= set(
        tools
    )
    assert total.content[0].text == "The sum of 2 and 3 is 5." and not total.is_error
    assert set(weather.structured_content) == {"temperature", "conditions", "humidity"}
    pictures = [block for block in image.content if block.type == "image"]
    assert len(pictures) == 1 and pictures[0].mime_type == "image/png"
    assert base64.b64decode(pictures[0].data)[:4] == b"\x89PNG"
    assert not written.is_error and read_back.content[0].text == "hi"
    assert refused.is_error and "denied" in refused.content[0].text.lower()
    assert static.contents[0].text.startswith("# Everything Server")
    assert dynamic.contents[0].uri == "demo://resource/dynamic/text/2" and "Resource 2" in dynamic.contents[0].text
    assert blob.contents[0].blob  # binary content passes through as base64
    assert {"ev_simple-prompt", "ev_args-prompt"} <= prompts
    assert prompt.messages[0].content.text == "What's weather in Oslo?"
    assert steps == [1, 2, 3, 4] and "Steps: 4" in long.content[0].text
    assert cancelled.cancelled_caught and waited < 10
    assert after_cancel.content[0].text == "Echo: still here"


async def test_schemas_pass_through_unchanged(tmp_path: Path, node: str) -> None:
    """Every tool the gateway serves has exactly the upstream's input and output schemas and description."""
    async with Client(StdioServerParameters(command=node, args=[str(EVERYTHING), "stdio"])) as direct:
        upstream = {t.name: t for t in (await direct.list_tools()).tools}
    async with running_gateway(_config(tmp_path, node)) as client:
        served = {t.name: t for t in (await client.list_tools()).tools}
    assert upstream
    tasks_only = {
        name for name, tool in upstream.items() if tool.execution and tool.execution.task_support == "required"
    }
    assert tasks_only and not {f"ev_{name}" for name in tasks_only} & set(served)  # the gateway makes no task calls
    for name, tool in upstream.items():
        if name in tasks_only:
            continue
        mine = served[f"ev_{name}"]
        assert mine.input_schema == tool.input_schema, name
        assert mine.output_schema == tool.output_schema, name
        assert mine.description == tool.description, name
        hints = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
        theirs = {hint: getattr(tool.annotations, hint, None) for hint in hints}
        assert {hint: getattr(mine.annotations, hint, None) for hint in hints} == theirs, name  # unstated stays so


async def test_arguments_are_checked_against_the_remote_schema(tmp_path: Path, node: str) -> None:
    async with running_gateway(_config(tmp_path, node)) as client:
        bad = await client.call_tool("ev_get-sum", {"a": "two"})
    assert bad.is_error
    body = bad.structured_content or {}
    text = bad.content[0].text
    assert "validation_error" in text and '"field": "a"' in text and '"field": "b"' in text
    assert body == {}  # errors carry no structured content
