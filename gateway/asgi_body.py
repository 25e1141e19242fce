"""Reading an ASGI request's body ahead of the application, which then reads it again."""

from __future__ import annotations

from starlette.types import Message, Receive

__all__ = ["buffered"]


async def buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The request body, and a ``receive`` that replays it before passing on what comes next (a message other than
    the body's, such as an early ``http.disconnect``, is kept for its turn)."""
    chunks: list[bytes] = []
    pending: list[Message] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            pending.append(message)
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    pending.insert(0, {"type": "http.request", "body": body, "more_body": False})

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return body, replay
