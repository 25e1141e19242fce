"""The ``qdrant-edge`` provider: one process owns the embedded store, the others on the same data dir use it
through the owner, and one of them takes over when the owner goes.

Qdrant Edge lets one process open a shard, so the store's directory is locked by one process, its *owner*. The
owner also serves the store on a private local socket (:mod:`~gateway_plugins.vector_stores.edge_server`); a
second gateway on the same data dir (a second assistant, ``gateway call``, ``gateway gim stats``) finds the lock
taken and becomes a *client* of that socket (:mod:`~gateway_plugins.vector_stores.edge_client`), keeping the same
protocol with the same errors.

Takeover: when the owner exits or is killed, its clients see their connections drop. Each then races for the
lock; the winner opens the store itself and serves it, the others connect to the winner. A call that met the drop
is sent again once, to whoever owns the store now: every operation of the protocol is idempotent (upserts and
deletes by id, ``ensure_collection``, reads). Nothing waits forever: finding an owner is bounded by
``takeover_timeout_seconds`` and each call by ``request_timeout_seconds``, after which the call fails with
:class:`~gateway_plugins.vector_stores.edge_wire.OwnerUnavailable` (``service_unavailable``, naming the pid).

Writes the owner acknowledged are in its shard's write-ahead log, which a process killed with ``kill -9`` leaves
complete: the next owner replays it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import structlog

from gateway.api import Filter, ProviderContext, ScoredPoint, VectorPoint
from gateway.api.vectors import FieldType
from gateway_plugins.vector_stores import edge_client, edge_wire, local_socket
from gateway_plugins.vector_stores.common import StoreClosed
from gateway_plugins.vector_stores.edge import PROVIDER, QdrantEdgeConfig, QdrantEdgeStore
from gateway_plugins.vector_stores.edge_client import EdgeStoreClient
from gateway_plugins.vector_stores.edge_server import EdgeStoreServer
from gateway_plugins.vector_stores.edge_shard import CollectionInfo
from gateway_plugins.vector_stores.edge_wire import OwnerGone, OwnerUnavailable
from gateway_plugins.vector_stores.locking import DirectoryInUse

log = structlog.get_logger(__name__)

Backend = QdrantEdgeStore | EdgeStoreClient


class SharedEdgeStore:
    """:class:`gateway.api.VectorStore` on the ``qdrant-edge`` store in ``directory``, owned by this process or
    served by the process that owns it.

    Creating it decides which (blocking for at most ``takeover_timeout_seconds`` while an owner starts);
    :class:`gateway.api.ProviderUnavailable` when neither works.
    """

    def __init__(self, directory: Path, config: QdrantEdgeConfig | None = None, *, provider: str = PROVIDER):
        self.directory = Path(directory)
        self.config = config or QdrantEdgeConfig()
        self.provider = provider
        self.socket = local_socket.socket_path(self.directory)
        self._switch = asyncio.Lock()
        self._closed = False
        self._backend, self._server = self._resolve()

    @property
    def is_owner(self) -> bool:
        """This process opened the store (and serves it to the others)."""
        return isinstance(self._backend, QdrantEdgeStore)

    @property
    def owner_pid(self) -> int:
        return os.getpid() if isinstance(self._backend, QdrantEdgeStore) else self._backend.owner_pid

    # -- who owns the store ------------------------------------------------------------------------------------

    def _resolve(self) -> tuple[Backend, EdgeStoreServer | None]:
        """Open the store (and serve it), or connect to its owner; retried until the takeover timeout."""
        share = self.config.share and local_socket.SUPPORTED
        deadline = time.monotonic() + self.config.takeover_timeout_seconds
        delay = 0.005
        while True:
            try:
                return self._own(share)
            except DirectoryInUse as exc:
                if not share:
                    raise
                holder = exc.pid
            try:
                pid = edge_client.probe(self.directory, self.socket, max(0.1, min(5.0, deadline - time.monotonic())))
            except (local_socket.PeerRefused, edge_wire.IncompatibleOwner) as exc:
                raise OwnerUnavailable(self.provider, f"refused the store's socket {self.socket}: {exc}") from None
            except OSError as exc:  # nobody listens yet (the owner is starting, or dying)
                failure = exc
            else:
                log.info("vector store served by another process", owner_pid=pid, socket=str(self.socket))
                client = EdgeStoreClient(
                    self.directory,
                    self.socket,
                    pid,
                    provider=self.provider,
                    request_timeout=self.config.request_timeout_seconds,
                    connect_timeout=self.config.takeover_timeout_seconds,
                )
                return client, None
            if time.monotonic() >= deadline:
                who = f"pid {holder}" if holder is not None else "pid unknown"
                raise OwnerUnavailable(
                    self.provider,
                    f"the vector store at {self.directory} is held by another process ({who}) that does not serve "
                    f"it on {self.socket} ({failure}); stop that process, or give this one another data_dir "
                    "(MCP_GATEWAY_DATA_DIR / [gateway] data_dir)",
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _own(self, share: bool) -> tuple[Backend, EdgeStoreServer | None]:
        store = QdrantEdgeStore(self.directory, self.config, provider=self.provider)
        if not share:
            return store, None
        server = EdgeStoreServer(store.sync, self.directory, self.socket)
        try:
            server.start()
        except OSError as exc:  # the store works here; other processes will say they cannot reach it
            log.warning("vector store not shared with other processes", socket=str(self.socket), error=str(exc))
            return store, None
        return store, server

    async def _recover(self, failed: Backend) -> None:
        """After ``failed`` lost its owner: take the store over, or connect to whoever did (once per loss)."""
        async with self._switch:
            if self._backend is not failed:
                return  # another call of this process already did
            if self._closed:
                raise StoreClosed("the qdrant-edge store is closed")
            previous = failed.owner_pid if isinstance(failed, EdgeStoreClient) else None
            await failed.close()
            with anyio.CancelScope(shield=True):  # a store opened here must not be dropped half-way
                self._backend, self._server = await anyio.to_thread.run_sync(self._resolve)
            if self.is_owner:
                log.warning("vector store taken over from a process that went away", previous_owner=previous)
            else:
                log.warning("vector store served by a new owner", previous_owner=previous, owner=self.owner_pid)

    async def _call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise StoreClosed("the qdrant-edge store is closed")
        backend = self._backend
        try:
            return await getattr(backend, op)(*args, **kwargs)
        except OwnerGone:
            pass
        await self._recover(backend)
        try:
            return await getattr(self._backend, op)(*args, **kwargs)
        except OwnerGone as exc:
            reason = f"the store's owner went away again during the retry: {exc}"
            raise OwnerUnavailable(self.provider, reason) from None

    # -- the VectorStore protocol --------------------------------------------------------------------------------

    async def ensure_collection(
        self, name: str, *, dimension: int, indexed_fields: Mapping[str, FieldType] | None = None
    ) -> None:
        await self._call("ensure_collection", name, dimension=dimension, indexed_fields=indexed_fields)

    async def list_collections(self) -> list[str]:
        return await self._call("list_collections")

    async def delete_collection(self, name: str) -> None:
        await self._call("delete_collection", name)

    async def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        await self._call("upsert", name, points)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        await self._call("delete", name, ids)

    async def query(
        self,
        name: str,
        vector: Sequence[float],
        *,
        limit: int = 10,
        offset: int = 0,
        score_threshold: float | None = None,
        filter: Filter | None = None,
    ) -> list[ScoredPoint]:
        return await self._call(
            "query", name, vector, limit=limit, offset=offset, score_threshold=score_threshold, filter=filter
        )

    async def count(self, name: str, *, filter: Filter | None = None) -> int:
        return await self._call("count", name, filter=filter)

    async def list_ids(self, name: str, *, filter: Filter | None = None) -> list[str]:
        return await self._call("list_ids", name, filter=filter)

    async def optimize(self, name: str | None = None) -> bool:
        """Build the index now (in the owner process); see :meth:`QdrantEdgeStore.optimize`."""
        return await self._call("optimize", name)

    async def info(self, name: str) -> CollectionInfo:
        return await self._call("info", name)

    async def flush(self) -> None:
        await self._call("flush")

    async def close(self) -> None:
        """Stop serving other processes (they take over), then close the store; or close this client. Idempotent."""
        if self._closed:
            return
        self._closed = True
        async with self._switch:
            server, self._server = self._server, None
            if server is not None:
                await anyio.to_thread.run_sync(server.close)
            await self._backend.close()


def create_qdrant_edge_store(ctx: ProviderContext) -> SharedEdgeStore:
    """Factory of the ``qdrant-edge`` provider: the store in the provider's data dir, owned by this process or
    served by the process that owns it."""
    config = ctx.config if isinstance(ctx.config, QdrantEdgeConfig) else QdrantEdgeConfig()
    return SharedEdgeStore(ctx.data_dir, config, provider=f"{ctx.kind}/{ctx.name}")
