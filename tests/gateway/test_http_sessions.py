"""Handshake-era MCP sessions over HTTP: one authenticated caller holds at most ``max_sessions_per_caller`` open
ones, so no caller can fill the server's table and lock every other handshake-era client out; a session ended, or
idle past ``session_idle_seconds``, no longer counts."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx

from gateway.testing import http_gateway
from tests.gateway.http_support import INITIALIZE, PLUGINS, config, key_manager, post_mcp


def test_one_caller_holds_at_most_its_quota_of_sessions_and_others_are_not_locked_out(tmp_path: Path) -> None:
    cfg = config(tmp_path, "api_key", transport={"max_sessions_per_caller": 2, "session_idle_seconds": 3.0})

    async def issue() -> list[str]:
        async with key_manager(cfg) as manager:
            return [(await manager.create_key(name=n, scopes=[], tenant="acme")).key for n in ("greedy", "other")]

    greedy, other = ({"X-API-Key": key} for key in anyio.run(issue))
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        opened = [post_mcp(base, INITIALIZE, greedy) for _ in range(2)]
        assert all(response.status_code == 200 for response in opened)
        refused = post_mcp(base, INITIALIZE, greedy)
        assert refused.status_code == 429 and refused.json()["id"] == INITIALIZE["id"]
        assert "max_sessions_per_caller" in refused.json()["error"]["message"]
        assert post_mcp(base, INITIALIZE, other).status_code == 200  # another caller is not locked out
        session = {"Mcp-Session-Id": opened[0].headers["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-06-18"}
        assert httpx.delete(f"{base}/mcp", headers={**greedy, **session}).status_code in (200, 204)
        assert post_mcp(base, INITIALIZE, greedy).status_code == 200  # one ended: room for one more
        assert post_mcp(base, INITIALIZE, greedy).status_code == 429
        time.sleep(3.5)  # six requests above must take less than the 3 s (a loaded machine: 1 s was too short)
        assert post_mcp(base, INITIALIZE, greedy).status_code == 200  # the idle ones have ended


def test_a_burst_of_initialize_requests_cannot_pass_the_quota(tmp_path: Path) -> None:
    """Sessions being opened count from the moment they are admitted, not once their answer binds them: sixteen
    requests whose last byte arrives at once still open two sessions."""
    import json
    import socket
    from urllib.parse import urlsplit

    cfg = config(tmp_path, "api_key", transport={"max_sessions_per_caller": 2})

    async def issue() -> str:
        async with key_manager(cfg) as manager:
            return (await manager.create_key(name="burst", scopes=[], tenant="acme")).key

    key = anyio.run(issue)
    body = json.dumps(INITIALIZE).encode()
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
        b"Accept: application/json, text/event-stream\r\nX-API-Key: %s\r\nContent-Length: %d\r\n\r\n%s"
        % (key.encode(), len(body), body)
    )
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        url = urlsplit(base)
        sockets = [socket.create_connection((url.hostname, url.port), timeout=30) for _ in range(16)]
        for sock in sockets:
            sock.sendall(request[:-1])
        time.sleep(0.3)
        for sock in sockets:
            sock.sendall(request[-1:])
        answers = []
        for sock in sockets:
            with sock:
                answers.append(sock.recv(64).split(b" ")[1])
    assert answers.count(b"200") == 2 and answers.count(b"429") == 14


def test_a_bound_session_ends_its_reservation_at_once() -> None:
    """Not once its answer has been sent: meanwhile the session would count twice, and a burst refused early."""
    from gateway.http_sessions import SessionOwners

    owners = SessionOwners()
    assert owners.reserve("k", 2) is None
    owners.bind("s1", "k", reserved=True)
    assert owners.reserve("k", 2) is None  # one bound, one being opened: within the quota of two
    owners.bind("s2", "k", reserved=True)
    assert owners.reserve("k", 2) == 2


def test_a_session_that_looks_idle_keeps_its_owner() -> None:
    """The SDK keeps a session with a long call or an event stream open: it stops counting, not being owned."""
    from gateway.http_sessions import SessionOwners

    owners = SessionOwners(idle_seconds=1.0)
    assert owners.reserve("alice", 1) is None
    owners.bind("s1", "alice", reserved=True)
    assert owners.reserve("alice", 1) == 1  # held
    time.sleep(1.1)
    assert owners.reserve("alice", 1) is None  # s1 looks idle: it no longer counts
    assert owners.owner("s1") == "alice"  # but it is still alice's: nobody else may use it
