"""Structured logging: JSON lines on stderr (stdout is the stdio wire), one correlation id per call, redacted.

Every line logged while a tool call runs carries its ``correlation_id`` and ``tool``: the runtime enters
:func:`enter_call` around the call, and :func:`add_call_scope` (a processor) copies both into each event. One
context variable set per call is much cheaper than binding and unbinding structlog's context variables, and the
gateway logs a line for every call, so this path is kept short.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import json
import logging
import sys
import threading
from collections.abc import Callable, MutableMapping
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog

from gateway.log_floods import FloodGate

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}

EventDict = MutableMapping[str, Any]
Processor = Callable[[Any, str, EventDict], EventDict]

_call: ContextVar[tuple[str, str] | None] = ContextVar("gateway_call", default=None)


def enter_call(correlation_id: str, tool: str) -> Token[tuple[str, str] | None]:
    """Mark the current task as running call ``correlation_id`` of ``tool``; pass the token to :func:`exit_call`."""
    return _call.set((correlation_id, tool))


def exit_call(token: Token[tuple[str, str] | None]) -> None:
    _call.reset(token)


def add_call_scope(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    """Processor: add the running call's ``correlation_id`` and ``tool`` unless the event names its own."""
    scope = _call.get()
    if scope is not None:
        event_dict.setdefault("correlation_id", scope[0])
        event_dict.setdefault("tool", scope[1])
    return event_dict


def merge_structlog_contextvars(logger: Any, method: str, event_dict: EventDict) -> EventDict:
    """structlog's ``merge_contextvars`` (for plugins that use ``structlog.contextvars.bind_contextvars``),
    reading only structlog's own variables instead of every context variable of the task."""
    variables = getattr(structlog.contextvars, "_CONTEXT_VARS", None)
    if variables is None:  # a structlog without the registry: the library's own, slower processor
        return structlog.contextvars.merge_contextvars(logger, method, event_dict)
    prefix = len(structlog.contextvars.STRUCTLOG_KEY_PREFIX)
    for name, var in list(variables.items()):
        value = var.get(Ellipsis)
        if value is not Ellipsis:
            event_dict.setdefault(name[prefix:], value)
    return event_dict


_MAX_DEPTH = 16
_REDACTION_FAILED = "<REDACTION_FAILED>"
_TRUSTED_KEYS = frozenset({"timestamp", "level", "correlation_id", "ms", "logger"})
"""Values the logging setup itself produces (never user data): not scanned."""
_CACHEABLE = 256


