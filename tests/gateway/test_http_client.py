"""The gateway's HTTP/1.1 client (:mod:`gateway.http_client`) against real servers: raw sockets where the test must
control the bytes (a body that ends when the connection does, a server that drops a kept-alive connection, a
client that gives up), and ``aiohttp``'s server for TLS and a ``CONNECT`` proxy (the MCP-level exchange is in
``tests/gateway/test_upstream_http.py``)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
import trustme
from aiohttp import web

from gateway.http_client import ConnectionClosed, HttpClient

pytestmark = pytest.mark.anyio

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


@pytest.fixture(autouse=True)
def _no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


@asynccontextmanager
async def _raw_server(script: Script) -> AsyncIterator[str]:
    """A server that runs ``script`` on each connection; its URL."""
    server = await asyncio.start_server(script, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    finally:
        server.close()


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length"))
    return head + await reader.readexactly(length)


def _ok(body: bytes, *extra: bytes) -> bytes:
    head = [b"HTTP/1.1 200 OK", b"Content-Type: application/json", b"Content-Length: %d" % len(body), *extra]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


async def test_a_request_line_headers_and_a_sized_body_on_one_kept_alive_connection() -> None:
    requests: list[bytes] = []
    connections = 0

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while not reader.at_eof():
            try:
                requests.append(await _read_request(reader))
            except asyncio.IncompleteReadError:
                break
            writer.write(_ok(b'{"n": %d}' % len(requests)))

    async with _raw_server(script) as url:
        client = HttpClient(url, user_agent="tester/1")
        answers = []
        for _ in range(3):
            async with client.post({"X-Key": "k", "Content-Length": "999", "Host": "evil"}, b'{"a":1}') as response:
                answers.append((response.status, response.headers["content-type"], await response.read()))
        await client.aclose()
    assert answers == [(200, "application/json", b'{"n": %d}' % n) for n in (1, 2, 3)]
    assert connections == 1
    head, body = requests[0].split(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /mcp HTTP/1.1" and body == b'{"a":1}'
    assert b"X-Key: k" in lines and b"User-Agent: tester/1" in lines and b"Content-Length: 7" in lines
    assert b"Host: 127.0.0.1:%s" % url.split(":")[2].split("/")[0].encode() in lines
    assert not any(line.startswith((b"Host: evil", b"Content-Length: 999")) for line in lines)


async def test_a_body_that_ends_with_the_connection_and_a_chunked_one() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await _read_request(reader)
        if b"chunked" in request:
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            await writer.drain()
            return
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil ")
        await writer.drain()
        writer.write(b"the end")
        writer.close()

    async with _raw_server(script) as url:
        client = HttpClient(url)
        async with client.post({}, b"close") as response:
            until_close = await response.read()
        async with client.post({}, b"chunked") as response:
            pieces = [piece async for piece in response.chunks()]
        await client.aclose()
    assert until_close == b"until the end"
    assert b"".join(pieces) == b"abcde"


async def test_a_kept_alive_connection_the_server_closed_while_idle_is_not_used() -> None:
    connections = 0

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await _read_request(reader)
        writer.write(_ok(b"first" if connections == 1 else b"again"))
        await writer.drain()
        if connections == 1:  # gives up on the connection once idle (a keep-alive timeout)
            writer.close()

    async with _raw_server(script) as url:
        client = HttpClient(url)
        async with client.post({}, b"1") as response:
            first = await response.read()
        await anyio.sleep(0.2)  # the server's FIN arrives
        async with client.post({}, b"2") as response:
            second = await response.read()
        await client.aclose()
    assert (first, second, connections) == (b"first", b"again", 2)


async def test_a_request_is_never_sent_twice_when_the_connection_fails_after_it_went_out() -> None:
    """The server may have run it (a tool call is not idempotent): the caller is told, and nothing is resent."""
    requests: list[bytes] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            requests.append(await _read_request(reader))
            if len(requests) == 2:  # read the second request on the kept-alive connection, then died
                writer.transport.abort()
                return
            writer.write(_ok(b"first"))
            await writer.drain()

    async with _raw_server(script) as url:
        client = HttpClient(url)
        async with client.post({}, b"1") as response:
            await response.read()
        with pytest.raises(ConnectionClosed):
            async with client.post({}, b"2"):
                pass
        await anyio.sleep(0.2)
        await client.aclose()
    assert [r.rsplit(b"\r\n\r\n", 1)[1] for r in requests] == [b"1", b"2"]


async def test_a_connection_idle_past_the_keepalive_expiry_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    import gateway.http_client

    monkeypatch.setattr(gateway.http_client, "KEEPALIVE_EXPIRY", 0.5)  # wide enough for a loaded machine's stalls
    connections = 0

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                await _read_request(reader)
            except asyncio.IncompleteReadError:  # the client closed it
                return
            writer.write(_ok(b"ok"))
            await writer.drain()

    async with _raw_server(script) as url:
        client = HttpClient(url)
        for pause in (0, 0.01, 0.8):
            await anyio.sleep(pause)
            async with client.post({}, b"x") as response:
                await response.read()
        await client.aclose()
    assert connections == 2  # the second call reused the first connection; the third, after 0.8 s, did not


async def test_a_server_that_closes_mid_answer_or_speaks_no_http_is_a_closed_connection() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await _read_request(reader)
        short = b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nab"
        writer.write(b"SMTP ready\r\n\r\n" if b"garbage" in request else short)
        await writer.drain()
        writer.transport.abort()

    async with _raw_server(script) as url:
        client = HttpClient(url)
        for body, message in ((b"short", "closed"), (b"garbage", "not HTTP")):
            with pytest.raises(ConnectionClosed, match=message):
                async with client.post({}, body) as response:
                    await response.read()
        await client.aclose()


async def test_leaving_before_the_answer_closes_the_connection() -> None:
    """To an MCP server, a closed connection is a cancelled call."""
    hung_up = anyio.Event()

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: ping\r\n\r\n")
        await writer.drain()
        await reader.read()  # EOF: the client has closed the connection
        hung_up.set()

    async with _raw_server(script) as url:
        client = HttpClient(url)
        with anyio.move_on_after(0.5):
            async with client.post({}, b"{}") as response:
                await response.read()
        with anyio.fail_after(5):
            await hung_up.wait()
        await client.aclose()


@pytest.fixture
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> trustme.CA:
    """A certificate authority the client trusts (through ``SSL_CERT_FILE``, as OpenSSL reads it)."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    return ca


