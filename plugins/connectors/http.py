"""The HTTP client every hosted connector uses: retries with backoff, the services' rate-limit signals honoured.

One :class:`HostedHttp` per connector instance (an ``httpx.AsyncClient`` with the service's auth header). Each
response is judged by the connector's :data:`Judge`: a success, a failure to raise at once (a revoked token is not
retried), or a wait-and-retry with the wait the service asked for (``Retry-After``, a rate-limit reset time) or, when
it said nothing, exponential backoff with jitter (tenacity). A wait longer than ``max_wait_seconds`` is not slept:
the sync stops with :class:`gateway.api.RateLimitExceeded` and the next sync resumes from the stored cursor.

The clock and the sleep are injectable, so tests run 429s and 5xx without waiting. Nothing here logs a header, a
query string or a body: the token travels in a header and never reaches a log line.
"""

from __future__ import annotations

import email.utils
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx
import structlog
from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from gateway.api import (
    ChangePage,
    Forbidden,
    HistoryEntry,
    NotFound,
    RateLimitExceeded,
    ScanResult,
    ServiceUnavailable,
    ToolError,
    Unauthenticated,
)
from gateway_plugins.connectors.common import scan_by_changes

log = structlog.get_logger(__name__)

__all__ = ["HostedConnector", "HostedHttp", "HttpPolicy", "Judge", "Retry", "default_judge", "retry_after_seconds"]

RETRYABLE_STATUS = frozenset({500, 502, 503, 504})


class HttpPolicy(BaseModel):
    """Retry and timeout settings shared by the hosted connectors (part of each one's ``connector_config``)."""

    model_config = ConfigDict(extra="forbid")

    timeout_seconds: float = Field(30.0, gt=0, le=600, description="Hard limit on one request.")
    max_retries: int = Field(5, ge=0, le=20, description="Retries of one request after 429, 5xx or a network error.")
    backoff_seconds: float = Field(1.0, ge=0, le=60, description="First backoff when the service gives no wait.")
    max_backoff_seconds: float = Field(60.0, ge=0, le=3600, description="Longest backoff between two attempts.")
    max_wait_seconds: float = Field(
        300.0,
        ge=0,
        le=86_400,
        description="Longest wait a service may ask for (Retry-After, rate-limit reset) before the sync stops with "
        "a rate-limit error and resumes at the next sync.",
    )


@dataclass(frozen=True)
class Retry(Exception):
    """A response to retry, after ``wait`` seconds (``None``: backoff)."""

    reason: str
    wait: float | None = None
    rate_limited: bool = False

    def __str__(self) -> str:
        return self.reason


Judge = Callable[[httpx.Response], Awaitable[None]]
"""Inspects a response: returns for a success, raises :class:`Retry` to try again, a ToolError to fail."""


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A ``Retry-After`` value (delta-seconds or an HTTP date) in seconds from ``now``; None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def _message(response: httpx.Response) -> str:
    """The service's own error text, short (bodies are JSON with ``message``/``error``/``errorMessages``)."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip()
    if isinstance(body, dict):
        for key in ("message", "error", "errorMessages", "error_description"):
            value = body.get(key)
            if isinstance(value, list):
                value = "; ".join(str(v) for v in value)
            if value:
                return str(value)[:300]
    return ""


def default_judge(service: str, *, token_hint: str = "") -> Callable[[httpx.Response], Awaitable[None]]:
    """The judge of a plain REST service: 2xx/304 pass; 429 and 500/502/503/504 are retried (after
    ``Retry-After`` when given); 401 is a rejected token; 403, 404 and other errors fail with the service's text."""

    async def judge(response: httpx.Response) -> None:
        status = response.status_code
        if status < 300 or status == 304:
            return
        now = time.time()
        if status == 429 or status in RETRYABLE_STATUS:
            raise Retry(
                f"{service} answered {status}",
                retry_after_seconds(response.headers.get("retry-after"), now),
                rate_limited=status == 429,
            )
        raise error_for(service, response, token_hint=token_hint)

    return judge


def error_for(service: str, response: httpx.Response, *, token_hint: str = "") -> ToolError:
    """The ToolError of a failed response, with the service's own words and what to do."""
    status, text = response.status_code, _message(response)
    said = f": {text}" if text else ""
    if status == 401:
        hint = f" {token_hint}" if token_hint else ""
        return Unauthenticated(
            f"{service} rejected the token (401{said}); it may be revoked or expired.{hint}",
            details={"service": service, "status": status},
        )
    if status == 403:
        return Forbidden(f"{service} refused access (403{said})", details={"service": service, "status": status})
    if status == 404:
        return NotFound(f"{service} has no such resource (404{said})", details={"service": service, "status": status})
    return ToolError(
        f"{service} answered {status}{said}",
        code="upstream_error",
        http_status=502,
        details={"service": service, "status": status},
    )


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or {"http": 80, "https": 443}.get(url.scheme)


