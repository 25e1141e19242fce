"""A local fake of the Gemini REST API, reached by pointing the real ``google-genai`` SDK at it.

A real HTTP server (uvicorn on a free loopback port, in a background thread) that answers the requests the
SDK sends in Gemini Developer API mode:

* ``POST /{api_version}/models/{model}:embedContent`` — ``{"content", "taskType", "outputDimensionality"}``
  → ``{"embedding": {"values": [...]}}``
* ``POST /{api_version}/models/{model}:batchEmbedContents`` — ``{"requests": [<embedContent request>...]}``
  → ``{"embeddings": [{"values": [...]}, ...]}`` (the SDK's ``models.embed_content`` always uses this one)
* ``POST /{api_version}/models/{model}:generateContent`` (and ``:streamGenerateContent?alt=sse``)
  → ``{"candidates": [{"content": {"role": "model", "parts": [{"text": ...}]}, "finishReason": "STOP"}]}``

Tests script failures with :meth:`FakeGemini.enqueue` (one :class:`FakeResponse` per request, in order) and
inspect :attr:`FakeGemini.requests`. Usage::

    def test_x(fake_gemini):
        client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=fake_gemini.base_url))
        fake_gemini.enqueue(FakeResponse(status=429))
        ...

This module is a pytest plugin (``pytest_plugins = ["tests.fakes.gemini"]``) exposing the ``fake_gemini``
fixture; :class:`FakeGemini` is also a context manager for use outside pytest.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["FakeGemini", "FakeResponse", "RecordedRequest", "fake_embedding", "fake_gemini"]

DEFAULT_EMBED_DIMENSION = 3072
"""``gemini-embedding-001`` answers with 3072 values unless ``outputDimensionality`` says otherwise."""

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_PATH = re.compile(r"^/(?:(?P<version>v[0-9][^/]*)/)?(?P<model>(?:models|tunedModels)/[^/:]+):(?P<action>[A-Za-z]+)$")
_ACTIONS = frozenset({"embedContent", "batchEmbedContents", "generateContent", "streamGenerateContent"})
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass
class FakeResponse:
    """A scripted answer for one request.

    ``status`` other than 200 with ``json=None`` produces Google's standard error body
    (``{"error": {"code", "message", "status"}}``); ``status=200`` with ``json=None`` runs the default behaviour
    (useful with ``delay`` to simulate a slow server). ``raw_body`` is sent verbatim (malformed replies).
    """

    status: int = 200
    json: dict[str, Any] | None = None
    delay: float = 0.0
    raw_body: str | None = None
    media_type: str = "application/json"
    """The ``Content-Type`` of ``raw_body`` (a proxy's error page is ``text/html``)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received."""

    method: str
    path: str
    """The URL path, e.g. ``/v1beta/models/gemini-embedding-001:batchEmbedContents``."""
    query: dict[str, str]
    headers: dict[str, str]
    """Lower-cased header names (the API key arrives as ``x-goog-api-key``)."""
    json: Any
    """The decoded JSON body (``None`` when the body was empty or not JSON)."""

    @property
    def action(self) -> str:
        """The method after the colon: ``embedContent``, ``batchEmbedContents``, ``generateContent``..."""
        return self.path.rpartition(":")[2]


@lru_cache(maxsize=65536)
def _token_vector(token: str, dimension: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(token.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dimension)


def fake_embedding(text: str, dimension: int = DEFAULT_EMBED_DIMENSION) -> list[float]:
    """The fake's deterministic unit vector for ``text``.

    A feature-hashing embedding: one pseudo-random direction per lower-cased word (seeded by its SHA-256),
    summed, plus a smaller direction for the exact text so that distinct texts never collide. Equal texts give
    equal vectors and texts sharing words are closer than unrelated ones, so search tests behave sensibly.
    """
    vector = 0.5 * _token_vector("\x00" + text, dimension)
    for token in _TOKEN.findall(text.lower()):
        vector = vector + _token_vector(token, dimension)
    norm = float(np.linalg.norm(vector))
    return (vector / norm).tolist()


def _default_generate_text(request_json: dict[str, Any]) -> str:
    """Echo the text of the last content, so tests can see what reached the model."""
    contents = request_json.get("contents") or []
    parts = contents[-1].get("parts", []) if contents else []
    return "".join(part.get("text", "") for part in parts)


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}}


