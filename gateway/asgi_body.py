"""Reading an ASGI request's body ahead of the application, which then reads it again."""

from __future__ import annotations

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
    gives next is the disconnect)."""
    gone = False
    done: list[T] = []
    failed: list[Exception] = []

    async def watch(cancel: anyio.CancelScope) -> None:
        nonlocal gone
        while (await receive())["type"] != "http.disconnect":
            pass
        gone = True
        cancel.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(watch, group.cancel_scope)
        try:
            done.append(await work())
        except Exception as exc:  # raised as it is, not in the task group's exception group
            failed.append(exc)
        group.cancel_scope.cancel()
    if failed:
        raise failed[0]
    if gone or not done:
        raise ClientGone
    return done[0]
