"""A server built with the Python SDK, served over Streamable HTTP in a subprocess, fronted by the gateway: both
protocol eras, progress and cancellation end to end, session expiry, list changes, credentials, scopes, quotas.
Which of its names the gateway serves is in ``test_http_upstream_names.py``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from gateway.testing import http_gateway, running_gateway
from tests.gateway.http_support import key_manager, mcp_client, sdk_refusal
from tests.plugins.remote.support import (
    EVERYTHING,
    HttpUpstream,
    eventually,
    http_upstream,
    py_http_server,
    remote_config,
    write_toml,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _cancellations(upstream: HttpUpstream) -> list[str]:
    return sorted(p.name for p in upstream.state.glob("cancelled-*"))


@asynccontextmanager
async def _downstream(transport: str, config: dict[str, Any], tmp_path: Path) -> AsyncIterator[Client]:
    """The official client talking to a gateway over ``transport``: a ``gateway serve`` subprocess on stdio, or
    HTTP on loopback."""
    if transport == "stdio":
        path = write_toml(tmp_path / "gateway.toml", config)
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "gateway", "serve", "--config", str(path)], env=dict(os.environ)
        )
        async with Client(params) as client:
            yield client
    else:
        with http_gateway(config) as (base, _runtime):
            async with Client(f"{base}/mcp") as client:
                yield client


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_python_server_over_http(tmp_path: Path, py_http: HttpUpstream, protocol: str, transport: str):
    """Both protocol eras upstream (``auto`` negotiates 2026-07-28 with this server), stdio and HTTP downstream."""
    config = remote_config(tmp_path, [py_http_server(py_http, protocol=protocol)])
    async with _downstream(transport, config, tmp_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        added = await client.call_tool("py_add", {"a": 2, "b": 40})
        greeting = await client.read_resource("py://greeting")
        item = await client.read_resource("py://items/42")
        prompt = await client.get_prompt("py_review", {"code": "x = 1"})
        missing = None
        try:
            await client.get_prompt("py_review", {})
        except Exception as exc:  # the host refuses before the server is asked
            missing = exc

        seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        slow = await client.call_tool("py_slow", {"seconds": 0.3, "steps": 3}, progress_callback=on_progress)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "py_slow", {"seconds": 30, "steps": 3})
            assert await eventually(lambda: len(list(py_http.state.glob("started-*"))) == 2)  # after the first
            tg.cancel_scope.cancel()
        cancelled_upstream = await eventually(lambda: len(_cancellations(py_http)) == 1)
        after = await client.call_tool("py_echo", {"text": "after"})

    assert tools["py_add"].output_schema["properties"]["total"]["type"] == "integer"
    assert added.structured_content == {"total": 42}
    assert greeting.contents[0].text == "hello from python"
    assert json.loads(item.contents[0].text) == {"item": "42"}
    assert "Please review this python code:\nx = 1" in prompt.messages[0].content.text
    assert missing is not None and "code" in str(missing)
    assert seen == [(1, "step 1"), (2, "step 2"), (3, "step 3")] and slow.structured_content
    assert cancelled_upstream, "the cancellation did not reach the upstream server"
    assert after.structured_content == {"result": "after"}


@pytest.mark.parametrize(("protocol", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_the_configured_protocol_era_is_used(tmp_path: Path, py_http: HttpUpstream, protocol: str, era: str):
    async with running_gateway(remote_config(tmp_path, [py_http_server(py_http, protocol=protocol)])) as client:
        upstream = client.runtime.packs["remote"].upstreams[0]
        assert upstream.session.protocol_version == era
        assert (await client.call_tool("py_echo", {"text": era})).structured_content == {"result": era}


async def test_session_expiry_reinitialises(tmp_path: Path, py_http: HttpUpstream):
    """The server restarts and forgets the session (404 on its id): the gateway opens a new one and the call
    succeeds, without the caller seeing anything."""
    config = remote_config(tmp_path, [py_http_server(py_http, protocol="legacy")])
    async with running_gateway(config) as client:
        upstream = client.runtime.packs["remote"].upstreams[0]
        first = await client.call_tool("py_echo", {"text": "one"})
        old = upstream.session
        py_http.restart()
        second = await client.call_tool("py_echo", {"text": "two"})
        assert upstream.session is not old and upstream.state == "up"
    assert first.structured_content == {"result": "one"}
    assert second.structured_content == {"result": "two"} and not second.is_error


async def test_session_expiry_reinitialises_with_the_typescript_server(tmp_path: Path, node: str):
    """The TypeScript reference server answers a session it no longer knows with 400, not the protocol's 404."""
    with http_upstream(tmp_path, [node, str(EVERYTHING), "streamableHttp"]) as everything:
        config = remote_config(tmp_path, [{"name": "ev", "url": everything.url, "prefix": "ev_"}])
        async with running_gateway(config) as client:
            first = await client.call_tool("ev_echo", {"message": "one"})
            everything.restart()
            second = await client.call_tool("ev_echo", {"message": "two"})
            starts = client.runtime.packs["remote"].upstreams[0].starts
    assert not first.is_error and "one" in first.content[0].text
    assert not second.is_error and "two" in second.content[0].text and starts == 2


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_list_changes_travel_to_the_clients(tmp_path: Path, py_http: HttpUpstream, mode: str):
    """The server adds a tool and says so; the gateway re-reads it and tells its own clients."""
    config = remote_config(tmp_path, [py_http_server(py_http)])
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    with http_gateway(config) as (base, _runtime):
        async with Client(f"{base}/mcp", mode=mode, message_handler=on_message) as client:
            before = {t.name for t in (await client.list_tools()).tools}
            if mode == "legacy":
                await client.call_tool("py_grow", {"name": "extra"})
                with anyio.fail_after(20):
                    await changed.wait()
            else:
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("py_grow", {"name": "extra"})
                    with anyio.fail_after(20):
                        await subscription.__anext__()
            after = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
            extra = await client.call_tool("py_extra", {})
    assert "py_extra" not in before and "py_extra" in after
    assert extra.structured_content == {"result": "I am extra"}


