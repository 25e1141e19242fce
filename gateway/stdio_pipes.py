"""This process's stdin and stdout as async line streams, for the MCP stdio transport.

The SDK's stdio transport reads each line and writes each message through a worker thread (``anyio.wrap_file``):
three thread hops per call, each costing more than the JSON of a small message on a loaded 2-core machine. When a
descriptor is a pipe, a socket or a terminal, these streams read and write it through the event loop instead; a
regular file (``gateway serve < requests.jsonl > out.jsonl``), which the event loop cannot watch, is read and
written through a worker thread as the SDK does. Either way the gateway holds the lines before the SDK sees them
(see :mod:`gateway.mcp_adapter`). While they serve, descriptor 0 reads the null device and descriptor 1 writes to
stderr, so a handler's stray ``print`` or a child process never writes into the wire (the SDK's transport does
the same); both are restored afterwards, blocking as before, even when serving is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import selectors
import stat
import sys
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio

__all__ = ["LineSink", "LineSource", "PipeLines", "PipeWriter", "stdio_pipes"]


class LineSource(Protocol):
    """Text lines read from stdin (``async for line in source``), newline included."""

    def __aiter__(self) -> Any: ...


class LineSink(Protocol):
    """Text written to stdout: ``await write(text)`` queues it, ``await flush()`` waits until it is taken."""

    async def write(self, text: str) -> Any: ...

    async def flush(self) -> None: ...


MAX_LINE_BYTES = 256 * 1024 * 1024
"""Longest message line accepted on stdin (the reader buffers one line at a time)."""
TOO_LONG = f"(a line longer than {MAX_LINE_BYTES} bytes)\n"
"""What the reader yields for a line too long to take: not JSON, so it is answered with a parse error."""
_CLOSE_SECONDS = 2.0
"""How long closing waits for the last output to reach a client that stopped reading."""


class PipeLines:
    """The text lines arriving on a pipe (``async for line in lines``), decoded as UTF-8."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:  # the last line, without its newline
            line = end.partial
        except asyncio.LimitOverrunError as overrun:  # longer than MAX_LINE_BYTES: skipped, answered as not JSON
            await self._skip_line(overrun.consumed)
            return TOO_LONG
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")

    async def _skip_line(self, buffered: int) -> None:
        """Drop the rest of a line that is too long, keeping what follows it."""
        while True:
            await self._reader.readexactly(buffered)
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as overrun:
                buffered = overrun.consumed
            except asyncio.IncompleteReadError:
                return


class _FlowControl(asyncio.Protocol):
    """Write-side protocol: lets :meth:`PipeWriter.flush` wait while the pipe's buffer is full."""

    def __init__(self) -> None:
        self._resumed: asyncio.Future[None] | None = None
        self._lost: BaseException | None = None
        self.closed = asyncio.Event()

    def pause_writing(self) -> None:
        self._resumed = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)
        self._resumed = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        self._lost = exc or BrokenPipeError("the client closed stdout")
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_exception(self._lost)

    async def drained(self) -> None:
        if self._lost is not None:
            raise self._lost
        if self._resumed is not None:
            await self._resumed


class PipeWriter:
    """Text written to a pipe: ``await write(text)`` queues it, ``await flush()`` waits until the pipe takes it."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _FlowControl) -> None:
        self._transport = transport
        self._protocol = protocol

    async def write(self, text: str) -> None:
        if self._protocol.closed.is_set():
            raise BrokenPipeError("the client closed stdout")
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._protocol.drained()


def _is_pipe_like(fd: int, events: int = selectors.EVENT_READ) -> bool:
    """What asyncio's pipe transports accept: a pipe, a socket or a character device (not a regular file) that the
    event loop's selector can watch (epoll refuses some devices, ``/dev/null`` among them: the transport would fail
    later, in a callback, and never see the end of input)."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, events)
        except OSError:
            return False
    return True


@contextlib.asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[LineSource, LineSink]]:
    """Stdin's lines and a stdout writer: on the event loop for pipe-like descriptors, through a worker thread for
    regular files. The descriptors are diverted while serving and restored on exit."""
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    blocking = os.get_blocking(wire_in), os.get_blocking(wire_out)
    null = os.open(os.devnull, os.O_RDONLY)
    flow = _FlowControl()
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.BaseTransport | None = None
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        lines: LineSource
        sink: LineSink
        if _is_pipe_like(wire_in):
            reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0, closefd=False)
            )
            lines = PipeLines(reader)
        else:
            raw_in = os.fdopen(wire_in, "rb", closefd=False)
            lines = anyio.wrap_file(io.TextIOWrapper(raw_in, encoding="utf-8", errors="replace", newline="\n"))
        if _is_pipe_like(wire_out, selectors.EVENT_WRITE):
            write_transport, _ = await loop.connect_write_pipe(
                lambda: flow, os.fdopen(wire_out, "wb", buffering=0, closefd=False)
            )
            assert isinstance(write_transport, asyncio.WriteTransport)
            sink = PipeWriter(write_transport, flow)
        else:
            raw_out = os.fdopen(wire_out, "wb", closefd=False)
            sink = anyio.wrap_file(io.TextIOWrapper(raw_out, encoding="utf-8", newline="\n"))
        yield lines, sink
    finally:
        with anyio.CancelScope(shield=True):  # a cancelled server still hands back the descriptors it took
            if read_transport is not None:
                read_transport.close()
            if write_transport is not None:
                write_transport.close()  # sends what it still holds, then reports the connection lost
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_CLOSE_SECONDS):
                        await flow.closed.wait()
        os.set_blocking(wire_in, blocking[0])
        os.set_blocking(wire_out, blocking[1])
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        for fd in (wire_in, wire_out, null):
            os.close(fd)