def make_log_redactor(redact: Callable[[str], str], *, trusted_keys: frozenset[str] = _TRUSTED_KEYS) -> Processor:
    """A structlog processor applying ``redact`` (layer 1's ``PatternSanitizer.redact``) to every value of the
    event dict: the event and every value, recursively through dicts, lists, tuples and sets; any other object
    (an exception, a path, a model) is logged as its redacted ``str()``. Place it after ``format_exc_info`` so
    rendered tracebacks are redacted too. Keys are left alone, and so are the values of ``trusted_keys``
    (timestamps, levels, correlation ids). A value that cannot be redacted is replaced, never logged as is.

    Short strings recur on every line (event names, tool names, identities), so their redactions are cached.
    """
    cached = functools.lru_cache(maxsize=4096)(redact)

    def redact_text(text: str) -> str:
        try:
            return cached(text) if len(text) <= _CACHEABLE else redact(text)
        except Exception:
            return _REDACTION_FAILED

    def clean(value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return redact_text(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        if depth >= _MAX_DEPTH:
            return _REDACTION_FAILED
        if isinstance(value, dict):
            return {k: clean(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [clean(v, depth + 1) for v in value]
        try:
            return redact_text(str(value))
        except Exception:
            return _REDACTION_FAILED

    def processor(_logger: Any, _method_name: str, event_dict: EventDict) -> EventDict:
        # Replacing values (never adding or removing keys) while iterating is safe for a dict.
        for key, value in event_dict.items():
            if value is None or key in trusted_keys:
                continue
            kind = type(value)
            if kind is str:
                event_dict[key] = redact_text(value)
            elif kind is not int and kind is not float and kind is not bool:
                event_dict[key] = clean(value, 0)
        return event_dict

    return processor


def _render(obj: Any, default: Callable[[Any], Any] | None = None, **_: Any) -> str:
    try:
        return orjson.dumps(obj, default=default, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # what orjson refuses (integers beyond 64 bits, ...), the standard library renders
        return json.dumps(obj, default=default)


MAX_LOGGED_NAME = 128
"""A tool name no pack serves is the caller's text: the call log keeps at most this many characters of it (cut
after redaction, so a secret across the cut is not half kept)."""
MAX_REDACTED_NAME = 4096
"""What of such a name is redacted at all (a caller's megabyte-long name must not cost a megabyte of scanning)."""


class CallLog:
    """Writes the one line the gateway logs per tool call (``"tool call"``, at ``info``).

    It runs for every call, so it is composed directly from the configured parts (the same stream, redaction
    and JSON rendering as every other line, the same ``level`` and ``timestamp`` keys) rather than through
    structlog's per-event processor chain, at less than half the cost. It writes through structlog's
    ``WriteLogger``, as every other line is written: one ``write`` of the whole line, newline included, so lines of
    threads logging at once never interleave (``print`` writes the newline apart). Processors added to structlog's
    configuration by an embedding application do not see this line.
    """

    def __init__(self, stream: Any, *, enabled: bool, redactor: Processor | None = None) -> None:
        self.enabled = enabled
        self._printer = structlog.WriteLogger(stream)
        self._redactor = redactor

    def __call__(self, **fields: Any) -> None:
        if not self.enabled:
            return
        event: dict[str, Any] = {"event": "tool call", **fields, "level": "info"}
        event["timestamp"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        if self._redactor is not None:
            event = self._redactor(None, "info", event)  # type: ignore[assignment]
        tool = event.get("tool")
        if isinstance(tool, str) and len(tool) > MAX_LOGGED_NAME:  # a caller's text: cut once redacted, not before
            event["tool"] = tool[:MAX_LOGGED_NAME]
        self._printer.msg(_render(event))


_call_log: CallLog | None = None


def call_log() -> CallLog:
    """The per-call line's writer as :func:`configure_logging` last set it up (stderr before that)."""
    return _call_log or CallLog(sys.stderr, enabled=True)


def configure_logging(level: str = "info", *, redactor: Processor | None = None, stream: Any = None) -> None:
    """Configure structlog (and the standard library's loggers) to write JSON lines to ``stream`` (stderr).

    ``redactor`` runs last before rendering, so no processor can reintroduce what it removed.
    """
    global _call_log
    stream = stream or sys.stderr
    if not faulthandler.is_enabled():  # a fatal signal (SIGBUS in a native library...) still leaves its traceback
        with contextlib.suppress(AttributeError, ValueError, OSError):  # a stream with no file descriptor
            faulthandler.enable(file=stream)
    numeric = _LEVELS[level]
    _call_log = CallLog(stream, enabled=numeric <= logging.INFO, redactor=redactor)
    processors: list[Any] = [
        merge_structlog_contextvars,
        add_call_scope,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
    ]
    if redactor is not None:
        processors.append(redactor)
    processors.append(structlog.processors.JSONRenderer(serializer=_render))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    # Third-party libraries log through the standard library: same stream, JSON too, same redaction.
    handler = logging.StreamHandler(stream)
    handler.addFilter(FloodGate())  # one message many times a second (an upstream's garbage, say) is cut
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *processors,
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(numeric, logging.WARNING))
    logging.captureWarnings(True)  # a library's warnings are lines like the others (JSON, redacted), not raw text
    if not isinstance(threading.excepthook, _ThreadDeaths):
        threading.excepthook = _ThreadDeaths(threading.excepthook)


class _ThreadDeaths:
    """An exception that ends a thread (a library's worker, say) is logged as a JSON line, redacted, instead of a
    raw traceback on stderr; a hook someone else installed before (an embedding program's, a test runner's) still
    runs after it."""

    def __init__(self, previous: Callable[[threading.ExceptHookArgs], Any]) -> None:
        self._previous = previous

    def __call__(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        exc_info = (args.exc_type, args.exc_value, args.exc_traceback)
        thread = args.thread.name if args.thread is not None else None
        log_ = structlog.get_logger("gateway.threads")
        log_.error("a thread ended with an exception", thread=thread, exc_info=exc_info)
        if self._previous is not threading.__excepthook__:  # the default would print the raw traceback again
            self._previous(args)