class HostedHttp:
    """An HTTP client for one hosted service, with the retry policy and rate-limit handling described above."""

    def __init__(
        self,
        service: str,
        base_url: str,
        *,
        headers: Mapping[str, str],
        policy: HttpPolicy,
        judge: Judge,
        pause_after: Callable[[httpx.Response, float], float | None] | None = None,
        sleep: Callable[[float], Awaitable[Any]] = anyio.sleep,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.service = service
        self.policy = policy
        self.judge = judge
        self.pause_after = pause_after
        self.sleep = sleep
        self.clock = clock
        self.waits: list[float] = []
        """Every wait slept, in order (tests and diagnostics)."""
        self._resume_at = 0.0
        self._origin = _origin(httpx.URL(base_url))
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers=dict(headers),
            timeout=policy.timeout_seconds,
            transport=transport,
            follow_redirects=True,
            event_hooks={"request": [self._stay_on_origin]},
        )

    async def _stay_on_origin(self, request: httpx.Request) -> None:
        """Every request, a redirect's and a pagination link's included, goes to the base URL's origin: the
        connector's credentials (and the operator's allow-list of base URLs) never reach a host a response named."""
        scheme, host, _ = self._origin
        upgraded = scheme == "http" and request.url.scheme == "https" and request.url.host == host  # http -> https
        if _origin(request.url) != self._origin and not upgraded:
            raise ToolError(
                f"{self.service} pointed to another host ({request.url.host}), outside the connector's base_url; "
                "the request was not sent",
                code="upstream_error",
                http_status=502,
                details={"service": self.service},
            )

    async def _wait(self, seconds: float, why: str) -> None:
        if seconds > self.policy.max_wait_seconds:
            raise RateLimitExceeded(
                f"{self.service} asks to wait {seconds:.0f} s ({why}), longer than max_wait_seconds "
                f"({self.policy.max_wait_seconds:.0f}); the next sync resumes where this one stopped",
                details={"service": self.service, "retry_after": round(seconds)},
            )
        if seconds > 0:
            log.info("connector.http.wait", service=self.service, seconds=round(seconds, 3), reason=why)
            self.waits.append(seconds)
            await self.sleep(seconds)

    def _backoff(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, Retry) and exc.wait is not None:
            return exc.wait
        ceiling = min(self.policy.max_backoff_seconds, self.policy.backoff_seconds * 2 ** (state.attempt_number - 1))
        return ceiling * (0.5 + random.random() / 2)

    async def _sleep_between(self, seconds: float) -> None:
        await self._wait(seconds, "retry")

    async def _once(self, method: str, url: str, params: Any, json: Any, headers: Mapping[str, str] | None) -> Any:
        delay = self._resume_at - self.clock()
        if delay > 0:
            await self._wait(delay, "rate limit exhausted until its reset")
        self._resume_at = 0.0
        try:
            response = await self._client.request(method, url, params=params, json=json, headers=headers)
        except httpx.TransportError as exc:
            raise Retry(f"{self.service} unreachable ({type(exc).__name__})") from None
        if self.pause_after is not None:
            pause = self.pause_after(response, self.clock())
            if pause:
                self._resume_at = self.clock() + pause
        try:
            await self.judge(response)
        except Retry as retry:
            log.warning(
                "connector.http.retry",
                service=self.service,
                status=response.status_code,
                path=response.request.url.path,
                wait=retry.wait,
            )
            raise
        return response

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Any = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """One request, retried per the policy; the final response (2xx or 304) or a ToolError."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.max_retries + 1),
            wait=self._backoff,
            retry=retry_if_exception_type(Retry),
            sleep=self._sleep_between,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._once(method, url, params, json, headers)
        except Retry as exc:
            if exc.rate_limited:
                raise RateLimitExceeded(
                    f"{exc.reason}: still rate limited after {self.policy.max_retries} retries",
                    details={"service": self.service, "retry_after": round(exc.wait or 0)},
                ) from None
            raise ServiceUnavailable(
                f"{exc.reason}; gave up after {self.policy.max_retries} retries with backoff",
                details={"service": self.service},
            ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def server_time(self, response: httpx.Response) -> datetime:
        """The server's time of ``response`` (its ``Date`` header), else this clock's: an incremental sync's next
        ``since`` comes from the server's clock, so a skewed local clock cannot skip or repeat changes."""
        date = response.headers.get("date")
        if date:
            try:
                return email.utils.parsedate_to_datetime(date)
            except (TypeError, ValueError):
                pass
        return datetime.fromtimestamp(self.clock(), UTC)

    async def aclose(self) -> None:
        await self._client.aclose()


class HostedConnector(ABC):
    """What the hosted connectors (GitHub, Jira, Slack) share beyond their HTTP client ``http``: ``scan`` is a full
    sync through their own ``changes``, their documents (tickets, pull requests, threads) have no file history, and
    closing closes the client."""

    http: HostedHttp

    @abstractmethod
    async def changes(self, cursor: str | None) -> ChangePage: ...

    async def scan(self) -> ScanResult:
        return await scan_by_changes(self)

    async def history(self, path: str | None = None, *, limit: int = 20) -> list[HistoryEntry]:
        return []

    async def aclose(self) -> None:
        await self.http.aclose()