class FakeGemini:
    """The fake Gemini server: start with ``with FakeGemini() as fake:`` (or :meth:`start`/:meth:`stop`)."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.generate_text: Callable[[dict[str, Any]], str] = _default_generate_text
        self.base_url = ""
        self._queue: deque[FakeResponse] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])

    # -- scripting -------------------------------------------------------------------------------------------

    def enqueue(self, *responses: FakeResponse) -> None:
        """Queue answers, consumed one per request (any endpoint) before the default behaviour resumes."""
        with self._lock:
            self._queue.extend(responses)

    def requests_for(self, action: str) -> list[RecordedRequest]:
        """The recorded requests whose method is ``action`` (e.g. ``"batchEmbedContents"``)."""
        return [r for r in self.requests if r.action == action]

    def reset(self) -> None:
        """Forget recorded requests and queued answers; restore the default ``generate_text``."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
        self.generate_text = _default_generate_text

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeGemini:
        """Bind a free loopback port and serve in a daemon thread; returns once the server accepts requests."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._loop = self._stop_event = None
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="fake-gemini", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake Gemini server did not start")
            time.sleep(0.005)
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        """Stop the server (requests still sleeping on a scripted ``delay`` are cut short)."""
        with self._lock:
            loop, event = self._loop, self._stop_event
            self._loop = self._stop_event = None
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # the server's loop may already be closed
                loop.call_soon_threadsafe(event.set)
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- the HTTP side ---------------------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        with self._lock:
            self.requests.append(
                RecordedRequest(
                    method=request.method,
                    path=request.url.path,
                    query=dict(request.query_params),
                    headers={k.lower(): v for k, v in request.headers.items()},
                    json=payload,
                )
            )
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None and scripted.delay > 0:
            await self._sleep(scripted.delay)
        if scripted is not None and scripted.raw_body is not None:
            return Response(scripted.raw_body, status_code=scripted.status, media_type=scripted.media_type)
        if scripted is not None and scripted.json is not None:
            return JSONResponse(scripted.json, status_code=scripted.status)
        if scripted is not None and scripted.status != 200:
            return JSONResponse(_error_body(scripted.status, "scripted failure"), status_code=scripted.status)
        return self._default(request, payload)

    async def _sleep(self, seconds: float) -> None:
        """Sleep on the server's loop, waking early when :meth:`stop` is called from the test thread."""
        with self._lock:
            if self._stop_event is None:
                self._loop, self._stop_event = asyncio.get_running_loop(), asyncio.Event()
            event = self._stop_event
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)

    def _default(self, request: Request, payload: Any) -> Response:
        match = _PATH.match(request.url.path)
        if request.method != "POST" or match is None:
            return JSONResponse(_error_body(404, f"no such method: {request.url.path}"), status_code=404)
        if not request.headers.get("x-goog-api-key") and "key" not in request.query_params:
            return JSONResponse(_error_body(403, "Method doesn't allow unregistered callers."), status_code=403)
        action = match["action"]
        if action not in _ACTIONS:
            return JSONResponse(_error_body(404, f"unsupported method {action}"), status_code=404)
        if not isinstance(payload, dict):
            return JSONResponse(_error_body(400, "Invalid JSON payload received."), status_code=400)
        if action == "embedContent":
            return JSONResponse({"embedding": self._embed_one(payload)})
        if action == "batchEmbedContents":
            items = payload.get("requests")
            if not isinstance(items, list) or not items:
                return JSONResponse(_error_body(400, "requests must not be empty"), status_code=400)
            if len(items) > 100:
                return JSONResponse(_error_body(400, "at most 100 requests can be in one batch"), status_code=400)
            return JSONResponse({"embeddings": [self._embed_one(item) for item in items]})
        if action == "generateContent":
            return JSONResponse(self._generation(match["model"], payload))
        if action == "streamGenerateContent":
            chunk = json.dumps(self._generation(match["model"], payload))
            return StreamingResponse(iter([f"data: {chunk}\r\n\r\n"]), media_type="text/event-stream")
        raise AssertionError(action)  # unreachable: _ACTIONS lists the methods handled above

    @staticmethod
    def _embed_one(item: dict[str, Any]) -> dict[str, Any]:
        parts = (item.get("content") or {}).get("parts") or []
        text = "".join(part.get("text", "") for part in parts)
        dimension = int(item.get("outputDimensionality") or DEFAULT_EMBED_DIMENSION)
        return {"values": fake_embedding(text, dimension)}

    def _generation(self, model: str, payload: dict[str, Any]) -> dict[str, Any]:
        text = self.generate_text(payload)
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": model.rpartition("/")[2],
        }


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A running :class:`FakeGemini`, fresh for each test."""
    with FakeGemini() as fake:
        yield fake
