"""The call pipeline: an ordered chain of interceptors around every tool call, each with an error policy.

A link's ``on_error`` policy covers only the link's own failures. Errors raised further down the chain (by a
later link or the tool) pass through untouched. ``fail_closed`` (the default) refuses the call with
``service_unavailable``; ``fail_open`` logs the failure and continues as if the link were absent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import structlog
from pydantic import BaseModel

from gateway.api.errors import ProviderUnavailable, ServiceUnavailable, ToolError
from gateway.api.tools import Interceptor, ToolCall

log = structlog.get_logger(__name__)

Handler = Callable[[ToolCall], Awaitable[BaseModel]]


@dataclass(frozen=True)
class Link:
    interceptor: Interceptor
    name: str
    fail_open: bool = False


def tool_error_in(error: BaseException) -> ToolError | None:
    """The :class:`ToolError` that ``error`` is or carries: a tool that runs a task group raises its ToolError
    wrapped in an exception group, and the caller must still see the tool's own error code."""
    if isinstance(error, ToolError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = tool_error_in(inner)
            if found is not None:
                return found
    return None


def provider_down_in(error: BaseException) -> ProviderUnavailable | None:
    """The :class:`ProviderUnavailable` that ``error`` is or carries (in an exception group)."""
    if isinstance(error, ProviderUnavailable):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if (found := provider_down_in(inner)) is not None:
                return found
    return None


def build_chain(links: Sequence[Link], handler: Handler) -> Handler:
    """Compose ``links`` (outermost first) around ``handler``."""
    chain = handler
    for link in reversed(links):
        chain = _wrap(link, chain)
    return chain


def _carries(error: BaseException, wanted: BaseException) -> bool:
    """Whether ``error`` is ``wanted`` or an exception group holding it."""
    if error is wanted:
        return True
    return isinstance(error, BaseExceptionGroup) and any(_carries(inner, wanted) for inner in error.exceptions)


def _wrap(link: Link, downstream: Handler) -> Handler:
    async def run(call: ToolCall) -> BaseModel:
        reached = False
        downstream_error: BaseException | None = None

        async def call_next(inner: ToolCall) -> BaseModel:
            nonlocal reached, downstream_error
            reached = True
            try:
                return await downstream(inner)
            except BaseException as exc:  # the link sees it as raised; see below
                downstream_error = exc
                raise

        try:
            return await link.interceptor(call, call_next)
        except ToolError:
            raise
        except Exception as exc:
            if downstream_error is not None and _carries(exc, downstream_error):
                raise downstream_error from None  # not the link's failure: its policy does not apply
            if (carried := tool_error_in(exc)) is not None:
                raise carried from None
            if link.fail_open and not reached:
                log.warning("interceptor failed; continuing (fail_open)", interceptor=link.name, error=repr(exc))
                return await downstream(call)
            log.error("interceptor failed; call refused (fail_closed)", interceptor=link.name, exc_info=exc)
            raise ServiceUnavailable(
                f"the {link.name} check could not run; the call was refused",
                details={"interceptor": link.name},
            ) from exc

    return run
