"""The two stores agree whatever point a failure hits: half-written submissions are removed at start-up, stray
points are deleted, lost points are re-embedded; and the dedup lock serialises across processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.api import ServiceUnavailable, VectorPoint
from gateway.testing import running_gateway
from gateway_plugins.gim.locks import DedupLock, LeaseLost
from gateway_plugins.gim.vectors import collection_name, point_id
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, gim_config, submission

pytestmark = pytest.mark.anyio

OTHER_ERROR = "ModuleNotFoundError: No module named 'distutils'"
OTHER_CAUSE = "Python 3.12 removed distutils from the standard library; setuptools provides a shim."


async def stores_agree(core: Any) -> set[str]:
    """Assert the relational rows and the vector points describe the same items; return the active item ids."""
    rows = await core.store.fetch_all("SELECT id, state FROM gim_items")
    assert all(r["state"] == "active" for r in rows), "a pending row survived"
    active = {r["id"] for r in rows}
    for generation in core.vectors.generations.values():
        name = collection_name(generation.embedder_id, generation.active)
        points = set(await core.vectors.store.list_ids(name))
        expected = {point_id(item, kind) for item in active for kind in core.kinds}
        assert points == expected, f"{len(points - expected)} stray, {len(expected - points)} missing in {name}"
        recorded = await core.repo.vector_item_ids(core.store, generation.embedder_id, generation.active)
        assert recorded == active
    return active


async def test_a_crash_between_the_vector_write_and_activation_leaves_nothing(data_dir: Path) -> None:
    config = gim_config()
    async with running_gateway(config, data_dir) as client:
        kept = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        core = client.runtime.packs["gim"].core
        import gateway_plugins.gim.submit as submit_module

        async def crash(*args: Any, **kwargs: Any) -> int:
            raise RuntimeError("simulated crash after the vectors were written")

        async def no_cleanup(*args: Any, **kwargs: Any) -> None:  # a dead process cleans nothing up
            return None

        core.repo.activate = crash
        original_cleanup = submit_module._cleanup
        submit_module._cleanup = no_cleanup
        try:
            failed = await client.call_tool("gim_submit_issue", submission(OTHER_ERROR, OTHER_CAUSE))
        finally:
            submit_module._cleanup = original_cleanup
        assert failed.is_error
        pending = await core.store.fetch_all("SELECT id FROM gim_items WHERE state = 'pending'")
        assert len(pending) == 1  # the half-written submission is there, invisible to reads
        found = await call(client, "gim_search_issues", {"error_message": OTHER_ERROR})
        assert pending[0]["id"] not in {i["issue_id"] for i in found["issues"]}
    async with running_gateway(config, data_dir) as client:
        core = client.runtime.packs["gim"].core
        assert await stores_agree(core) == {kept["issue_id"]}
        again = await call(client, "gim_submit_issue", submission(OTHER_ERROR, OTHER_CAUSE))
        assert again["merged"] is False


async def test_failed_write_is_cleaned_up_at_once(gim: Any) -> None:
    core = gim.runtime.packs["gim"].core

    async def broken_upsert(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("vector store unreachable")

    original = core.vectors.store.upsert
    core.vectors.store.upsert = broken_upsert
    failed = await gim.call_tool("gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    assert failed.is_error
    core.vectors.store.upsert = original
    assert await core.store.fetch_all("SELECT id FROM gim_items") == []
    assert await core.store.fetch_all("SELECT id FROM gim_masters") == []


async def test_audit_deletes_stray_points_and_refills_lost_ones(data_dir: Path) -> None:
    config = gim_config()
    async with running_gateway(config, data_dir) as client:
        a = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        b = await call(client, "gim_submit_issue", submission(OTHER_ERROR, OTHER_CAUSE))
        core = client.runtime.packs["gim"].core
        (generation,) = core.vectors.generations.values()
        name = collection_name(generation.embedder_id, generation.active)
        stray = VectorPoint(
            id=str(uuid.uuid4()),
            vector=[1.0] + [0.0] * 383,
            payload={"item_id": "x", "master_id": "x", "kind": "error"},
        )
        await core.vectors.store.upsert(name, [stray])
        await core.vectors.store.delete(name, [point_id(b["issue_id"], "error")])
    async with running_gateway(config, data_dir) as client:
        core = client.runtime.packs["gim"].core
        assert await stores_agree(core) == {a["issue_id"], b["issue_id"]}
        found = await call(client, "gim_search_issues", {"error_message": OTHER_ERROR})
        assert found["issues"][0]["issue_id"] == b["issue_id"]


async def _lock_pair(tmp_path: Path, **kwargs: Any) -> tuple[Any, DedupLock, DedupLock]:
    from gateway_plugins.gim.migrations import MIGRATIONS, NAMESPACE
    from gateway_plugins.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "lock.sqlite3")
    await store.migrate(NAMESPACE, MIGRATIONS)
    return store, DedupLock(store, **kwargs), DedupLock(store, **kwargs)


async def test_lock_excludes_another_holder_until_released(tmp_path: Path) -> None:
    store, first, second = await _lock_pair(tmp_path, lease_seconds=30, timeout_seconds=0.3)
    try:
        order: list[str] = []
        async with first.hold():
            with pytest.raises(ServiceUnavailable):
                async with second.hold():
                    order.append("second while first held")
            order.append("first")
        async with second.hold() as grant:
            order.append("second")
            assert grant.took_over is False
        assert order == ["first", "second"]
    finally:
        await store.close()


async def test_expired_lease_is_taken_over(tmp_path: Path) -> None:
    store, first, second = await _lock_pair(tmp_path, lease_seconds=0.2, timeout_seconds=5)
    try:
        grant_cm = first.hold()
        await grant_cm.__aenter__()  # a holder that never releases (it hangs, or it died)
        await anyio.sleep(0.3)
        async with second.hold() as grant:
            assert grant.took_over is True
    finally:
        await store.close()


async def test_dead_holder_on_this_host_is_taken_over_at_once(tmp_path: Path) -> None:
    store, _, second = await _lock_pair(tmp_path, lease_seconds=3600, timeout_seconds=2)
    try:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        owner = f"{socket.gethostname()}:{int(dead.stdout)}:deadbeef"
        await store.execute(
            "UPDATE gim_locks SET owner = :o, expires_at = :e WHERE name = 'dedup'", {"o": owner, "e": 1e12}
        )
        async with second.hold() as grant:
            assert grant.took_over is True
        assert os.getpid() != int(dead.stdout)
    finally:
        await store.close()


async def test_a_holder_whose_lease_was_taken_over_cannot_commit(tmp_path: Path) -> None:
    store, first, second = await _lock_pair(tmp_path, lease_seconds=0.2, timeout_seconds=5)
    try:
        async with first.hold():
            await anyio.sleep(0.3)
            await first.fence(store)  # expired, but nobody took it: still this holder's, and extended
            await anyio.sleep(0.3)
            async with second.hold() as grant:  # a process that was slow (paused, swapped out) meanwhile
                assert grant.took_over is True
                with pytest.raises(LeaseLost):
                    await first.fence(store)
                with pytest.raises(LeaseLost):
                    await first.renew()
                await second.fence(store)
    finally:
        await store.close()


async def test_a_submission_whose_lease_was_taken_over_is_refused_and_leaves_nothing(gim: Any) -> None:
    core = gim.runtime.packs["gim"].core
    kept = await call(gim, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    original = core.vectors.write

    async def slow_write(*args: Any, **kwargs: Any) -> None:  # meanwhile another instance takes the lease over
        await original(*args, **kwargs)
        await core.store.execute("UPDATE gim_locks SET owner = 'elsewhere:1:x', expires_at = 1e12")

    core.vectors.write = slow_write
    try:
        refused = await gim.call_tool("gim_submit_issue", submission(OTHER_ERROR, OTHER_CAUSE))
    finally:
        core.vectors.write = original
        await core.store.execute("UPDATE gim_locks SET owner = NULL, expires_at = 0")
    body = refused.content[0].text
    assert refused.is_error and '"service_unavailable"' in body and "retry" in body
    assert await stores_agree(core) == {kept["issue_id"]}


async def test_audit_drops_vectors_of_an_item_that_is_gone(data_dir: Path) -> None:
    config = gim_config()
    async with running_gateway(config, data_dir) as client:
        kept = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        gone = await call(client, "gim_submit_issue", submission(OTHER_ERROR, OTHER_CAUSE))
        core = client.runtime.packs["gim"].core
        async with core.store.transaction() as tx:  # the item's rows went, its gim_vectors rows and points stayed
            await tx.execute("DELETE FROM gim_masters WHERE id = :id", {"id": gone["issue_id"]})
            await tx.execute("DELETE FROM gim_items WHERE id = :id", {"id": gone["issue_id"]})
    async with running_gateway(config, data_dir) as client:
        core = client.runtime.packs["gim"].core
        assert await stores_agree(core) == {kept["issue_id"]}


async def test_waiting_in_this_process_is_bounded_too(tmp_path: Path) -> None:
    """Submissions queued behind one that hangs (its store went away) are refused after the timeout, not queued."""
    store, lock, _ = await _lock_pair(tmp_path, lease_seconds=30, timeout_seconds=0.3)
    try:
        async with lock.hold():
            with anyio.fail_after(5), pytest.raises(ServiceUnavailable, match="retry shortly"):
                async with lock.hold():
                    pass
        async with lock.hold() as grant:  # released: the next one goes through
            assert grant.took_over is False
    finally:
        await store.close()
