"""A small HTTP/1.1 client for one origin: keep-alive connections, TLS, and the environment's proxy.

The gateway posts every remote tool call to its upstream, so this exchange is its hottest outbound path. A general
client (``aiohttp``: tracing, cookies, URL objects, a timer per read) cost a fifth of the gateway's CPU per call
(``bench/federation_overhead.py``). This one does only what that exchange needs: HTTP/1.1 with ``httptools``
parsing the responses (chunked, sized or close-delimited bodies), a pool of idle keep-alive connections, TLS with
the system's trust store, and a proxy from ``HTTP(S)_PROXY``/``ALL_PROXY`` unless ``NO_PROXY`` exempts the host
(read once, as the SDK's client reads them; an ``https://`` upstream is tunnelled with ``CONNECT``).

Leaving a response before its end (a cancelled call) closes its connection: to an MCP server that is how a call is
cancelled. A caller that has what it needs from an event stream says so (:meth:`Response.done`): the stream's end
(an MCP server closes it right after the answer) is then awaited off the caller's path and the connection reused,
rather than a new connection (and a socket in ``TIME_WAIT``) per call.

A request is never sent twice: a tool call is not idempotent, and a connection that fails after the request went
out cannot say whether the server read it. So a kept-alive connection is only reused while it is known to be open
and has been idle under :data:`KEEPALIVE_EXPIRY` (below the keep-alive timeout of common servers, which close idle
connections after 5 s); one that ends after the request was written fails that request.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies_environment, proxy_bypass_environment

import anyio
import httptools

__all__ = ["ConnectionClosed", "HttpClient", "Response"]

MAX_IDLE = 32
"""Idle keep-alive connections kept per origin."""
KEEPALIVE_EXPIRY = 4.0
"""Seconds an idle connection stays reusable (uvicorn, Node and most servers close theirs after 5 s)."""
FINISH_GRACE = 5.0
"""Seconds the rest of a body the caller no longer needs may take to end before its connection is closed."""
_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the client writes itself: a caller's are ignored."""


class ConnectionClosed(ConnectionError):
    """The connection ended before the response did."""


@dataclass(frozen=True)
class _Route:
    """Where to connect and what to put on the request line."""

    host: str
    port: int
    tls: bool
    target: str
    """The request target: the path, or the absolute URL for a plain-HTTP proxy."""
    tunnel: str | None = None
    """``host:port`` to ``CONNECT`` to through the proxy before TLS."""
    proxy_auth: str | None = None
    """A ``Proxy-Authorization`` value, from the proxy URL's user info."""


