"""Third-party libraries' lines, cut when one message floods the log.

A library may log the same message many times a second: the MCP SDK logs an error with its traceback for every
line a remote server prints on stdout that is not JSON-RPC, and a server printing garbage wrote megabytes a
second. :class:`FloodGate` lets through at most ``per_second`` lines of one message (one logger, one text) in a
second, only the first of them with its traceback; the next line of that message, a second or more later, says how
many were dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

__all__ = ["FloodGate"]


@dataclass
class _Window:
    start: float
    lines: int = 0
    dropped: int = 0


class FloodGate(logging.Filter):
    """A handler's filter: see the module doc."""

    def __init__(self, per_second: int = 10, *, remembered: int = 1000) -> None:
        super().__init__()
        self._per_second = per_second
        self._remembered = remembered
        self._windows: dict[tuple[str, str], _Window] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        try:  # the text as written: distinct lines of one format string are not a flood
            text = record.getMessage()[:500]
        except Exception:  # arguments that do not fit the format: logging reports that when it writes the line
            text = repr(record.msg)[:500]
        key = (record.name, text)
        now = time.monotonic()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window.start >= 1.0:
                if len(self._windows) >= self._remembered:  # keep the windows still open (a flood under way)
                    self._windows = {k: w for k, w in self._windows.items() if now - w.start < 1.0}
                    if len(self._windows) >= self._remembered:
                        self._windows.clear()
                dropped = window.dropped if window is not None else 0
                window = self._windows[key] = _Window(now)
                if dropped:
                    record.msg = f"{record.msg} ({dropped} more lines like this were dropped in a second)"
            window.lines += 1
            if window.lines > self._per_second:
                window.dropped += 1
                return False
        if window.lines > 1:
            record.exc_info = record.exc_text = None
            record.stack_info = None
        return True
