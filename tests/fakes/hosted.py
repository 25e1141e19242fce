"""What the fakes of hosted services (GitHub, Jira, Slack) share: a real HTTP server on loopback, recorded requests,
scripted failures, and token checks.

A fake runs uvicorn on a free ``127.0.0.1`` port in a daemon thread; the connector under test gets its
``base_url`` and talks real HTTP to it. Every request is recorded (:attr:`HostedFake.requests`, with every answer in
:attr:`HostedFake.answers`) so tests assert what was asked (the ``since``/``oldest``/``updated >=`` of an incremental
sync). :meth:`HostedFake.script` queues answers for requests whose path contains a given text (a 429 with
``Retry-After``, a 503, a failure in the middle of a sync); :meth:`HostedFake.revoke` makes the token stop working.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["Answer", "HostedFake", "Recorded", "Scripted"]


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any


@dataclass(frozen=True)
class Answer:
    """What the fake answered to a recorded request (for conformance checks)."""

    request: Recorded
    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class Scripted:
    """An answer for the next request whose path contains ``match`` (any request when empty)."""

    status: int
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    match: str = ""


class HostedFake:
    """Base of the service fakes: subclasses implement :meth:`answer` (and may override :meth:`unauthorised`)."""

    name = "fake"

    def __init__(self, *, tokens: set[str] | None = None) -> None:
        self.tokens = set(tokens or {"good-token"})
        self.requests: list[Recorded] = []
        self.answers: list[Answer] = []
        self.base_url = ""
        self._scripted: list[Scripted] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])

    # -- scripting -----------------------------------------------------------------------------------------

    def script(self, *answers: Scripted) -> None:
        with self._lock:
            self._scripted.extend(answers)

    def revoke(self) -> None:
        """Every token stops working (as when a token is revoked)."""
        self.tokens.clear()

    def requests_to(self, fragment: str) -> list[Recorded]:
        return [r for r in self.requests if fragment in r.path]

    def token_of(self, request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        return value if scheme.lower() in ("bearer", "token") and value else None

    def unauthorised(self, request: Request) -> Response | None:
        """The service's answer to a request without a valid token (None: the request may go on)."""
        raise NotImplementedError

    def answer(self, request: Request, payload: Any) -> Response:
        raise NotImplementedError

    # -- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> HostedFake:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            date_header=False,  # the fake's own Date (its clock can be moved by a test)
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=f"fake-{self.name}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the fake {self.name} server did not start")
            time.sleep(0.005)
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> HostedFake:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- the HTTP side -------------------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        recorded = Recorded(
            request.method,
            request.url.path,
            dict(request.query_params),
            {k.lower(): v for k, v in request.headers.items()},
            payload,
        )
        with self._lock:
            self.requests.append(recorded)
            scripted = next((s for s in self._scripted if s.match in request.url.path), None)
            if scripted is not None:
                self._scripted.remove(scripted)
        if scripted is not None:
            response: Response = Response(
                json.dumps(scripted.json) if scripted.json is not None else b"",
                status_code=scripted.status,
                headers=scripted.headers,
                media_type="application/json; charset=utf-8",
            )
        else:
            response = self.unauthorised(request) or self.answer(request, payload)
        if "date" not in response.headers:
            response.headers["date"] = format_datetime(datetime.now(UTC), usegmt=True)
        body = None
        if response.body:
            try:
                body = json.loads(response.body)
            except ValueError:
                body = response.body.decode(errors="replace")
        with self._lock:
            self.answers.append(Answer(recorded, response.status_code, dict(response.headers), body))
        return response


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body), status_code=status, headers=headers or {}, media_type="application/json; charset=utf-8"
    )
