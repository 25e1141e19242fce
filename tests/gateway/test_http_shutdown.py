"""SIGTERM stops ``gateway serve --transport http`` promptly and cleanly even while a handshake-era client holds its
event stream open: the stream ends at the stop (the grace is for requests in flight). A request still running when
the grace ends is cut and answered with a 503 saying so, in the shape its path speaks."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from structlog.testing import capture_logs

from gateway.testing import http_gateway
from tests.gateway.feature_pack import FeaturePlugin, feature_config
from tests.holding import PATIENCE
from tests.plugins.remote.support import free_port

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}
VERSION = "2026-07-28"


def _serve(tmp_path: Path, port: int) -> subprocess.Popen[bytes]:
    config = tmp_path / "http.toml"
    config.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[transport]\nkind = "http"\nport = {port}\n'
        '[packs]\nenabled = ["hello"]\n[sanitize]\nlogs = ""\n'
    )
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(config)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_sigterm_stops_the_server_while_an_event_stream_is_open(tmp_path: Path) -> None:
    port = free_port()
    server = _serve(tmp_path, port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with httpx.Client(timeout=30) as client:
            for _ in range(300):
                try:
                    opened = client.post(
                        url, json=INITIALIZE, headers={"Accept": "application/json, text/event-stream"}
                    )
                    break
                except httpx.ConnectError:
                    time.sleep(0.1)
            headers = {
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": opened.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-06-18",
            }
            client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            streaming = threading.Event()

            def listen() -> None:
                try:
                    with client.stream("GET", url, headers=headers) as stream:
                        streaming.set()
                        for _ in stream.iter_raw():
                            pass
                except httpx.HTTPError:
                    pass

            threading.Thread(target=listen, daemon=True).start()
            assert streaming.wait(10)
            sent = time.monotonic()
            server.send_signal(signal.SIGTERM)
            _, stderr = server.communicate(timeout=30)
            assert time.monotonic() - sent < 5  # not the client's hang-up, nor the 10 s grace for calls in flight
            assert server.returncode == -signal.SIGTERM  # it ends by the signal, after stopping cleanly
            log = stderr.decode()
            assert '"event":"stopped"' in log and '"level":"error"' not in log, log
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


# -- requests still running when the grace ends are answered, not dropped -----------------------------------------

WORK = {"steps": 1, "seconds": 30}
STOPPING = "the gateway is stopping"


def _call_while_stopping(tmp_path: Path, send: Callable[[httpx.Client, str], httpx.Response]) -> httpx.Response:
    """``send`` a request for a 30 s call, stop the gateway (grace 0.5 s) while it runs; the response it got."""
    plugin = FeaturePlugin()
    config = feature_config(tmp_path, transport={"shutdown_grace_seconds": 0.5})
    answers: list[httpx.Response] = []
    with http_gateway(config, extra_plugins=[("feat", plugin)]) as (base, _):
        client = httpx.Client(base_url=base, timeout=30)
        caller = threading.Thread(target=lambda: answers.append(send(client, base)))
        caller.start()
        deadline = time.monotonic() + PATIENCE
        while (plugin.pack is None or not plugin.pack.started) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert plugin.pack is not None and plugin.pack.started
    caller.join(PATIENCE)
    client.close()
    assert plugin.pack is not None and len(plugin.pack.cancelled) == 1
    return answers[0]


def test_a_call_cut_at_the_stop_gets_a_jsonrpc_error_with_its_id(tmp_path: Path) -> None:
    def send(client: httpx.Client, base: str) -> httpx.Response:
        envelope = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {"name": "feat_work", "arguments": WORK, "_meta": envelope}
        headers = {**ACCEPT, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "feat_work"}
        return client.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}, headers=headers
        )

    answer = _call_while_stopping(tmp_path, send)
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    message = answer.json()
    assert message["jsonrpc"] == "2.0" and message["id"] == 5
    assert message["error"]["code"] == -32603
    assert message["error"]["message"].startswith(STOPPING)
    assert message["error"]["data"]["retryable"] is True
    assert message["error"]["data"]["correlation_id"] == answer.headers["x-correlation-id"]


def test_a_call_answered_as_an_event_stream_gets_the_error_as_its_last_event(tmp_path: Path) -> None:
    def send(client: httpx.Client, base: str) -> httpx.Response:
        opened = client.post("/mcp", json=INITIALIZE, headers=ACCEPT)
        headers = {**ACCEPT, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
        client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "feat_work", "arguments": WORK}}
        return client.post("/mcp", json=call, headers=headers)

    answer = _call_while_stopping(tmp_path, send)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    data = [line[len("data: ") :] for line in answer.text.splitlines() if line.startswith("data: ")]
    last = json.loads(data[-1])
    assert last["id"] == 7 and last["error"]["message"].startswith(STOPPING)


def test_a_rest_call_cut_at_the_stop_gets_the_envelope(tmp_path: Path) -> None:
    answer = _call_while_stopping(tmp_path, lambda client, base: client.post("/api/v1/tools/feat_work", json=WORK))
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    error = answer.json()["error"]
    assert error["code"] == "SERVICE_UNAVAILABLE" and error["message"].startswith(STOPPING)


def test_a_2026_client_listen_stream_ends_at_the_stop_without_waiting_for_the_grace(tmp_path: Path) -> None:
    """A 2026-07-28 client's ``subscriptions/listen`` stream is a POST held open: an event stream, not a call."""
    envelope = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"notifications": {"toolsListChanged": True}, "_meta": envelope}
    body = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": params}
    headers = {**ACCEPT, "MCP-Protocol-Version": VERSION, "Mcp-Method": "subscriptions/listen"}
    config = feature_config(tmp_path, transport={"shutdown_grace_seconds": 20})
    opened, events = threading.Event(), []

    def listen(base: str) -> None:
        with (
            httpx.Client(base_url=base, timeout=60) as client,
            client.stream("POST", "/mcp", json=body, headers=headers) as r,
        ):
            for line in r.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[len("data: ") :]))
                    opened.set()

    with capture_logs() as logs:
        with http_gateway(config, extra_plugins=[("feat", FeaturePlugin())]) as (base, _):
            listener = threading.Thread(target=listen, args=(base,), daemon=True)
            listener.start()
            assert opened.wait(PATIENCE), events
            stopping = time.monotonic()
        took = time.monotonic() - stopping
    listener.join(PATIENCE)
    assert took < 10, f"the stop took {took:.1f} s"  # not the 20 s grace
    assert not any("error" in event for event in events), events
    assert not [e for e in logs if e["event"] == "request cut at shutdown"]
