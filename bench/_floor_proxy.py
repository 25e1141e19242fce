"""The floor of a Python hop: a relay that does the least any MCP gateway must do, and nothing else.

Each message is parsed once and serialised again (a gateway must read a request to route and authorise it); there
is no authentication, no schema check, no rate limit, no log line, no metric. ``bench/federation_overhead.py
--floor`` puts it where the gateway sits, so the table shows what the target leaves for a gateway's own work.

    python bench/_floor_proxy.py http PORT UPSTREAM_URL   an HTTP front on 127.0.0.1:PORT; every POST is relayed
                                                        over one kept-alive connection and answered as JSON
    python bench/_floor_proxy.py stdio COMMAND...         a stdio front; COMMAND is the upstream, started here
    python bench/_floor_proxy.py stdio --raw COMMAND...   lines relayed as bytes, not even parsed
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httptools
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.http_client import HttpClient

ACCEPT = "application/json, text/event-stream"


class _HttpFront(asyncio.Protocol):
    """One client connection; each complete request is relayed upstream in a task of its own."""

    def __init__(self, upstream: HttpClient) -> None:
        self._upstream = upstream
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._body: list[bytes] = []
        self._headers: dict[str, str] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._parser.feed_data(data)

    def on_message_begin(self) -> None:
        self._body, self._headers = [], {}

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1")
        if key.lower().startswith("mcp"):  # the protocol version and the routing headers
            self._headers[key] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        asyncio.get_running_loop().create_task(self._relay(b"".join(self._body), self._headers))

    async def _relay(self, body: bytes, headers: dict[str, str]) -> None:
        assert self._transport is not None
        message = orjson.loads(body)
        answer = await _post(self._upstream, orjson.dumps(message), headers)
        if answer is None:
            self._transport.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            return
        data = orjson.dumps(answer)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(data)
        self._transport.write(head + data)


async def _post(upstream: HttpClient, body: bytes, headers: dict[str, str]) -> Any:
    """The upstream's JSON-RPC answer (the response among a stream's events), or None for an accepted notification."""
    sent = {"Accept": ACCEPT, "Content-Type": "application/json", **headers}
    async with upstream.post(sent, body) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            raw = await response.read()
            return orjson.loads(raw) if raw else None
        buffer = b""
        async for chunk in response.chunks():
            buffer += chunk.replace(b"\r\n", b"\n")
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
                message = orjson.loads(data) if data else None
                if isinstance(message, dict) and "id" in message and "method" not in message:
                    response.done()  # the server ends the stream next: the connection stays in the pool
                    return message
    return None


async def _serve_http(port: int, url: str) -> None:
    upstream = HttpClient(url)
    server = await asyncio.get_running_loop().create_server(lambda: _HttpFront(upstream), "127.0.0.1", port)
    await server.serve_forever()


async def _serve_stdio(command: list[str], *, raw: bool) -> None:
    loop = asyncio.get_running_loop()
    proc = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 26
    )
    assert proc.stdin is not None and proc.stdout is not None
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    def again(line: bytes) -> bytes:
        return line if raw else orjson.dumps(orjson.loads(line)) + b"\n"

    async def down() -> None:
        while line := await reader.readline():
            proc.stdin.write(again(line))  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]

    async def up() -> None:
        while line := await proc.stdout.readline():  # type: ignore[union-attr]
            writer.write(again(line))

    await asyncio.gather(down(), up())


if __name__ == "__main__":
    if sys.argv[1] == "http":
        asyncio.run(_serve_http(int(sys.argv[2]), sys.argv[3]))
    else:
        rest = sys.argv[2:]
        asyncio.run(_serve_stdio(rest[1:] if rest[0] == "--raw" else rest, raw=rest[0] == "--raw"))
