"""The owner's side: serving an open ``qdrant-edge`` store to the other processes of the same user on its data dir.

The server runs an asyncio event loop of its own in a daemon thread, so it serves other processes whatever the
owner's own loop is doing and never keeps the process from exiting. It calls the store's blocking operations
(:class:`~gateway_plugins.vector_stores.edge_sync.SyncEdgeStore`, thread-safe) as a local caller would: short ones
on its own thread, the rest on a small thread pool. Each connection is greeted (:func:`edge_wire.hello`), then
reads requests and answers each one as soon as it is done, up to :data:`MAX_IN_FLIGHT` at a time per connection.

Closing stops accepting, lets the requests in flight finish (for at most :data:`DRAIN_SECONDS`), closes the
connections (the clients then take over, see :mod:`gateway_plugins.vector_stores.edge_shared`) and removes the
socket. The caller closes the store afterwards, while it still holds the directory lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import structlog

from gateway_plugins.vector_stores import edge_wire, local_socket
from gateway_plugins.vector_stores.edge_sync import SyncEdgeStore

log = structlog.get_logger(__name__)

MAX_IN_FLIGHT = 64
DRAIN_SECONDS = 5.0
WORKERS = 4


class EdgeStoreServer:
    """Serves ``store`` (opened, and so locked, by this process) on the socket ``path``. :meth:`start`, then
    :meth:`close`."""

    def __init__(self, store: SyncEdgeStore, directory: Path, path: Path) -> None:
        self.store = store
        self.directory = directory
        self.path = path
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._hello = edge_wire.hello(directory)

    def start(self) -> None:
        """Listen on the socket (replacing a dead owner's leftover one). Raises ``OSError`` if it cannot."""
        local_socket.private_directory(self.path.parent)
        self._loop = asyncio.new_event_loop()
        self._executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="qdrant-edge-share")
        self._thread = threading.Thread(target=self._loop.run_forever, name="qdrant-edge-share", daemon=True)
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=30)
        except BaseException:
            self._stop_loop()
            raise
        log.info("vector store shared with other processes", socket=str(self.path), pid=os.getpid())

    async def _listen(self) -> None:
        # Only the holder of the directory lock gets here, so a socket file already there is a dead owner's.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._server = await asyncio.start_unix_server(self._connection, path=str(self.path))
        os.chmod(self.path, 0o600)

    def close(self) -> None:
        """Stop serving (idempotent). Blocks until the requests in flight are answered or the drain time is up."""
        loop = self._loop
        if loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=DRAIN_SECONDS * 2)
        except Exception:
            log.warning("the vector store's socket did not close cleanly", exc_info=True)
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=DRAIN_SECONDS)
            if not self._thread.is_alive():
                loop.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=DRAIN_SECONDS)
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), DRAIN_SECONDS)

    # -- one connection ----------------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            local_socket.check_peer(sock)
        except local_socket.PeerRefused as exc:
            log.warning("vector store connection refused", reason=str(exc))
            writer.close()
            return
        self._writers.add(writer)
        write_lock = asyncio.Lock()
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        try:
            await self._send(writer, write_lock, self._hello)
            while True:
                try:
                    request = await local_socket.read_frame(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return  # the client went away (or sent garbage): nothing to answer
                await slots.acquire()
                task = asyncio.get_running_loop().create_task(self._answer(request, writer, write_lock))
                self._tasks.add(task)

                def done(task: asyncio.Task[Any], slots: asyncio.Semaphore = slots) -> None:
                    self._tasks.discard(task)
                    slots.release()

                task.add_done_callback(done)
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, request: Any, writer: asyncio.StreamWriter, write_lock: asyncio.Lock) -> None:
        request_id = request.get("id") if isinstance(request, dict) else None
        op = "?"
        try:
            op, args = edge_wire.checked_request(request)
            handler = edge_wire.HANDLERS[op]
            if edge_wire.runs_short(self.store, op, args):
                result = handler(self.store, args)
            else:
                result = await asyncio.get_running_loop().run_in_executor(self._executor, handler, self.store, args)
            answer: dict[str, Any] = {"id": request_id, "ok": result}
        except Exception as exc:
            answer = {"id": request_id, "error": edge_wire.encode_error(exc, op)}
        try:
            await self._send(writer, write_lock, answer)
        except (ConnectionError, TypeError) as exc:  # the client left; or a result JSON cannot hold
            if isinstance(exc, TypeError):
                error = {"kind": "internal", "message": f"the result cannot be sent: {exc}"}
                with contextlib.suppress(ConnectionError):
                    await self._send(writer, write_lock, {"id": request_id, "error": error})

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, lock: asyncio.Lock, message: Any) -> None:
        frame = local_socket.encode_frame(message)
        async with lock:
            writer.write(frame)
            await writer.drain()
