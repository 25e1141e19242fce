"""Several real processes on one ``qdrant-edge`` data dir: the first owns the store and serves it, the others use
it through its socket, and one of them takes it over when the owner exits or is killed with ``kill -9``."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
import uuid
from pathlib import Path

import anyio
import numpy as np
import pytest

from gateway.api import ServiceUnavailable, VectorPoint
from gateway_plugins.vector_stores.edge import QdrantEdgeConfig
from gateway_plugins.vector_stores.edge_shared import SharedEdgeStore
from gateway_plugins.vector_stores.edge_wire import OwnerUnavailable
from tests.plugins.vector_stores.edge_process import COLLECTION
from tests.plugins.vector_stores.test_qdrant_edge_processes import next_message, run, spawn, stop

pytestmark = pytest.mark.anyio


def points(count: int, tag: str) -> list[VectorPoint]:
    """Points in random directions (so a query for one finds that one)."""
    vectors = np.random.default_rng().standard_normal((count, 4))
    return [VectorPoint(str(uuid.uuid4()), v, {"k": tag}) for v in vectors]


def test_a_second_process_uses_the_owners_store_through_a_private_socket(tmp_path: Path) -> None:
    holder = spawn("shared-hold", tmp_path)
    try:
        ready = next_message(holder)
        assert ready["owner"] is True
        assert run("shared-open", tmp_path) == {"owner": False, "owner_pid": ready["ready"], "count": 1}
        sock = tmp_path / "run" / "store.sock"
        assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o700
    finally:
        assert stop(holder) == 0
    assert not (tmp_path / "run" / "store.sock").exists()  # a clean exit removes it
    assert run("shared-open", tmp_path)["owner"] is True  # and frees the store for the next process


async def test_a_client_takes_over_a_killed_owner_and_its_calls_in_flight_complete(tmp_path: Path) -> None:
    holder = spawn("shared-hold", tmp_path)
    owner_pid = next_message(holder)["ready"]
    store = SharedEdgeStore(tmp_path)
    written: list[str] = []
    failures: list[BaseException] = []
    try:
        assert not store.is_owner and store.owner_pid == owner_pid

        async def writer(n: int) -> None:
            for round_number in range(30):
                batch = points(4, f"task{n}")
                try:
                    await store.upsert(COLLECTION, batch)
                    written.extend(p.id for p in batch)
                    found = await store.query(COLLECTION, batch[1].vector, limit=1, filter={"k": f"task{n}"})
                    assert found[0].id == batch[1].id
                except Exception as exc:
                    failures.append(exc)
                if round_number == 10 and n == 0:
                    os.kill(owner_pid, signal.SIGKILL)  # while the other tasks have calls in flight
                await anyio.sleep(0)

        async with anyio.create_task_group() as group:
            for n in range(6):
                group.start_soon(writer, n)
        assert failures == []
        assert store.is_owner and store.owner_pid == os.getpid()
        ids = set(await store.list_ids(COLLECTION))
        assert set(written) <= ids and len(ids) == len(written) + 1  # and the killed owner's own point
    finally:
        await store.close()
        holder.communicate(timeout=60)
    assert holder.returncode == -signal.SIGKILL


async def test_a_client_takes_over_when_the_owner_exits_cleanly(tmp_path: Path) -> None:
    holder = spawn("shared-hold", tmp_path)
    next_message(holder)
    store = SharedEdgeStore(tmp_path)
    try:
        assert not store.is_owner
        await store.upsert(COLLECTION, points(3, "client"))
        assert stop(holder) == 0
        assert await store.count(COLLECTION) == 4
        assert store.is_owner
        assert run("shared-open", tmp_path)["owner_pid"] == os.getpid()  # and serves the next process in turn
    finally:
        await store.close()


def test_three_processes_one_killed_the_other_two_carry_on(tmp_path: Path) -> None:
    holder = spawn("shared-hold", tmp_path)
    owner_pid = next_message(holder)["ready"]
    workers = [spawn("shared-worker", tmp_path, ROUNDS="40") for _ in range(2)]
    try:
        for w in workers:
            assert next_message(w)["owner"] is False
        for _ in range(5):
            next_message(workers[0])
        os.kill(owner_pid, signal.SIGKILL)
        holder.communicate(timeout=60)
        finals = []
        for w in workers:
            while "final" not in (message := next_message(w)):
                pass
            finals.append(message)
        assert [f["errors"] for f in finals] == [[], []]
        assert sorted(f["owner"] for f in finals) == [False, True]  # one took over, the other uses it
        assert all(len(f["final"]) == 200 for f in finals)
        for w in workers:
            assert stop(w) == 0
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.communicate()

    async def check() -> None:
        store = SharedEdgeStore(tmp_path)
        try:
            assert store.is_owner
            ids = set(await store.list_ids(COLLECTION))
            assert set(finals[0]["final"]) | set(finals[1]["final"]) <= ids and len(ids) == 401
        finally:
            await store.close()

    anyio.run(check)


def stop_and_wait(proc: subprocess.Popen[str]) -> None:
    """``SIGSTOP`` ``proc`` and return once every thread of it has stopped.

    ``kill`` only queues the signal and wakes one thread to act on it; the process's other threads run on until
    that thread gets a CPU and stops them all. On a busy machine that takes milliseconds, long enough for the
    owner's serving thread to answer a request sent meanwhile. The parent learns of the completed stop through
    ``waitpid(WUNTRACED)``.
    """
    os.kill(proc.pid, signal.SIGSTOP)
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status) and os.WSTOPSIG(status) == signal.SIGSTOP


async def test_an_owner_that_does_not_answer_fails_calls_after_the_request_timeout(tmp_path: Path) -> None:
    holder = spawn("shared-hold", tmp_path)
    owner_pid = next_message(holder)["ready"]
    assert owner_pid == holder.pid
    store = SharedEdgeStore(tmp_path, QdrantEdgeConfig(request_timeout_seconds=1.0))
    try:
        assert await store.count(COLLECTION) == 1
        stop_and_wait(holder)
        try:
            started = time.monotonic()
            with pytest.raises(OwnerUnavailable, match=f"pid {owner_pid}.*did not answer within 1 s") as caught:
                await store.count(COLLECTION)
            assert time.monotonic() - started < 30
            assert isinstance(caught.value, ServiceUnavailable) and caught.value.retryable  # a tool error too
        finally:
            os.kill(owner_pid, signal.SIGCONT)
        assert await store.count(COLLECTION) == 1  # the owner is back: so is the store
    finally:
        await store.close()
        assert stop(holder) == 0


def test_a_process_that_holds_the_store_without_serving_it_is_named(tmp_path: Path) -> None:
    holder = spawn("shared-hold", tmp_path, EDGE_CONFIG='{"share": false}')
    try:
        pid = next_message(holder)["ready"]
        second = run("shared-open", tmp_path, EDGE_CONFIG='{"takeover_timeout_seconds": 0.5}')
        assert second["error"] == "OwnerUnavailable"
        assert f"held by another process (pid {pid}) that does not serve it" in second["message"]
        assert "MCP_GATEWAY_DATA_DIR" in second["message"]
    finally:
        assert stop(holder) == 0