async def test_no_caller_credential_reaches_the_upstream(tmp_path: Path, py_http: HttpUpstream, monkeypatch):
    """The caller's API key, bearer token and cookies stay at the gateway; the upstream sees only the headers
    configured for it, the secret one read from the environment."""
    monkeypatch.setenv("PY_UPSTREAM_TOKEN", "upstream-secret-1")
    server = py_http_server(
        py_http, headers={"Authorization": {"env": "PY_UPSTREAM_TOKEN"}, "X-Tenant": "acme"}, scope="remote:py"
    )
    config = remote_config(tmp_path, [server], providers={"auth": "api_key"})
    async with key_manager(config) as manager:
        allowed = (await manager.create_key(name="ok", scopes=["remote:py"])).key
        other = (await manager.create_key(name="no", scopes=["other"])).key
    with http_gateway(config) as (base, _runtime):
        caller = {"X-API-Key": allowed, "Cookie": "session=caller-cookie", "X-Forwarded-Authorization": "no"}
        async with mcp_client(f"{base}/mcp", caller) as client:
            recorded = await client.call_tool("py_whoami", {})
        async with mcp_client(f"{base}/mcp", {"X-API-Key": other}) as client:
            hidden = {t.name for t in (await client.list_tools()).tools}
        refused = await sdk_refusal(f"{base}/mcp", {"X-API-Key": other}, tool="py_echo")
        rest = httpx.post(f"{base}/api/v1/tools/py_whoami", json={}, headers={"X-API-Key": allowed}, timeout=30)
    files = sorted(py_http.state.glob("headers-*.json"))
    seen = [json.loads(path.read_text()) for path in files]
    assert recorded.structured_content == {"result": "recorded"} and rest.status_code == 200
    assert len(seen) == 2
    for headers in seen:
        assert headers["authorization"] == "upstream-secret-1"
        assert headers["x-tenant"] == "acme"
        assert "x-api-key" not in headers and "cookie" not in headers and "x-forwarded-authorization" not in headers
        assert allowed not in json.dumps(headers)
    assert not any(name.startswith("py_") for name in hidden)
    assert "remote:py" in refused.message


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_arguments_the_tool_routes_by_travel_as_headers(tmp_path: Path, py_http: HttpUpstream, protocol: str):
    """A 2026-07-28 tool whose input schema marks an argument ``x-mcp-header`` gets it as an ``Mcp-Param-*``
    header too (its server checks that the two agree); the handshake era has no such headers."""
    config = remote_config(tmp_path, [py_http_server(py_http, protocol=protocol)])
    with http_gateway(config) as (base, _runtime):
        async with Client(f"{base}/mcp") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            plain = await client.call_tool("py_regional", {"region": "eu-west"})
            encoded = await client.call_tool("py_regional", {"region": "zürich"})
    assert tools["py_regional"].input_schema["properties"]["region"]["x-mcp-header"] == "Region"
    if protocol == "auto":
        assert plain.structured_content == {"result": "eu-west routed by eu-west"}
        assert encoded.structured_content == {"result": "zürich routed by =?base64?esO8cmljaA==?="}
    else:
        assert plain.structured_content == {"result": "eu-west routed by None"}
        assert not encoded.is_error


