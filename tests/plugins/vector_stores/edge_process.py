"""A second process for the multi-process tests: ``python -m tests.plugins.vector_stores.edge_process MODE DIR``.

Modes (each prints one JSON line on stdout when it has something to say):

``hold``     open a ``QdrantEdgeStore`` on DIR, write a point, print ``{"ready": pid}``, keep it open until stdin
             closes, then close it.
``open``     try to open a ``QdrantEdgeStore`` on DIR; print ``{"opened": count}`` or ``{"error": type, "message"}``.
``raw-hold`` / ``raw-open``  the same with a bare ``qdrant_edge.EdgeShard`` on DIR (no lock of ours).
``crash``    open the store, upsert 100 points without flushing, print ``{"written": ids}`` and die by SIGKILL.
``gateway-hold`` / ``gateway-open``  start a real gateway runtime whose pack asks for the vector store at
             start-up (the default ``qdrant-edge``) with DIR as the gateway data dir.
``shared-hold``  open the provider's store (``SharedEdgeStore``) on DIR, write a point, print ``{"ready": pid,
             "owner": bool}``, keep it open until stdin closes, then close it.
``shared-open``  open a ``SharedEdgeStore`` on DIR and print ``{"owner": bool, "owner_pid": pid, "count": n}``, or
             ``{"error": type, "message"}``.
``shared-worker``  open a ``SharedEdgeStore`` on DIR and run ``ROUNDS`` (env, default 40) rounds of: upsert 5 points
             of its own, find one of them; print ``{"round": i, "owner": bool}`` after each, then ``{"final": ids,
             "owner": bool, "errors": [...]}``; close the store once stdin closes.

``EDGE_CONFIG`` (env, JSON) is the ``QdrantEdgeConfig`` table of the ``shared-*`` modes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio

COLLECTION = "gim__local-all-minilm-l6-v2-384"


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def wait_for_stdin_eof() -> None:
    sys.stdin.read()


async def store_mode(mode: str, directory: Path) -> None:
    from gateway.api import ProviderUnavailable, VectorPoint
    from gateway_plugins.vector_stores.edge import QdrantEdgeStore

    try:
        store = QdrantEdgeStore(directory)
    except ProviderUnavailable as exc:
        say(error=type(exc).__name__, message=str(exc))
        return
    try:
        await store.ensure_collection(COLLECTION, dimension=4, indexed_fields={"k": "keyword"})
        if mode == "open":
            say(opened=await store.count(COLLECTION))
            return
        points = [VectorPoint(str(uuid.uuid4()), [1.0, float(i), 0.5, -1.0], {"k": f"v{i}"}) for i in range(100)]
        if mode == "crash":
            await store.upsert(COLLECTION, points)
            say(written=[p.id for p in points])
            os.kill(os.getpid(), signal.SIGKILL)
        await store.upsert(COLLECTION, points[:1])
        say(ready=os.getpid())
        await anyio.to_thread.run_sync(wait_for_stdin_eof)
    finally:
        await store.close()


async def shared_mode(mode: str, directory: Path) -> None:
    from gateway.api import ProviderUnavailable, VectorPoint
    from gateway_plugins.vector_stores.edge import QdrantEdgeConfig
    from gateway_plugins.vector_stores.edge_shared import SharedEdgeStore

    config = QdrantEdgeConfig.model_validate(json.loads(os.environ.get("EDGE_CONFIG", "{}")))
    try:
        store = SharedEdgeStore(directory, config)
    except ProviderUnavailable as exc:
        say(error=type(exc).__name__, message=str(exc))
        return
    try:
        await store.ensure_collection(COLLECTION, dimension=4, indexed_fields={"k": "keyword"})
        if mode == "shared-open":
            say(owner=store.is_owner, owner_pid=store.owner_pid, count=await store.count(COLLECTION))
        elif mode == "shared-hold":
            await store.upsert(COLLECTION, [VectorPoint(str(uuid.uuid4()), [1.0, 0.0, 0.5, -1.0], {"k": "hold"})])
            say(ready=os.getpid(), owner=store.is_owner)
            await anyio.to_thread.run_sync(wait_for_stdin_eof)
        else:
            await worker(store)
    finally:
        await store.close()


async def worker(store: Any) -> None:
    from gateway.api import VectorPoint

    ids: list[str] = []
    errors: list[str] = []
    tag = f"w{os.getpid()}"
    rng = random.Random(os.getpid())
    for i in range(int(os.environ.get("ROUNDS", "40"))):
        points = [VectorPoint(str(uuid.uuid4()), [rng.gauss(0, 1) for _ in range(4)], {"k": tag}) for _ in range(5)]
        try:
            await store.upsert(COLLECTION, points)
            ids += [p.id for p in points]
            found = await store.query(COLLECTION, points[2].vector, limit=1, filter={"k": tag})
            if found[0].id != points[2].id:
                errors.append(f"round {i}: found {found[0].id}")
        except Exception as exc:
            errors.append(f"round {i}: {type(exc).__name__}: {exc}")
        say(round=i, owner=store.is_owner)
        await anyio.sleep(0.02)
    say(final=ids, owner=store.is_owner, errors=errors)
    await anyio.to_thread.run_sync(wait_for_stdin_eof)


def raw_mode(mode: str, directory: Path) -> None:
    import qdrant_edge as qe

    shard_dir = directory / "raw-shard"
    try:
        if mode == "raw-hold":
            config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=4, distance=qe.Distance.Cosine))
            shard = qe.EdgeShard.create(str(shard_dir), config)
        else:
            shard = qe.EdgeShard.load(str(shard_dir))
    except Exception as exc:
        say(error=type(exc).__name__, message=str(exc))
        return
    try:
        if mode == "raw-hold":
            say(ready=os.getpid())
            wait_for_stdin_eof()
        else:
            say(opened=shard.count(qe.CountRequest()))
    finally:
        shard.close()


async def gateway_mode(mode: str, directory: Path) -> None:
    from gateway.api import ToolPack, hookimpl
    from gateway.app import running_runtime

    class VectorPack(ToolPack):
        name = "vectors-at-start"

        def __init__(self, ctx: Any) -> None:
            self._ctx = ctx

        async def start(self) -> None:
            store = self._ctx.provider("vector_store")  # at start-up, as a pack that searches must
            await store.ensure_collection(COLLECTION, dimension=4)

    class Plugin:
        @hookimpl
        def gateway_register_tool_packs(self, register: Any) -> None:
            register("vectors-at-start", VectorPack)

    config = {"gateway": {"data_dir": str(directory)}, "packs": {"enabled": ["vectors-at-start"]}}
    try:
        async with running_runtime(config, extra_plugins=[("vectors-at-start", Plugin())], configure_logs=False):
            if mode == "gateway-hold":
                say(ready=os.getpid())
                await anyio.to_thread.run_sync(wait_for_stdin_eof)
            else:
                say(opened=True)
    except Exception as exc:
        say(error=type(exc).__name__, message=str(exc))


def main() -> None:
    import structlog

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # stdout carries the JSON lines
    mode, directory = sys.argv[1], Path(sys.argv[2])
    if mode.startswith("raw-"):
        raw_mode(mode, directory)
    elif mode.startswith("gateway-"):
        anyio.run(gateway_mode, mode, directory)
    elif mode.startswith("shared-"):
        anyio.run(shared_mode, mode, directory)
    else:
        anyio.run(store_mode, mode, directory)


if __name__ == "__main__":
    main()
