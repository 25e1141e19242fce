"""SIGTERM stops ``gateway serve --transport http`` promptly and cleanly even while a handshake-era client holds its
event stream open: the stream ends at the stop (the grace is for requests in flight)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.plugins.remote.support import free_port

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


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