@asynccontextmanager
async def _tls_server(ca: trustme.CA) -> AsyncIterator[tuple[int, list[str]]]:
    """An HTTPS server for ``localhost`` answering its request's path; its port and the paths it served."""
    served: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        served.append(request.path)
        return web.Response(body=b'{"secure": true}', content_type="application/json")

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    app = web.Application()
    app.router.add_post("/mcp", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        yield runner.addresses[0][1], served
    finally:
        await runner.cleanup()


async def test_tls_with_the_trust_store_and_a_refused_certificate(authority: trustme.CA) -> None:
    async with _tls_server(authority) as (port, served):
        client = HttpClient(f"https://localhost:{port}/mcp")
        async with client.post({}, b"{}") as response:
            assert await response.read() == b'{"secure": true}'
        await client.aclose()
        wrong_name = HttpClient(f"https://127.0.0.1:{port}/mcp")  # the certificate names localhost only
        with pytest.raises(ssl.SSLCertVerificationError):
            async with wrong_name.post({}, b"{}"):
                pass
    assert served == ["/mcp"]


async def test_https_through_a_connect_proxy_with_credentials_unless_no_proxy_exempts_the_host(
    authority: trustme.CA, monkeypatch: pytest.MonkeyPatch
) -> None:
    tunnels: list[tuple[str, str]] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        lines = head.split("\r\n")
        auth = next((line.split(": ", 1)[1] for line in lines if line.startswith("Proxy-Authorization")), "")
        tunnels.append((lines[0], auth))
        host, port = lines[0].split()[1].rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(65536):
                sink.write(data)
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    async with _tls_server(authority) as (port, served), _raw_server(proxy) as proxy_url:
        proxy_address = proxy_url.removeprefix("http://").removesuffix("/mcp")
        monkeypatch.setenv("HTTPS_PROXY", f"http://gw%40corp:s3cret@{proxy_address}")
        client = HttpClient(f"https://localhost:{port}/mcp")
        async with client.post({}, b"{}") as response:
            assert await response.read() == b'{"secure": true}'
        await client.aclose()
        monkeypatch.setenv("NO_PROXY", "localhost")
        exempt = HttpClient(f"https://localhost:{port}/mcp")
        async with exempt.post({}, b"{}") as response:
            assert response.status == 200
        await exempt.aclose()
    assert tunnels == [(f"CONNECT localhost:{port} HTTP/1.1", "Basic Z3dAY29ycDpzM2NyZXQ=")]  # gw@corp:s3cret
    assert served == ["/mcp", "/mcp"]


def test_what_cannot_be_reached_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="not an http"):
        HttpClient("ftp://example.com/mcp")
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ValueError, match="only http:// proxies"):
        HttpClient("https://example.com/mcp")


async def test_a_proxy_that_refuses_the_tunnel_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async with _raw_server(proxy) as proxy_url:
        monkeypatch.setenv("HTTPS_PROXY", proxy_url.removesuffix("/mcp"))
        client = HttpClient("https://mcp.example.com/mcp")
        with pytest.raises(ConnectionClosed, match=r"refused the tunnel to mcp.example.com:443 \(HTTP 407\)"):
            async with client.post({}, b"{}"):
                pass


async def test_a_stream_left_once_answered_ends_off_the_callers_path_and_its_connection_is_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An MCP server ends an answer's event stream right after the answer; one that does not within the grace
    period has its connection closed."""
    monkeypatch.setattr("gateway.http_client.FINISH_GRACE", 0.3)
    connections = 0

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                request = await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            writer.write(b"e\r\ndata: answer\n\n\r\n")
            await writer.drain()
            if b"endless" in request:
                await reader.read()  # never ends the stream; waits for the client to close
                return
            await asyncio.sleep(0.05)
            writer.write(b"0\r\n\r\n")

    async def answered(client: HttpClient, body: bytes) -> bytes:
        async with client.post({}, body) as response:
            async for piece in response.chunks():
                response.done()
                return piece
        raise AssertionError("no answer")

    async with _raw_server(script) as url:
        client = HttpClient(url)
        first = await answered(client, b"1")
        await anyio.sleep(0.2)  # the stream's end arrives after the caller has moved on
        second = await answered(client, b"2")
        assert connections == 1
        await answered(client, b"endless")
        await anyio.sleep(0.2)
        await answered(client, b"3")  # the endless one's connection is still finishing: a new one
        await anyio.sleep(0.5)
        await answered(client, b"4")
        await client.aclose()
    assert first == second == b"data: answer\n\n"
    assert connections == 2  # the endless stream's connection was closed, never reused