def _route(url: str) -> tuple[_Route, str, str]:
    """The route to ``url``, its ``Host`` header and the TLS server name."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    host_name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    host_header = host_name if parts.port is None else f"{host_name}:{parts.port}"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxies = getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or proxy_bypass_environment(parts.hostname, proxies):
        return _Route(parts.hostname, port, tls, path), host_header, parts.hostname
    via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if via.scheme != "http" or not via.hostname:
        raise ValueError(f"unsupported proxy {proxy!r}: only http:// proxies are supported")
    auth = None
    if via.username is not None:
        pair = f"{unquote(via.username)}:{unquote(via.password or '')}".encode()
        auth = "Basic " + base64.b64encode(pair).decode()
    proxy_port = via.port or 80
    if tls:
        route = _Route(via.hostname, proxy_port, True, path, tunnel=f"{host_name}:{port}", proxy_auth=auth)
    else:
        route = _Route(via.hostname, proxy_port, False, f"http://{host_header}{path}", proxy_auth=auth)
    return route, host_header, parts.hostname


class _Connection(asyncio.Protocol):
    """One connection, one request at a time; the response's status, headers and body as they arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self.on_progress: Callable[[], None] | None = None
        """Called on anything that arrives or fails while nobody waits (a connection finishing its body)."""
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.received = False
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.failure: Exception | None = None
        self.chunks: deque[bytes] = deque()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionClosed(f"the server's answer is not HTTP: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.complete:
            return
        if self.headers_done and "content-length" not in self.headers and "transfer-encoding" not in self.headers:
            self.on_message_complete()  # the body ran until the server closed the connection
        else:
            self._fail(ConnectionClosed(str(exc) if exc else "the server closed the connection"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self._wake()

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self._parser.should_keep_alive()  # only known here: the parser resets after
        self._wake()

    def _fail(self, exc: Exception) -> None:
        if self.failure is None:
            self.failure = exc
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        elif self.on_progress is not None:
            self.on_progress()

    async def wait(self) -> None:
        """Until something more arrives (or the connection fails: raises)."""
        if self.failure is not None:
            raise self.failure
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self.failure is not None:
            raise self.failure

    def send(self, data: bytes) -> None:
        self._reset()
        if self.transport is None or self.transport.is_closing():
            raise ConnectionClosed("the server closed the connection")
        self.transport.write(data)

    @property
    def reusable(self) -> bool:
        return self.keep_alive and self.transport is not None

    @property
    def open(self) -> bool:
        """Neither side has closed it (a server closing an idle connection is seen once the loop has read its FIN)."""
        return self.transport is not None and not self.transport.is_closing() and self.failure is None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class Response:
    """A response being received: ``status``, ``headers`` (lower-case names), and the body by :meth:`read` or
    :meth:`chunks`."""

    def __init__(self, connection: _Connection) -> None:
        self._conn = connection
        self.status = connection.status
        self.headers = connection.headers
        self.finished_with = False

    def done(self) -> None:
        """The caller needs no more of the body: let it end and keep the connection (leaving without this call
        before the end closes the connection)."""
        self.finished_with = True

    async def read(self) -> bytes:
        """The whole body."""
        conn = self._conn
        while not conn.complete:
            await conn.wait()
        return b"".join(conn.chunks)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's pieces as they arrive."""
        conn = self._conn
        while True:
            while conn.chunks:
                yield conn.chunks.popleft()
            if conn.complete:
                return
            await conn.wait()


class HttpClient:
    """HTTP/1.1 requests to the origin of ``url`` over pooled keep-alive connections (``aclose`` ends them)."""

    def __init__(self, url: str, *, connect_timeout: float = 30.0, user_agent: str = "mcp-gateway") -> None:
        self._route, self._host, self._server_name = _route(url)
        self._connect_timeout = connect_timeout
        self._user_agent = user_agent
        self._tls = ssl.create_default_context() if self._route.tls else None
        self._idle: list[_Connection] = []
        self._closed = False

    @asynccontextmanager
    async def post(self, headers: Mapping[str, str], body: bytes) -> AsyncIterator[Response]:
        """POST ``body`` to the URL's target; the response, from its status line on. Leaving before the body's end
        closes the connection."""
        head = [f"POST {self._route.target} HTTP/1.1", f"Host: {self._host}"]
        if self._route.proxy_auth is not None and self._route.tunnel is None:
            head.append(f"Proxy-Authorization: {self._route.proxy_auth}")
        head += [f"{name}: {value}" for name, value in headers.items() if name.lower() not in _FRAMING]
        if not any(name.lower() == "user-agent" for name in headers):
            head.append(f"User-Agent: {self._user_agent}")
        head.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        conn = await self._exchange(request)
        response = Response(conn)
        try:
            yield response
        finally:
            if conn.complete or not response.finished_with or conn.failure is not None:
                self._release(conn)
            else:
                self._finish(conn)

    def _release(self, conn: _Connection) -> None:
        if conn.reusable and not self._closed and len(self._idle) < MAX_IDLE:
            conn.idle_since = asyncio.get_running_loop().time()
            self._idle.append(conn)
        else:
            conn.close()

    def _finish(self, conn: _Connection) -> None:
        """Release ``conn`` once its body ends; close it if that takes over :data:`FINISH_GRACE` seconds."""
        timer = asyncio.get_running_loop().call_later(FINISH_GRACE, conn.close)

        def progress() -> None:
            conn.chunks.clear()
            if conn.complete or conn.failure is not None:
                timer.cancel()
                conn.on_progress = None
                self._release(conn)

        conn.on_progress = progress

    async def _exchange(self, request: bytes) -> _Connection:
        """Send ``request`` once; the connection once the response's headers are in."""
        conn = self._reusable() or await self._connect()
        conn.send(request)
        return await self._headers(conn)

    def _reusable(self) -> _Connection | None:
        """The most recently used idle connection still open and young enough; older or closed ones are dropped."""
        now = asyncio.get_running_loop().time()
        while self._idle:
            conn = self._idle.pop()
            if conn.open and now - conn.idle_since < KEEPALIVE_EXPIRY:
                return conn
            conn.close()
        return None

    async def _headers(self, conn: _Connection) -> _Connection:
        try:
            while not conn.headers_done:
                await conn.wait()
        except BaseException:
            conn.close()
            raise
        return conn

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        route = self._route
        try:
            with anyio.fail_after(self._connect_timeout):
                if route.tunnel is None:
                    _, conn = await loop.create_connection(
                        _Connection, route.host, route.port, ssl=self._tls, server_hostname=self._sni()
                    )
                    return conn
                return await self._tunnel(loop, route)
        except TimeoutError:
            raise TimeoutError(f"no connection to {route.host}:{route.port} within {self._connect_timeout} s") from None

    def _sni(self) -> str | None:
        return self._server_name if self._tls is not None else None

    async def _tunnel(self, loop: asyncio.AbstractEventLoop, route: _Route) -> _Connection:
        """A TLS connection to the origin through the proxy's ``CONNECT`` tunnel."""
        _, proxy = await loop.create_connection(_Connection, route.host, route.port)
        head = [f"CONNECT {route.tunnel} HTTP/1.1", f"Host: {route.tunnel}"]
        if route.proxy_auth is not None:
            head.append(f"Proxy-Authorization: {route.proxy_auth}")
        proxy.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await self._headers(proxy)
        if proxy.status != 200 or proxy.transport is None:
            proxy.close()
            raise ConnectionClosed(f"the proxy refused the tunnel to {route.tunnel} (HTTP {proxy.status})")
        conn = _Connection()
        try:
            transport = await loop.start_tls(proxy.transport, conn, self._tls, server_hostname=self._sni())
        except BaseException:
            proxy.close()
            raise
        if transport is None:
            raise ConnectionClosed("the proxy closed the tunnel")
        conn.connection_made(transport)
        return conn

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
