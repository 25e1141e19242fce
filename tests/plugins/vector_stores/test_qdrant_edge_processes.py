"""Two processes on one ``qdrant-edge`` data dir, and a process that dies without closing its store.

Finding (qdrant-edge-py 0.9): the engine takes an exclusive lock on a shard's write-ahead log when it opens the
shard, so a second process cannot corrupt an open shard; but it fails only when it opens that shard, with
``Can't init WAL: Kind(WouldBlock)``. The store opens shards on first use and creates them on demand, so without a
lock of its own a second gateway would start and then fail at its first search. The store therefore locks its
directory when it is created, i.e. when the gateway starts; the provider turns a second gateway into a client of
the first (``test_qdrant_edge_shared_processes.py``), or, with ``share = false``, fails it at start.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.api import ProviderUnavailable
from gateway_plugins.vector_stores.edge import QdrantEdgeStore

ROOT = Path(__file__).resolve().parents[3]
HELPER = "tests.plugins.vector_stores.edge_process"


def spawn(mode: str, directory: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", HELPER, mode, str(directory)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def next_message(proc: subprocess.Popen[str], timeout: float = 60.0) -> dict[str, Any]:
    """The next JSON line the process prints (fails after ``timeout`` seconds, with its stderr)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=deadline - time.monotonic()):
                line = proc.stdout.readline()
                if not line:
                    break
                if line.startswith("{"):
                    return json.loads(line)
    proc.kill()
    _, err = proc.communicate()
    raise AssertionError(f"no message from {proc.args} within {timeout} s; stderr:\n{err}")


def run(mode: str, directory: Path, **env: str) -> dict[str, Any]:
    proc = spawn(mode, directory, **env)
    try:
        return next_message(proc)
    finally:
        proc.communicate(timeout=60)


def stop(proc: subprocess.Popen[str]) -> int:
    proc.communicate(input="", timeout=60)  # closes stdin: the holder closes its store and exits
    return proc.returncode


def test_the_engine_alone_refuses_a_second_process_only_once_it_opens_the_shard(tmp_path: Path) -> None:
    holder = spawn("raw-hold", tmp_path)
    try:
        assert "ready" in next_message(holder)
        second = run("raw-open", tmp_path)
        assert second["error"] == "Exception"
        assert "WouldBlock" in second["message"]  # safe, but cryptic, and only at the shard's first use
    finally:
        assert stop(holder) == 0
    assert run("raw-open", tmp_path) == {"opened": 0}


def test_a_second_gateway_store_fails_at_creation_saying_what_to_do(tmp_path: Path) -> None:
    holder = spawn("hold", tmp_path)
    try:
        pid = next_message(holder)["ready"]
        second = run("open", tmp_path)
        assert second["error"] == "DirectoryInUse"  # a ProviderUnavailable
        message = second["message"]
        assert f"in use by another gateway process (pid {pid})" in message
        assert str(tmp_path) in message
        assert "MCP_GATEWAY_DATA_DIR" in message and "[gateway] data_dir" in message and "`qdrant`" in message
    finally:
        assert stop(holder) == 0
    assert run("open", tmp_path) == {"opened": 1}  # the first one's point, intact; the lock went with it


def test_a_second_store_in_the_same_process_is_refused_too(fast_tmp_path: Path) -> None:
    first = QdrantEdgeStore(fast_tmp_path)
    try:
        with pytest.raises(ProviderUnavailable, match="in use by another gateway process"):
            QdrantEdgeStore(fast_tmp_path)
    finally:
        anyio.run(first.close)
    anyio.run(QdrantEdgeStore(fast_tmp_path).close)


def test_a_killed_process_releases_the_lock_and_keeps_its_acknowledged_writes(tmp_path: Path) -> None:
    proc = spawn("crash", tmp_path)
    written = next_message(proc)["written"]
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    async def check() -> None:
        store = QdrantEdgeStore(tmp_path)  # the lock died with the process
        try:
            ids = await store.list_ids("gim__local-all-minilm-l6-v2-384")
            assert sorted(ids) == sorted(written)  # replayed from the write-ahead log
            assert await store.count("gim__local-all-minilm-l6-v2-384", filter={"k": ["v3", "v7"]}) == 2
        finally:
            await store.close()

    anyio.run(check)


def test_two_gateways_on_one_data_dir_the_second_uses_the_firsts_store(tmp_path: Path) -> None:
    holder = spawn("gateway-hold", tmp_path)
    try:
        assert "ready" in next_message(holder)
        assert run("gateway-open", tmp_path) == {"opened": True}
    finally:
        assert stop(holder) == 0
    assert run("gateway-open", tmp_path) == {"opened": True}


def test_with_sharing_off_a_second_store_fails_at_start_saying_what_to_do(tmp_path: Path) -> None:
    holder = spawn("shared-hold", tmp_path, EDGE_CONFIG='{"share": false}')
    try:
        pid = next_message(holder)["ready"]
        second = run("shared-open", tmp_path, EDGE_CONFIG='{"share": false}')
        assert second["error"] == "DirectoryInUse"
        assert f"in use by another gateway process (pid {pid})" in second["message"]
        assert "MCP_GATEWAY_DATA_DIR" in second["message"] and "`qdrant`" in second["message"]
    finally:
        assert stop(holder) == 0
