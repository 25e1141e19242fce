"""Structured logging: JSON lines on stderr (stdout is the stdio wire), one correlation id per call."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}

Processor = Callable[[Any, str, dict[str, Any]], dict[str, Any]]


def configure_logging(level: str = "info", *, redactor: Processor | None = None, stream: Any = None) -> None:
    """Configure structlog (and the standard library's loggers) to write JSON lines to ``stream`` (stderr).

    ``redactor`` runs last before rendering, so no processor can reintroduce what it removed.
    """
    stream = stream or sys.stderr
    numeric = _LEVELS[level]
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
    ]
    if redactor is not None:
        processors.append(redactor)
    processors.append(structlog.processors.JSONRenderer())
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    # Third-party libraries log through the standard library: same stream, JSON too, same redaction.
    handler = logging.StreamHandler(stream)
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