async def test_rate_limit_rules_name_remote_tools(tmp_path: Path, py_http: HttpUpstream):
    rule = {"name": "py", "tools": ["py_echo"], "kind": "daily", "limit": 2}
    quota = {
        "pipeline": {"interceptors": [{"name": "rate_limit"}]},
        "plugins": {"interceptor": {"rate_limit": {"rules": [rule]}}},
    }
    config = remote_config(tmp_path, [py_http_server(py_http)], **quota)
    async with running_gateway(config) as client:
        answers = [await client.call_tool("py_echo", {"text": str(i)}) for i in range(3)]
        other = await client.call_tool("py_add", {"a": 1, "b": 1})
    assert [a.is_error for a in answers] == [False, False, True]
    assert json.loads(answers[2].content[0].text)["error"]["code"] == "rate_limit_exceeded"
    assert not other.is_error


async def test_a_server_killed_mid_call_fails_the_call_and_comes_back(tmp_path: Path, py_http: HttpUpstream):
    config = remote_config(tmp_path, [py_http_server(py_http, restart_backoff_seconds=0.2)])
    async with running_gateway(config) as client:
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def long_call() -> None:
                results.append(await client.call_tool("py_slow", {"seconds": 20, "steps": 2}))

            tg.start_soon(long_call)
            await anyio.sleep(0.5)
            py_http.kill()
        failed = results[0]
        py_http.start()
        after = await client.call_tool("py_echo", {"text": "back"})
    error = json.loads(failed.content[0].text)["error"]
    assert failed.is_error and error["code"] == "upstream_unavailable"
    assert error["details"]["upstream"] == "py" and "'py'" in error["message"]
    assert after.structured_content == {"result": "back"}


async def test_metrics_count_remote_calls_per_upstream(tmp_path: Path, py_http: HttpUpstream):
    config = remote_config(tmp_path, [py_http_server(py_http)], providers={"auth": "api_key"})
    async with key_manager(config) as manager:
        key = (await manager.create_key(name="k", scopes=[])).key
    with http_gateway(config) as (base, _runtime):
        async with mcp_client(f"{base}/mcp", {"X-API-Key": key}) as client:
            await client.call_tool("py_echo", {"text": "secret-argument-value"})
            await client.call_tool("py_add", {"a": "not a number", "b": 1})
            refused = await client.call_tool("py_pause", {"ms": -1})
        anonymous = httpx.get(f"{base}/metrics", timeout=30)
        scraped = httpx.get(f"{base}/metrics", headers={"X-API-Key": key}, timeout=30)
    text = scraped.text
    labels = 'pack="remote",tool="py_echo",upstream="py"'
    assert anonymous.status_code == 401
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    assert f"gateway_tool_calls_total{{{labels}}} 1.0" in text
    assert 'gateway_tool_errors_total{code="validation_error",pack="remote",tool="py_add",upstream="py"} 1.0' in text
    assert refused.is_error  # the server's own error result counts as an error of its tool
    assert 'gateway_tool_errors_total{code="tool_error",pack="remote",tool="py_pause",upstream="py"} 1.0' in text
    assert f"gateway_tool_call_duration_seconds_count{{{labels}}} 1.0" in text
    assert 'gateway_upstream_up{pack="remote",upstream="py"} 1.0' in text
    assert "secret-argument-value" not in text and key not in text


