"""A second process for the multi-process tests: ``python -m tests.plugins.vector_stores.edge_process MODE DIR``.

Modes (each prints one JSON line on stdout when it has something to say):

``hold``     open a ``QdrantEdgeStore`` on DIR, write a point, print ``{"ready": pid}``, keep it open until stdin
             closes, then close it.
``open``     try to open a ``QdrantEdgeStore`` on DIR; print ``{"opened": count}`` or ``{"error": type, "message"}``.
``raw-hold`` / ``raw-open``  the same with a bare ``qdrant_edge.EdgeShard`` on DIR (no lock of ours).
``crash``    open the store, upsert 100 points without flushing, print ``{"written": ids}`` and die by SIGKILL.
``gateway-hold`` / ``gateway-open``  start a real gateway runtime whose pack asks for the vector store at
             start-up (the default ``qdrant-edge``) with DIR as the gateway data dir.
"""

from __future__ import annotations

import json
import os
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
    else:
        anyio.run(store_mode, mode, directory)


if __name__ == "__main__":
    main()
