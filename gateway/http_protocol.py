"""The HTTP/1.1 connection protocol the gateway serves with: uvicorn's ``httptools`` one, with the limits a server
reachable by untrusted clients needs and uvicorn lacks.

* A request's head (request line and headers) may hold at most ``max_header_bytes``: past it the client gets
  ``431`` and the connection closes. Without the cap one connection sending a header that never ends grew the
  process by the size of that header (200 MB took 570 MB).
* The head must arrive within ``header_timeout_seconds`` of the connection opening or of its first byte (a
  connection that sends headers a byte at a time holds a socket and a parser for nothing), and the body within
  ``body_timeout_seconds`` of the head or of its previous piece (a slow upload goes on; a stalled one is cut): the
  connection is closed (the application, if running, sees ``http.disconnect``). Waiting for a response, and idle
  keep-alive, are not bounded here (uvicorn closes an idle keep-alive connection after 5 s).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HttpLimits", "bounded_protocol"]

log = structlog.get_logger(__name__)

_REASON = b"the request's headers exceed the server's limit"
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_REASON), _REASON)
)


LINGER_SECONDS = 1.0
"""After a 431, how long the connection stays open (reading and dropping) so the client can read the answer."""


@dataclass(frozen=True)
class HttpLimits:
    """``[transport] max_header_bytes``, ``header_timeout_seconds`` and ``body_timeout_seconds``."""

    max_header_bytes: int = 65_536
    header_timeout_seconds: float = 30.0
    body_timeout_seconds: float = 60.0


class _BoundedHttpToolsProtocol(HttpToolsProtocol):
    limits = HttpLimits()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._raw_head = 0
        """Bytes received since the head began (bounds what the parser holds of a head that never ends)."""
        self._head = 0
        """The parsed head's size: request target and header lines (a head sent whole in one read is caught here)."""
        self._in_head = True
        self._refused = False
        self._timer: asyncio.TimerHandle | None = None
        self._arm(self.limits.header_timeout_seconds, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # read and dropped, so closing does not reset the connection before the 431 is read
        if not self._in_head:
            super().data_received(data)
            return
        self._raw_head += len(data)
        super().data_received(data)  # may complete the head: what arrived with it is the body
        if self._in_head and self._raw_head > self.limits.max_header_bytes:
            self._refuse_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head = 0
        if self._timer is None:  # the next request of a kept-alive connection begins
            self._arm(self.limits.header_timeout_seconds, "headers")

    def on_url(self, url: bytes) -> None:
        self._head += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head += len(name) + len(value) + 4
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head > self.limits.max_header_bytes:
            self._refuse_head()
            return  # the application never sees it
        self._arm(self.limits.body_timeout_seconds, "body")
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        self._arm(self.limits.body_timeout_seconds, "body")  # the body may take long, not stall long
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._disarm()
        self._in_head, self._raw_head = True, 0
        super().on_message_complete()

    def _refuse_head(self) -> None:
        if self._refused or self.transport.is_closing():
            return
        self._refused = True
        self._disarm()
        log.warning("request headers too large", client=_client(self), limit=self.limits.max_header_bytes)
        self.transport.write(_TOO_LARGE)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _arm(self, seconds: float, part: str) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired, part, seconds)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, part: str, seconds: float) -> None:
        self._timer = None
        if not self.transport.is_closing():
            log.warning("request too slow: connection closed", client=_client(self), waited_for=part, seconds=seconds)
            self.transport.close()


def _client(protocol: Any) -> str | None:
    client = getattr(protocol, "client", None)
    return f"{client[0]}:{client[1]}" if client else None


def bounded_protocol(limits: HttpLimits) -> type[asyncio.Protocol]:
    """uvicorn's ``httptools`` protocol class, held to ``limits`` (for ``uvicorn.Config(http=...)``)."""
    return type("BoundedHttpToolsProtocol", (_BoundedHttpToolsProtocol,), {"limits": limits})