async def test_a_server_down_at_start_joins_when_it_comes_up(tmp_path: Path, py_http: HttpUpstream):
    """The gateway starts without it; once it answers, its tools appear and connected clients are told."""
    py_http.kill()
    server = py_http_server(py_http, restart_backoff_seconds=0.2, max_backoff_seconds=0.5, connect_timeout_seconds=2)
    announced = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            announced.set()

    with http_gateway(remote_config(tmp_path, [server])) as (base, runtime):
        async with Client(f"{base}/mcp", mode="legacy", message_handler=on_message) as client:
            before = {t.name for t in (await client.list_tools()).tools}
            state_before = runtime.packs["remote"].upstreams[0].state
            py_http.start()
            with anyio.fail_after(30):
                await announced.wait()
            after = {t.name for t in (await client.list_tools()).tools}
            echo = await client.call_tool("py_echo", {"text": "joined"})
    assert not before and state_before in ("down", "starting")
    assert "py_echo" in after and echo.structured_content == {"result": "joined"}


async def test_a_header_secret_is_never_shown_even_when_refused(tmp_path: Path, py_http: HttpUpstream, monkeypatch):
    """A token read from a file with its line ending is refused by HTTP; the error names the header, never the value
    (an HTTP library quotes the refused value, and upstream errors reach callers, logs and ``gateway plugins``)."""
    config = remote_config(tmp_path, [py_http_server(py_http, headers={"X-Upstream-Key": {"env": "PY_UPSTREAM_KEY"}})])
    monkeypatch.setenv("PY_UPSTREAM_KEY", "Zq81hT0pLx-good")
    async with running_gateway(config) as client:  # the catalogue is kept: its tools are served at the next start
        assert not (await client.call_tool("py_echo", {"text": "x"})).is_error
    monkeypatch.setenv("PY_UPSTREAM_KEY", "Zq81hT0pLx\r\nX-Injected: 1")
    async with running_gateway(config) as client:
        failed = await client.call_tool("py_echo", {"text": "x"})
        last_error = client.runtime.packs["remote"].upstreams[0].last_error
    error = json.loads(failed.content[0].text)["error"]
    assert failed.is_error and error["code"] == "upstream_unavailable"
    assert "headers.X-Upstream-Key" in json.dumps(error) and "headers.X-Upstream-Key" in last_error
    assert "Zq81hT0pLx" not in json.dumps(error) and "Zq81hT0pLx" not in last_error


async def test_tool_annotations_the_server_left_unstated_stay_unstated(tmp_path: Path, py_http: HttpUpstream):
    """A client applies the protocol's defaults to a missing hint (destructive, open world): the gateway must not
    answer for the server that the tool is harmless."""
    async with Client(py_http.url) as direct:
        theirs = {t.name: t.annotations for t in (await direct.list_tools()).tools}
    async with running_gateway(remote_config(tmp_path, [py_http_server(py_http)])) as client:
        mine = {t.name: t.annotations for t in (await client.list_tools()).tools}
    hints = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
    assert theirs["echo"] is None
    assert all(getattr(mine["py_echo"], hint, None) is None for hint in hints), mine["py_echo"]


async def test_resource_templates_with_rfc_6570_operators_are_read_through(tmp_path: Path, py_http: HttpUpstream):
    """``{?q,limit}`` and ``{/path*}``: the URI as asked goes upstream unchanged."""
    async with running_gateway(remote_config(tmp_path, [py_http_server(py_http)])) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        search = await client.read_resource("py://search?limit=3&q=cats")
        path = await client.read_resource("py://files/a/b.txt")
        item = await client.read_resource("py://items/7")
        with pytest.raises(MCPError):
            await client.read_resource("py://elsewhere/x")
    assert {"py://search{?q,limit}", "py://files{/path*}", "py://items/{item_id}"} <= templates
    assert search.contents[0].text == "searched 'cats', 3 at most"
    assert path.contents[0].text == "file a/b.txt"
    assert "7" in item.contents[0].text
