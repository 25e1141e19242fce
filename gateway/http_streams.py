"""Clients' event streams end when the HTTP server stops.

A handshake-era MCP client keeps a GET event stream open on the MCP endpoint for the whole session. uvicorn's
graceful stop waits for every open response, so without this the stop would wait until the client hangs up or
``transport.shutdown_grace_seconds`` runs out (and then log the cancelled stream as an error). At the stop the
streams are ended cleanly (the response completes); requests in flight still get the grace.
"""

from __future__ import annotations

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class EventStreams:
    """ASGI middleware: GET requests on ``path`` (event streams) run until :meth:`end_all` is called."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path
        self._open: set[anyio.CancelScope] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        started = ended = False

        async def tracking_send(message: Message) -> None:
            nonlocal started, ended
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                ended = True
            await send(message)

        with anyio.CancelScope() as stream:
            self._open.add(stream)
            try:
                await self.app(scope, receive, tracking_send)
            finally:
                self._open.discard(stream)
        if stream.cancelled_caught and started and not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def end_all(self) -> None:
        """End every open event stream (the server is stopping)."""
        for stream in list(self._open):
            stream.cancel()
