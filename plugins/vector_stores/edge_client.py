"""A client's side: the ``qdrant-edge`` store of another process, reached over its local socket.

:class:`EdgeStoreClient` keeps the :class:`gateway.api.VectorStore` protocol by sending each call to the owner
(:mod:`gateway_plugins.vector_stores.edge_server`) and waiting for its answer, many calls at once on one
connection per event loop. It stands for one owner: once that owner drops a connection (it exited, was killed or
is closing the store) every call raises :class:`~gateway_plugins.vector_stores.edge_wire.OwnerGone`, and the
caller (:mod:`gateway_plugins.vector_stores.edge_shared`) takes the store over or finds the new owner. An owner
that does not answer within ``request_timeout`` seconds gives
:class:`~gateway_plugins.vector_stores.edge_wire.OwnerUnavailable`: never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.api import Filter, ScoredPoint, VectorPoint, canonical_point_id
from gateway.api.vectors import FieldType
from gateway_plugins.vector_stores import edge_wire, local_socket
from gateway_plugins.vector_stores.edge_shard import CollectionInfo
from gateway_plugins.vector_stores.edge_wire import OwnerGone, OwnerUnavailable


def probe(directory: Path, path: Path, timeout: float) -> int:
    """Connect to the owner of the store in ``directory`` (blocking) and return its pid.

    ``OSError`` when nobody listens (yet); :class:`local_socket.PeerRefused` when the socket's directory or its
    owner belongs to another user; :class:`edge_wire.IncompatibleOwner` when the owner speaks another protocol
    version. (Both are ``OSError`` too: catch them first.)
    """
    local_socket.check_private_directory(path.parent)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        local_socket.check_peer(sock)
        return edge_wire.check_hello(local_socket.read_frame_blocking(sock), directory)


class _Connection:
    """One open connection: requests go out as frames, answers are matched to them by id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, owner_pid: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.owner_pid = owner_pid
        self.lost: OwnerGone | None = None
        self._reader = reader
        self._writer = writer
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._write_lock = asyncio.Lock()
        self._task = self.loop.create_task(self._read_answers())

    async def _read_answers(self) -> None:
        try:
            while True:
                answer = await local_socket.read_frame(self._reader)
                future = self._pending.pop(answer.get("id"), None) if isinstance(answer, dict) else None
                if future is not None and not future.done():
                    future.set_result(answer)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.fail(OwnerGone(f"the vector store's owner (pid {self.owner_pid}) closed the connection"))
        except Exception as exc:  # an answer no owner of ours sends: the connection cannot be trusted any more
            self.fail(OwnerGone(f"the vector store's owner (pid {self.owner_pid}) sent a malformed answer: {exc}"))

    def fail(self, error: OwnerGone) -> None:
        if self.lost is None:
            self.lost = error
        for future in self._pending.values():
            if not future.done():
                future.set_exception(self.lost)
        self._pending.clear()
        self._writer.close()

    async def request(self, request_id: int, frame: bytes, limit: float | None, provider: str) -> Any:
        """Send ``frame`` and wait for its answer (at most ``limit`` seconds, ``None``: as long as it takes)."""
        if self.lost is not None:
            raise self.lost
        future: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._pending[request_id] = future
        try:
            try:
                async with self._write_lock:
                    self._writer.write(frame)
                    await self._writer.drain()
            except ConnectionError:
                self.fail(OwnerGone(f"the vector store's owner (pid {self.owner_pid}) closed the connection"))
            try:
                async with asyncio.timeout(limit):
                    answer = await future
            except TimeoutError:
                raise OwnerUnavailable(
                    provider,
                    f"the process that owns the store (pid {self.owner_pid}) did not answer within {limit:g} s; "
                    "it may be busy building an index, or stuck",
                ) from None
        finally:
            self._pending.pop(request_id, None)
        if "error" in answer:
            raise edge_wire.decode_error(answer["error"], self.owner_pid, provider)
        return answer.get("ok")

    async def close(self) -> None:
        self._task.cancel()
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)


