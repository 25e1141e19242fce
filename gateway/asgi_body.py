"""Reading an ASGI request's body ahead of the application (which reads it again), and the disconnect after it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from starlette.types import Message, Receive

__all__ = ["BodyTooLarge", "ClientGone", "buffered", "until_disconnected"]

T = TypeVar("T")


class ClientGone(Exception):
    """The client hung up before its answer was ready: the work was cancelled, and nobody is there to answer."""


class BodyTooLarge(Exception):
    """The body went past the ``limit`` given to :func:`buffered` (reading stopped there)."""


async def buffered(receive: Receive, *, limit: int | None = None) -> tuple[bytes, Receive]:
    """The request body, and a ``receive`` that replays it before passing on what comes next (a message other than
    the body's, such as an early ``http.disconnect``, is kept for its turn). Raises :class:`BodyTooLarge` as soon
    as more than ``limit`` bytes have arrived."""
    chunks: list[bytes] = []
    size = 0
    pending: list[Message] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            pending.append(message)
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    pending.insert(0, {"type": "http.request", "body": body, "more_body": False})

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return body, replay


async def until_disconnected(receive: Receive, work: Callable[[], Awaitable[T]]) -> T:
    """``work()``, cancelled when the client hangs up first (:class:`ClientGone` then): a REST call that nobody
    waits for any more stops, as an MCP call does. ``receive`` must have delivered the whole body already (what it
    gives next is the disconnect). The watcher is a bare asyncio task, as on the MCP direct path: no task group."""
    with anyio.CancelScope() as scope:
        watcher = asyncio.ensure_future(_cancel_on_disconnect(receive, scope))
        try:
            return await work()
        finally:
            watcher.cancel()
    raise ClientGone


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
