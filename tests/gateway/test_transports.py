"""Real transports: a stdio subprocess, and Streamable HTTP on loopback in both protocol eras."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import httpx
import psycopg
import pytest
from mcp import Client, StdioServerParameters

from gateway.app import running_runtime
from gateway.http import HEALTH_CACHE_SECONDS, build_http_app, url_host
from gateway.testing import http_gateway
from tests.gateway.sample_plugin import sample_config

pytestmark = pytest.mark.anyio


def _hello_config(tmp_path) -> str:
    path = tmp_path / "hello.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\nidentity = "stdio-user"\n'
        '[packs]\nenabled = ["hello"]\n[sanitize]\nlogs = ""\n'
    )
    return str(path)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_subprocess_serves_the_example_pack(tmp_path, mode):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway", "serve", "--config", _hello_config(tmp_path)],
        env=dict(os.environ),
    )
    async with Client(params, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("hello_greet", {"name": "Ada"})
        bad = await client.call_tool("hello_add", {"a": 1})
        motd = await client.read_resource("hello://motd")
    assert names == {"hello_greet", "hello_add"}
    assert result.structured_content == {"greeting": "Hello, Ada!", "caller": "stdio-user"}
    assert json.loads(bad.content[0].text)["error"]["details"]["errors"][0]["field"] == "b"
    assert motd.contents[0].text == "Have a nice day."


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_serves_both_protocol_eras(tmp_path, sample, mode):
    with http_gateway(sample_config(tmp_path), extra_plugins=[("sample", sample)]) as (base, _runtime):
        async with Client(f"{base}/mcp", mode=mode) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("echo_echo", {"text": "over http"})
    assert "echo_echo" in tools
    assert result.structured_content["echoed"] == "over http"


async def test_health_origin_check_and_body_limit(tmp_path, sample):
    config = sample_config(tmp_path, transport={"max_body_bytes": 2000})
    with http_gateway(config, extra_plugins=[("sample", sample)]) as (base, _runtime):
        async with httpx.AsyncClient() as http:
            health = await http.get(f"{base}/health")
            evil = await http.post(
                f"{base}/mcp",
                headers={
                    "Origin": "http://evil.example",
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
                content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            )
            big = await http.post(f"{base}/mcp", content=b"x" * 5000, headers={"Content-Type": "application/json"})
    assert health.status_code == 200 and health.json() == {"status": "ok"}  # public: no version, packs or tools
    assert evil.status_code == 403
    assert big.status_code == 413 and big.json()["error"]["data"]["code"] == "PAYLOAD_TOO_LARGE"


@pytest.mark.postgres
async def test_health_is_503_while_the_store_does_not_answer(tmp_path, sample, postgres_db, monkeypatch):
    monkeypatch.setenv("TEST_GATEWAY_DSN", postgres_db)
    config = sample_config(
        tmp_path,
        providers={"store": "postgres", "rate_limiter": "postgres"},
        pipeline={"interceptors": [{"name": "rate_limit"}]},
        plugins={
            "store": {"postgres": {"dsn": {"env": "TEST_GATEWAY_DSN"}, "min_size": 0, "max_size": 2}},
            "interceptor": {"rate_limit": {"rules": [{"name": "r", "tools": ["echo_echo"], "limit": 9}]}},
        },
    )
    server, database = postgres_db.rsplit("/", 1)
    maintenance = f"{server}/postgres"  # a database may not be closed from a session in it
    with http_gateway(config, extra_plugins=[("sample", sample)]) as (base, runtime):
        runtime.providers.get("store")  # the deployment's store, opened as a pack or limiter would open it
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{base}/health")).status_code == 200
            with psycopg.connect(maintenance, autocommit=True) as admin:  # the database stops taking sessions
                admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [database])
            await anyio.sleep(HEALTH_CACHE_SECONDS)  # an answer stands that long
            try:
                down = await http.get(f"{base}/health", timeout=30)
            finally:
                with psycopg.connect(maintenance, autocommit=True) as admin:
                    admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
            await anyio.sleep(HEALTH_CACHE_SECONDS)
            up = await http.get(f"{base}/health", timeout=30)
    assert down.status_code == 503
    assert down.json()["status"] == "unavailable" and down.json()["unavailable"] == ["store:postgres"]
    assert up.status_code == 200 and up.json()["status"] == "ok"


def test_http_refuses_a_public_bind_without_auth(tmp_path):
    config = _hello_config(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--config", config, "--transport", "http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "not loopback" in proc.stderr and "providers.auth" in proc.stderr


def test_the_listening_url_writes_an_ipv6_host_in_brackets() -> None:
    assert [url_host(h) for h in ("::1", "127.0.0.1", "localhost")] == ["[::1]", "127.0.0.1", "localhost"]


@pytest.mark.postgres
async def test_health_is_200_while_every_pooled_connection_is_busy(tmp_path, sample, postgres_db, monkeypatch):
    """A store busy with long queries is not a down one: the load balancer must not drain every replica at once."""
    monkeypatch.setenv("TEST_GATEWAY_DSN", postgres_db)
    config = sample_config(
        tmp_path,
        providers={"store": "postgres"},
        plugins={"store": {"postgres": {"dsn": {"env": "TEST_GATEWAY_DSN"}, "min_size": 0, "max_size": 2}}},
    )
    async with running_runtime(config, extra_plugins=[("sample", sample)], configure_logs=False) as runtime:
        store = runtime.providers.get("store")
        app = build_http_app(runtime)
        async with (
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http,
            anyio.create_task_group() as group,
        ):
            for _ in range(2):  # every connection the pool may open
                group.start_soon(store.fetch_one, "SELECT pg_sleep(3)")
            await anyio.sleep(0.5)
            busy = await http.get("/health")
    assert busy.status_code == 200, busy.text
