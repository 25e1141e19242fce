"""What the ``postgres`` store knows of its server's health: client-side deadlines and a short circuit breaker.

A server that is frozen or cut off by the network never answers, so its own ``statement_timeout`` cannot fire:
:func:`bounded` puts a deadline on the client side and discards the connection when it passes. :class:`ServerHealth`
remembers the last failed connection attempt (the pool's background ones included), so that the store reports the
real cause (``Connection refused``) rather than a pool timeout, and fails calls at once for a moment after a refusal
instead of letting each wait for the pool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection

from gateway.api import ProviderUnavailable
from gateway.api.stores import Row

BREAKER_SECONDS = 1.5
"""After a failed connection attempt, calls fail at once for this long (with the attempt's error)."""

_TOO_MANY_CLIENTS = "53"  # sqlstate class "insufficient resources": the server is up, only full for now


@asynccontextmanager
async def bounded(connection: AsyncConnection[Any], seconds: float | None, provider: str) -> AsyncIterator[None]:
    """Raise :class:`ProviderUnavailable` when the block (one exchange with the server) outlasts ``seconds``.

    The connection is then in an unknown state (a statement may still be running or queued), so it is closed: the
    pool discards a closed connection instead of handing it out again. ``None``: no deadline.
    """
    if seconds is None:
        yield
        return
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError as exc:
        await connection.close()
        raise ProviderUnavailable(provider, f"the server did not answer within {seconds:g} s") from exc


class ServerHealth:
    """The last connection error, and the breaker it opens. ``secret`` (the DSN's password) never appears in
    the messages."""

    def __init__(self, provider: str, *, secret: str | None = None, breaker_seconds: float = BREAKER_SECONDS) -> None:
        self._provider = provider
        self._secret = secret
        self._breaker_seconds = breaker_seconds
        self._error: str | None = None
        self.pooled_failed = False
        """The failure was a pooled connection's (its check timed out): the other idle ones are suspect too."""
        self._open_until = 0.0
        self._failure = asyncio.Event()

    @property
    def failing(self) -> bool:
        """Whether the last connection attempt failed (and none succeeded since)."""
        return self._error is not None

    def describe(self, what: str) -> str:
        """``what``, followed by the last connection error when there is one."""
        return f"{what}; last connection error: {self._error}" if self._error else what

    def failed(self, exc: BaseException, *, pooled: bool = False) -> None:
        """Record a failed connection attempt, or (``pooled``) a pooled connection found not answering. It opens the
        breaker, unless the server only turned us away for lack of room (``too many clients``: a pooled connection
        may come back)."""
        if str(getattr(exc, "sqlstate", None) or "").startswith(_TOO_MANY_CLIENTS):
            return
        self.pooled_failed = self.pooled_failed or pooled
        message = " ".join(str(exc).split()) or type(exc).__name__
        if self._secret:
            message = message.replace(self._secret, "***")
        self._error = message
        self._open_until = time.monotonic() + self._breaker_seconds
        self._failure.set()
        self._failure = asyncio.Event()

    def connected(self) -> None:
        """Record a successful connection attempt: the server is back."""
        self._error = None
        self.pooled_failed = False
        self._open_until = 0.0

    def raise_if_open(self) -> None:
        """Raise :class:`ProviderUnavailable` while the breaker is open."""
        left = self._open_until - time.monotonic()
        if left > 0 and self._error is not None:
            raise ProviderUnavailable(
                self._provider, f"cannot connect: {self._error} (not retried for another {left:.1f} s)"
            )

    def unavailable(self) -> ProviderUnavailable:
        """The error of a call given up because a connection attempt failed."""
        return ProviderUnavailable(self._provider, f"cannot connect: {self._error or 'no connection'}")

    async def next_failure(self) -> None:
        """Return when the next connection attempt fails."""
        await self._failure.wait()


def recording_connection_class(health: ServerHealth) -> type[AsyncConnection[Row]]:
    """A connection class (for the pool's ``connection_class`` and the store's own connections) that tells
    ``health`` how each connection attempt went."""

    class RecordingConnection(AsyncConnection[Row]):
        @classmethod
        async def connect(cls, conninfo: str = "", **kwargs: Any) -> RecordingConnection:  # type: ignore[override]
            try:
                connection = await super().connect(conninfo, **kwargs)
            except psycopg.OperationalError as exc:
                health.failed(exc)
                raise
            health.connected()
            return connection

    return RecordingConnection
