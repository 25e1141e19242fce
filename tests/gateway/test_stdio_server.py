"""``gateway serve`` as a real subprocess: lines that are not JSON-RPC messages are answered, and SIGINT/SIGTERM stop
the server cleanly while its stdin is still open (serving ends, stores are flushed and closed, the process ends by
the signal)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.gateway.stdio_support import INITIALIZE, INITIALIZED, StdioPeer, events, serve

GREET = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "hello_greet", "arguments": {"name": "Ada"}},
}
BROKEN = {  # the line sent → (the id answered, the JSON-RPC code, text in the message)
    "this is not json": (None, -32700, "Parse error: the line is not JSON"),
    "[1, 2]": (None, -32600, "not an array (batches are not supported)"),
    '"ping"': (None, -32600, "a message is a JSON object, not a string"),
    '{"jsonrpc": "2.0", "id": 9, "method": 7}': (9, -32600, "method: Input should be a valid string"),
    '{"jsonrpc": "1.0", "id": "q", "method": "ping"}': ("q", -32600, "jsonrpc: Input should be '2.0'"),
    '{"id": 10}': (10, -32600, "not a JSON-RPC 2.0 request, notification or response"),
    '{"jsonrpc": "2.0", "id": null, "method": "ping"}': (None, -32600, "id is a string or an integer, not null"),
    '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}': (None, -32600, "id is a string or an integer, not a number"),
    '{"jsonrpc": "2.0", "id": true, "method": "ping"}': (None, -32600, "id is a string or an integer, not a boolean"),
    "[" * 5000 + "]" * 5000: (None, -32700, "recursion limit exceeded"),  # Python's own parser would crash here
    '{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "\\ud800"}}': (None, -32700, "hex escape"),
}
SIGNALS = [signal.SIGTERM, signal.SIGINT]


def _config(tmp_path: Path) -> Path:
    """The example pack behind a daily quota counted in SQLite (a store with a WAL that a clean stop closes)."""
    path = tmp_path / "hello.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\nidentity = "stdio-user"\n'
        '[packs]\nenabled = ["hello"]\n[sanitize]\nlogs = ""\n[providers]\nrate_limiter = "sqlite"\n'
        '[pipeline]\ninterceptors = [{ name = "rate_limit" }]\n'
        '[[plugins.interceptor.rate_limit.rules]]\nname = "greetings"\ntools = ["hello_greet"]\nlimit = 50\n'
    )
    return path


def _counters(tmp_path: Path) -> Path:
    return tmp_path / "data" / "providers" / "rate_limiter" / "sqlite" / "rate_limits.sqlite3"


def test_lines_that_are_not_json_rpc_messages_are_answered(tmp_path: Path) -> None:
    peer = StdioPeer(_config(tmp_path))
    try:
        peer.open_session()
        for line, (rpc_id, code, text) in BROKEN.items():
            peer.send(line)
            answer = peer.receive()
            assert answer["jsonrpc"] == "2.0" and answer["id"] == rpc_id, (line, answer)
            assert answer["error"]["code"] == code and text in answer["error"]["message"], (line, answer)
        peer.send("   ")  # blank lines are skipped, not answered
        peer.send(GREET)  # and the session goes on
        greeting = peer.receive()
        assert greeting["id"] == 2 and greeting["result"]["structuredContent"]["greeting"] == "Hello, Ada!"
    finally:
        peer.process.kill()
        peer.process.wait()


def test_a_regular_file_on_stdin_is_checked_the_same_way(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text("\n".join([json.dumps(INITIALIZE), json.dumps(INITIALIZED), *BROKEN]) + "\n")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "serve", "--config", str(_config(tmp_path))],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert answers[0]["id"] == INITIALIZE["id"] and "result" in answers[0]
    assert [(a["id"], a["error"]["code"]) for a in answers[1:]] == [
        (rpc_id, code) for rpc_id, code, _ in BROKEN.values()
    ]


MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
def test_requests_written_before_stdin_closes_are_all_answered(tmp_path: Path, era: str) -> None:
    """A client may write its requests and close stdin at once (``printf ... | gateway serve``)."""
    opening = [INITIALIZE, INITIALIZED] if era == "handshake" else []
    calls = [
        {**GREET, "id": n, "params": {**GREET["params"], **({"_meta": MODERN} if era != "handshake" else {})}}
        for n in range(2, 7)
    ]
    script = "".join(json.dumps(message) + "\n" for message in [*opening, *calls])
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--config", str(_config(tmp_path))],
        input=script.encode(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = {a["id"]: a for a in map(json.loads, done.stdout.decode().splitlines())}
    assert sorted(answers) == sorted([*([INITIALIZE["id"]] if opening else []), 2, 3, 4, 5, 6])
    assert [answers[n]["result"]["structuredContent"]["greeting"] for n in range(2, 7)] == ["Hello, Ada!"] * 5


def test_a_client_that_closes_stdout_ends_serving_without_a_traceback(tmp_path: Path) -> None:
    peer = StdioPeer(_config(tmp_path))
    peer.open_session()
    assert peer.process.stdout is not None and peer.process.stderr is not None
    peer.process.stdout.close()
    peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})  # its answer meets a closed pipe
    try:
        status = peer.process.wait(60)  # a guard against a hang, not a speed target
    finally:
        peer.process.kill()
    stderr = peer.process.stderr.read().decode()
    assert status == 0, stderr
    assert "Traceback" not in stderr
    assert "the client closed stdout: serving ends" in [e["event"] for e in events(stderr)]


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_stop_signal_stops_a_stdio_server_whose_stdin_is_open(tmp_path: Path, signum: int) -> None:
    peer = StdioPeer(_config(tmp_path))
    peer.open_session()
    peer.send(GREET)
    assert peer.receive()["result"]["structuredContent"]["greeting"] == "Hello, Ada!"
    assert _counters(tmp_path).with_name("rate_limits.sqlite3-wal").exists()  # the counter is in the WAL
    status, stderr = peer.stop(signum)
    assert status == -signum, stderr  # ended by the signal, after the shutdown (a shell reports 128 + signum)
    name = signal.Signals(signum).name
    assert [e["event"] for e in events(stderr) if e.get("signal") == name] == ["stopping", "stopped"]
    assert not _counters(tmp_path).with_name("rate_limits.sqlite3-wal").exists(), "the SQLite store was not closed"
    with sqlite3.connect(_counters(tmp_path)) as db:
        assert db.execute("SELECT rule, level FROM rate_limit_counters").fetchall() == [("greetings", 1.0)]


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_stop_signal_stops_an_http_server_after_its_runtime(tmp_path: Path, signum: int) -> None:
    process = serve(_config(tmp_path), "--transport", "http", "--port", "0", stdin=subprocess.DEVNULL)
    assert process.stderr is not None
    banner = b""
    while b"listening on" not in banner:
        banner = process.stderr.readline()
        assert banner, "the gateway exited before listening"
    base = banner.decode().split()[-1]
    assert httpx.post(f"{base}/api/v1/tools/hello_greet", json={"name": "Ada"}, timeout=30).status_code == 200
    process.send_signal(signum)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == -signum, stderr.decode()
    assert "stopped" in [e["event"] for e in events(stderr.decode())]
    assert not _counters(tmp_path).with_name("rate_limits.sqlite3-wal").exists(), "the SQLite store was not closed"
