"""One upstream server's life: started when needed, restarted with backoff, reaped when idle, stopped with us.

A supervisor task per server owns its connection. Calls never start or stop anything themselves: they say they
need the server (:meth:`Upstream.call`), wait at most their timeout for it to be up, and fail with
``upstream_unavailable`` naming it otherwise, so one server that is down or hanging never holds up another.

States: ``idle`` (not running; a stdio server before first use or after reaping), ``starting``, ``up``, ``down``
(the last start failed or the connection broke; retried after a backoff that doubles up to a cap, reset by a
successful call).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import structlog

from gateway.api import (
    ListKind,
    UpstreamAnswerLost,
    UpstreamConnectionLost,
    UpstreamConnector,
    UpstreamError,
    UpstreamRequestFailed,
    UpstreamSession,
    UpstreamSessionExpired,
    UpstreamStatus,
    scrub_secrets,
)
from gateway_plugins.remote.catalogue import CatalogueCopy, RemoteCatalogue
from gateway_plugins.remote.config import ServerConfig
from gateway_plugins.remote.errors import upstream_error, upstream_timeout, upstream_unavailable
from gateway_plugins.remote.targets import secret_values, target_of, unusable_secrets

log = structlog.get_logger(__name__)

T = TypeVar("T")

WAIT_FOR_RESTART_SECONDS = 2.0
"""A call to a server that is down waits for a restart due this soon; a server down longer fails it at once."""


class Upstream:
    """One configured server (see the module doc)."""

    def __init__(
        self,
        config: ServerConfig,
        connector: Callable[[], UpstreamConnector],
        data_dir: Path,
        on_catalogue_change: Callable[[], Awaitable[None]],
    ) -> None:
        self.config = config
        self.name = config.name
        self._connector = connector
        self._copy = CatalogueCopy(data_dir, config.name, " ".join(config.command or []) or str(config.url))
        self.catalogue = self._copy.load()
        self._on_catalogue_change = on_catalogue_change
        self.state = "idle"
        self.last_error: str | None = None
        self.session: UpstreamSession | None = None
        self.starts = 0
        self._wanted = False
        self._stopping = False
        self._list_changed = False
        self._expired = False
        self._next_attempt = 0.0
        self._backoff = config.restart_backoff_seconds
        self._in_flight = 0
        self._last_used = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._poke: anyio.Event | None = None
        self._state_event: anyio.Event | None = None
        self._slots: anyio.Semaphore | None = None
        self._connecting: anyio.CancelScope | None = None  # the attempt under way, which stop() abandons

    # -- life -----------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start supervising. An eager server, or one whose catalogue is not known yet, is started now (at most
        ``connect_timeout_seconds``: a server that does not come up leaves the others serving)."""
        self._poke, self._state_event = anyio.Event(), anyio.Event()
        self._slots = anyio.Semaphore(self.config.max_concurrency)
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"remote {self.name}")
        if self.config.start == "eager" or not self.catalogue.known:
            self.want()
            with anyio.move_on_after(self.config.connect_timeout_seconds):  # then it goes on in the background
                while self.state not in ("up", "down"):
                    await self._state_changed()

    async def stop(self) -> None:
        """Stop supervising: a connection attempt under way is abandoned, a running server is stopped."""
        self._stopping = True
        if self._connecting is not None:
            self._connecting.cancel()
        self._wake()
        if self._task is not None:
            with anyio.move_on_after(15):
                await asyncio.shield(self._task)
            if not self._task.done():
                self._task.cancel()

    def want(self) -> None:
        """Someone needs the server: start it if it is not running (after the backoff, if it failed)."""
        self._wanted = True
        self._wake()

    def _wake(self) -> None:
        if self._poke is not None:
            self._poke.set()

    async def _sleep(self, seconds: float | None) -> None:
        assert self._poke is not None
        with anyio.move_on_after(math.inf if seconds is None else max(seconds, 0.0)):
            await self._poke.wait()
        self._poke = anyio.Event()

    def _set_state(self, state: str) -> None:
        self.state = state
        assert self._state_event is not None
        event, self._state_event = self._state_event, anyio.Event()
        event.set()

    async def _state_changed(self) -> None:
        assert self._state_event is not None
        await self._state_event.wait()

    async def _supervise(self) -> None:
        async with anyio.create_task_group() as watchers:
            while not self._stopping:
                try:
                    if not self._wanted:
                        await self._sleep(None)
                        continue
                    delay = self._next_attempt - time.monotonic()
                    if delay > 0:
                        await self._sleep(delay)
                        continue
                    session = await self._connect()
                    if session is not None:
                        watchers.start_soon(self._watch, session)
                        await self._serve(session)
                except Exception as exc:  # a bug of ours must not end supervision silently
                    log.exception("upstream supervision failed", upstream=self.name)
                    self._failed(f"{type(exc).__name__}: {exc}")
            self._set_state("idle")

    async def _watch(self, session: UpstreamSession) -> None:
        await session.wait_closed()
        self._wake()

    async def _connect(self) -> UpstreamSession | None:
        self._set_state("starting")
        self.starts += 1
        if unusable := unusable_secrets(self.config):  # the environment cannot change while we run: not retried
            self._failed(unusable, True)
            return None
        opened = None
        with anyio.CancelScope() as self._connecting:  # stop() abandons an attempt under way
            opened = await self._open()
        self._connecting = None
        if opened is None:
            return None
        session, catalogue = opened
        self.session = session
        self._expired = False
        self._set_state("up")
        log.info("upstream up", upstream=self.name, protocol=session.protocol_version, starts=self.starts)
        await self._update_catalogue(catalogue)
        return session

    async def _open(self) -> tuple[UpstreamSession, RemoteCatalogue] | None:
        """Connect and read what the server offers; None (the server down) if either fails."""
        structlog.contextvars.bind_contextvars(upstream=self.name)  # this task's lines name the server (adapter's)
        try:
            session = await self._connector().connect(
                self.name,
                target_of(self.config),
                connect_timeout=self.config.connect_timeout_seconds,
                on_list_changed=self._note_list_changed,
            )
        except UpstreamError as exc:
            self._failed(str(exc))
            return None
        try:
            with anyio.fail_after(self.config.connect_timeout_seconds):
                return session, await RemoteCatalogue.read(session)
        except (UpstreamError, TimeoutError) as exc:
            await session.aclose()
            self._failed(f"listing what it offers failed: {exc or type(exc).__name__}")
        except BaseException:  # stopped meanwhile
            with anyio.CancelScope(shield=True):
                await session.aclose()
            raise
        return None

    async def _serve(self, session: UpstreamSession) -> None:
        """Until the connection ends, the server is reaped, or we stop; re-reads the catalogue on change."""
        while True:
            if self._stopping or session.closed or self._expired:
                break
            if self._list_changed:
                self._list_changed = False
                try:
                    with anyio.fail_after(self.config.connect_timeout_seconds):
                        await self._update_catalogue(await RemoteCatalogue.read(session))
                except (UpstreamError, TimeoutError) as exc:
                    log.warning("upstream catalogue re-read failed", upstream=self.name, error=self.scrub(str(exc)))
                continue
            idle_for = self._idle_timeout()
            if idle_for is not None and self._in_flight == 0:
                left = idle_for - (time.monotonic() - self._last_used)
                if left <= 0:
                    log.info("upstream idle; stopped", upstream=self.name, idle_seconds=idle_for)
                    self._wanted = False
                    break
                await self._sleep(left)
            else:
                await self._sleep(None)
        crashed = session.closed and not self._stopping and not self._expired
        reason = session.close_reason
        self.session = None
        await session.aclose()
        if crashed:
            self._failed(reason or "the server exited")
        elif self._expired:
            self._set_state("starting")  # reconnect at once, without backoff: the session expired, nothing broke
        else:
            self._set_state("idle")

    def _idle_timeout(self) -> float | None:  # only a process is worth reaping: an HTTP server keeps its session
        return self.config.idle_timeout_seconds if self.config.transport == "stdio" else None

    def scrub(self, text: str) -> str:
        """``text`` with this server's configured secrets replaced by where they go (``<env.NAME>``)."""
        return scrub_secrets(text, secret_values(self.config))

    def _failed(self, reason: str, permanent: bool = False) -> None:
        """Down; retried after the backoff, or never when ``permanent`` (the config cannot change while we run)."""
        reason = self.scrub(reason)
        self.last_error = reason
        if permanent:
            self._next_attempt = math.inf
            log.error("upstream down; not retried until the gateway restarts", upstream=self.name, error=reason)
            self._set_state("down")
            return
        self._next_attempt = time.monotonic() + self._backoff
        log.warning("upstream down", upstream=self.name, error=reason, retry_in=round(self._backoff, 3))
        self._backoff = min(self._backoff * 2, self.config.max_backoff_seconds)
        self._set_state("down")

    def _note_list_changed(self, kind: ListKind) -> None:
        self._list_changed = True
        self._wake()

    async def _update_catalogue(self, catalogue: RemoteCatalogue) -> None:
        # At every read, changed or not: a misspelling added to the config leaves the server's catalogue as it was.
        if absent := self.config.tools.absent_from({t.name for t in catalogue.tools}):  # a misspelt allow/deny list
            where = f"tools.{self.config.tools.listing}"
            log.warning(f"upstream offers no tool of these names in {where}", upstream=self.name, tools=absent)
        if self.catalogue.known and catalogue == self.catalogue:
            return
        self.catalogue = catalogue
        self._copy.save(catalogue)
        log.info(
            "upstream catalogue",
            upstream=self.name,
            tools=[t.name for t in catalogue.tools],
            prompts=[p.name for p in catalogue.prompts],
            resources=len(catalogue.resources),
            templates=len(catalogue.templates),
        )
        for tool in catalogue.tools:  # remote text: logged through the log redaction like any other line
            log.debug("upstream tool", upstream=self.name, name=tool.name, description=tool.description)
        await self._on_catalogue_change()

    # -- calls ----------------------------------------------------------------------------------------------

    async def _session_for(self, deadline: float) -> UpstreamSession:
        while True:
            session = self.session
            if self.state == "up" and session is not None and not session.closed and not self._expired:
                return session
            now = time.monotonic()
            if self._stopping:
                raise upstream_unavailable(self.name, "the gateway is stopping", state=self.state)
            self._refuse_while_down(min(deadline, now + WAIT_FOR_RESTART_SECONDS))
            if now >= deadline:
                reason = f"not up within {self.config.call_timeout_seconds:g} s"
                if self.last_error:
                    reason += f" (last error: {self.last_error})"
                raise upstream_unavailable(self.name, reason, state=self.state)
            self.want()
            with anyio.move_on_after(deadline - now):
                await self._state_changed()

    def _refuse_while_down(self, until: float) -> None:
        """``upstream_unavailable`` (with ``retry_after``) when the server is down and not retried by ``until``."""
        if self.state == "down" and self._next_attempt > until:
            retry = None if math.isinf(self._next_attempt) else self._next_attempt - time.monotonic()
            raise upstream_unavailable(self.name, self.last_error or "down", state="down", retry_after=retry)

    async def call(self, request: Callable[[UpstreamSession], Awaitable[T]]) -> T:
        """Run ``request`` on the server: waits for it to be up (for a restart due within
        :data:`WAIT_FOR_RESTART_SECONDS`; a server down longer fails the call at once) and for a free slot, within
        the call timeout."""
        assert self._slots is not None
        timeout = self.config.call_timeout_seconds
        arrived = time.monotonic()
        deadline = arrived + timeout
        self._refuse_while_down(min(deadline, arrived + WAIT_FOR_RESTART_SECONDS))  # before it takes a slot
        try:
            self._slots.acquire_nowait()
        except anyio.WouldBlock:  # every slot is taken: queue, within the call timeout
            with anyio.move_on_after(timeout) as queue:
                await self._slots.acquire()
            if queue.cancelled_caught:
                raise upstream_timeout(self.name, timeout, queued=True) from None
        self._in_flight += 1
        self._last_used = time.monotonic()
        try:
            return await self._attempt(request, deadline, queued_for=self._last_used - arrived)
        finally:
            self._slots.release()
            self._in_flight -= 1
            self._last_used = time.monotonic()
            if self._in_flight == 0 and self._idle_timeout() is not None:
                self._wake()  # the reaper, asleep while calls ran, counts idle time from here

    async def _attempt(
        self, request: Callable[[UpstreamSession], Awaitable[Any]], deadline: float, *, queued_for: float
    ) -> Any:
        """``queued_for``: the seconds the call waited for its slot, told by a timeout that spent them."""
        for attempt in (1, 2):
            session = await self._session_for(deadline)
            try:
                with anyio.fail_after(max(deadline - time.monotonic(), 0.0)):
                    result = await request(session)
            except TimeoutError:
                timeout = self.config.call_timeout_seconds
                raise upstream_timeout(self.name, timeout, queued=False, queued_for=queued_for) from None
            except UpstreamSessionExpired as exc:
                if attempt == 2:
                    raise upstream_unavailable(self.name, self.scrub(str(exc)), state=self.state) from None
                log.info("upstream session expired; reconnecting", upstream=self.name)
                self._expired = True
                self._wake()
                continue
            except UpstreamConnectionLost as exc:
                self._wake()
                raise upstream_unavailable(self.name, self.scrub(str(exc)), state="down") from None
            except UpstreamAnswerLost as exc:  # this call's answer only: the session serves the others
                raise upstream_unavailable(self.name, self.scrub(str(exc)), state=self.state) from None
            except UpstreamRequestFailed as exc:
                raise upstream_error(self.name, self.scrub(exc.message), exc.code) from None
            self._backoff = self.config.restart_backoff_seconds  # it works: the next failure starts afresh
            return result
        raise AssertionError("unreachable")

    def status(self, served_tools: int) -> UpstreamStatus:
        where = self.config.target
        return UpstreamStatus(
            name=self.name,
            state=self.state,
            transport=self.config.transport,
            tools=served_tools,
            last_error=self.last_error,
            detail=where,
        )
