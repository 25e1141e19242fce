"""The HTTP connection limits (:mod:`gateway.http_protocol`) on a real served gateway, spoken to over raw sockets:
a head past ``max_header_bytes`` is refused with 431, a head or a body that stalls is cut, and an ordinary request
whose body arrives with its head is served."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from gateway.testing import http_gateway


def _config(tmp_path: Path) -> dict:
    return {
        "gateway": {"data_dir": str(tmp_path / "data")},
        "packs": {"enabled": ["thinking"]},
        "transport": {"max_header_bytes": 4096, "header_timeout_seconds": 0.5, "body_timeout_seconds": 0.5},
    }


def _connect(base: str) -> socket.socket:
    url = urlsplit(base)
    sock = socket.create_connection((url.hostname, url.port), timeout=10)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_headers_past_the_limit_are_refused_with_431_and_the_connection_closes(tmp_path: Path) -> None:
    with http_gateway(_config(tmp_path)) as (base, _), _connect(base) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 10_000)
        answer = _read_all(sock)  # the server closes: the read ends
    assert answer.startswith(b"HTTP/1.1 431 ")


def test_a_head_or_a_body_that_stalls_is_cut(tmp_path: Path) -> None:
    with http_gateway(_config(tmp_path)) as (base, _):
        with _connect(base) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends its head
            started = time.monotonic()
            assert _read_all(sock) == b""
            assert time.monotonic() - started < 5
        with _connect(base) as sock:
            head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            sock.sendall(head + b"Content-Length: 1000\r\n\r\n{")  # and never the rest of its body
            started = time.monotonic()
            _read_all(sock)
            assert time.monotonic() - started < 5
        with _connect(base) as sock:  # an ordinary request: its body came with its head
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert _read_all(sock).startswith(b"HTTP/1.1 200 ")


def test_a_large_body_sent_at_once_is_not_taken_for_a_large_head(tmp_path: Path) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * 200_000 + b'"}'
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    with http_gateway(_config(tmp_path)) as (base, _), _connect(base) as sock:
        sock.sendall(head + body)
        answer = _read_all(sock)
    assert not answer.startswith(b"HTTP/1.1 431") and answer.startswith(b"HTTP/1.1 ")


def test_a_caller_without_credentials_is_refused_before_its_body_is_read(tmp_path: Path) -> None:
    """Credentials come from the headers: a stranger's body (here one that never ends) is never buffered."""
    config = {**_config(tmp_path), "providers": {"auth": "api_key"}}
    config["transport"] = {**config["transport"], "body_timeout_seconds": 30}
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    with http_gateway(config) as (base, _), _connect(base) as sock:
        sock.sendall(head + b"400\r\n" + b"x" * 1024 + b"\r\n")  # the first chunk of a body that goes on
        sock.settimeout(5)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 401 ")


def test_a_head_sent_whole_in_one_read_is_held_to_the_limit_and_a_slow_body_is_not_cut(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["transport"]["body_timeout_seconds"] = 1.5  # pauses of 0.3 s stay far from it on a loaded machine
    with http_gateway(config) as (base, _):
        with _connect(base) as sock:  # complete, in one piece: parsed at once, still over the limit
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
            assert _read_all(sock).startswith(b"HTTP/1.1 431 ")  # read whole: no reset before the answer
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        with _connect(base) as sock:  # a body that takes longer than the timeout, never stalling that long
            sock.sendall(head)
            for start in range(0, len(body), 7):  # seven pauses: 2.1 s in all
                time.sleep(0.3)
                sock.sendall(body[start : start + 7])
            assert _read_all(sock).startswith(b"HTTP/1.1 ")