class EdgeStoreClient:
    """:class:`gateway.api.VectorStore` served by the process ``owner_pid`` that owns ``directory``."""

    def __init__(
        self,
        directory: Path,
        path: Path,
        owner_pid: int,
        *,
        provider: str,
        request_timeout: float,
        connect_timeout: float,
    ) -> None:
        self.directory = directory
        self.path = path
        self.owner_pid = owner_pid
        self.provider = provider
        self._request_timeout = request_timeout
        self._connect_timeout = connect_timeout
        self._ids = itertools.count(1)
        self._connection: _Connection | None = None
        self._gone: OwnerGone | None = None

    async def _connect(self) -> _Connection:
        connection = self._connection
        loop = asyncio.get_running_loop()
        if connection is not None and connection.loop is loop:
            if connection.lost is not None:
                self._gone = connection.lost
                raise connection.lost
            return connection
        if self._gone is not None:
            raise self._gone
        try:
            async with asyncio.timeout(self._connect_timeout):
                reader, writer = await asyncio.open_unix_connection(str(self.path))
                try:
                    local_socket.check_peer(writer.get_extra_info("socket"))
                    pid = edge_wire.check_hello(await local_socket.read_frame(reader), self.directory)
                except BaseException:
                    writer.close()
                    raise
        except (local_socket.PeerRefused, edge_wire.IncompatibleOwner) as exc:
            raise OwnerUnavailable(self.provider, f"refused the store's socket {self.path}: {exc}") from None
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            self._gone = OwnerGone(f"cannot reach the vector store's owner (pid {self.owner_pid}): {exc}")
            raise self._gone from None
        if self._connection is not None and self._connection.loop is loop:  # another task connected meanwhile
            writer.close()
            return self._connection
        self.owner_pid = pid
        self._connection = _Connection(reader, writer, pid)
        return self._connection

    async def _call(self, op: str, args: Mapping[str, Any], *, wait: bool = False) -> Any:
        """Send ``op`` to the owner and return its answer (``wait``: however long it takes, else at most the
        request timeout)."""
        request_id = next(self._ids)
        try:
            frame = local_socket.encode_frame({"id": request_id, "op": op, "args": args})
        except TypeError as exc:  # what JSON cannot hold (a payload integer beyond 64 bits...)
            raise ValueError(f"a {op} request for the vector store cannot be encoded: {exc}") from None
        connection = await self._connect()
        return await connection.request(request_id, frame, None if wait else self._request_timeout, self.provider)

    # -- the VectorStore protocol --------------------------------------------------------------------------------

    async def ensure_collection(
        self, name: str, *, dimension: int, indexed_fields: Mapping[str, FieldType] | None = None
    ) -> None:
        if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
            raise ValueError(f"a collection's dimension is a positive integer, got {dimension!r}")
        fields = dict(indexed_fields or {})
        await self._call("ensure_collection", {"name": name, "dimension": dimension, "indexed_fields": fields})

    async def list_collections(self) -> list[str]:
        return list(await self._call("list_collections", {}))

    async def delete_collection(self, name: str) -> None:
        await self._call("delete_collection", {"name": name})

    async def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        await self._call("upsert", edge_wire.upsert_args(name, points))

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        await self._call("delete", {"name": name, "ids": [canonical_point_id(i) for i in ids]})

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
        args = edge_wire.query_args(name, vector, limit, offset, score_threshold, filter)
        return edge_wire.scored(await self._call("query", args))

    async def count(self, name: str, *, filter: Filter | None = None) -> int:
        return int(await self._call("count", {"name": name, "filter": edge_wire.filter_args(filter)}))

    async def list_ids(self, name: str, *, filter: Filter | None = None) -> list[str]:
        return list(await self._call("list_ids", {"name": name, "filter": edge_wire.filter_args(filter)}))

    async def flush(self) -> None:
        await self._call("flush", {})

    async def optimize(self, name: str | None = None) -> bool:
        """Build the index in the owner (waits as long as the build takes)."""
        return bool(await self._call("optimize", {"name": name}, wait=True))

    async def info(self, name: str) -> CollectionInfo:
        return edge_wire.collection_info(await self._call("info", {"name": name}))

    async def close(self) -> None:
        """Close this process's connection; the owner and its store are untouched."""
        connection, self._connection = self._connection, None
        if connection is not None:
            if connection.loop is asyncio.get_running_loop():
                await connection.close()
            else:
                with contextlib.suppress(Exception):  # its loop may be closed already
                    connection.fail(OwnerGone("closed"))
