"""Reading an ASGI request's body ahead of the application, which then reads it again."""

from __future__ import annotations

from starlette.types import Message, Receive

__all__ = ["BodyTooLarge", "buffered"]


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
