"""The requests a stdio client sent that are not answered yet, so that the end of stdin waits for their answers.

A client may write its requests and close stdin at once (``printf '...' | gateway serve``, or a client shutting
down politely, as the MCP stdio transport describes). The SDK's server stops reading at the end of its input and
cancels whatever it is still working on, so such a client lost its last answers. The gateway therefore holds the
end of stdin back from the SDK until every request read so far has been answered, for at most
``transport.shutdown_grace_seconds``; a signal still stops the server at once.
"""

from __future__ import annotations

from typing import Any

import anyio

from gateway.mcp_adapter.sdk import SessionMessage, cancelled_request_id_from_params, coerce_request_id, mt

__all__ = ["AnswerWatch", "Outstanding"]

_CANCELLED = "notifications/cancelled"


class Outstanding:
    """Ids of requests read and not yet answered (a request the client cancelled is not answered, so it leaves)."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}
        self._count = 0
        self._changed = anyio.Event()

    def __len__(self) -> int:
        return self._count

    def read(self, message: dict[str, Any]) -> None:
        """Note ``message`` (a JSON-RPC message as JSON), read from the client. Ids correlate as the SDK's do
        (``"7"`` and ``7`` are one)."""
        if "method" not in message:
            return  # a response to a request of the server's
        if "id" in message:
            key = coerce_request_id(message["id"])
            self._ids[key] = self._ids.get(key, 0) + 1
            self._count += 1
        elif message["method"] == _CANCELLED:
            request_id = cancelled_request_id_from_params(message.get("params"))
            if request_id is not None:
                self._settle(coerce_request_id(request_id))

    def answered(self, message: Any) -> None:
        """Note ``message``, written to the client by the SDK's server."""
        if isinstance(message, mt.JSONRPCResponse | mt.JSONRPCError) and message.id is not None:
            self._settle(coerce_request_id(message.id))

    def _settle(self, request_id: Any) -> None:
        count = self._ids.pop(request_id, 0)
        if count > 1:
            self._ids[request_id] = count - 1
        if count:
            self._count -= 1
            self._changed.set()
            self._changed = anyio.Event()

    async def settled(self) -> None:
        """Return once every request read has been answered."""
        while self._ids:
            await self._changed.wait()


class AnswerWatch:
    """The SDK's outgoing message stream, telling ``outstanding`` of each answer it takes."""

    def __init__(self, stream: Any, outstanding: Outstanding) -> None:
        self._stream = stream
        self._outstanding = outstanding

    async def send(self, item: SessionMessage) -> None:
        await self._stream.send(item)
        self._outstanding.answered(item.message)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> AnswerWatch:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._stream.__aexit__(*exc_info)
