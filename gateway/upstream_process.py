"""The process side of a stdio upstream: how its command is launched, and where its stderr goes.

The command runs under :mod:`gateway.upstream_launcher`, which ties the server's whole process group to the
gateway's life. Its stderr is read line by line and logged as ``upstream stderr`` events under the upstream's
name, so it passes the same redaction as every log line and never interleaves raw text with the JSON log stream.
Memory and the log stay bounded whatever the server writes: a line longer than :data:`MAX_LINE` bytes is logged
cut there (the rest of it is read and dropped), and at most :data:`MAX_LINES_PER_SECOND` lines a second are
logged per server; the lines past that are counted, and one ``upstream stderr suppressed`` event says how many
with the next line logged (or when the server's stderr closes).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

import structlog

from gateway.api.upstream import scrub_secrets

__all__ = ["StderrPump", "launcher_argv"]

log = structlog.get_logger(__name__)

LAUNCHER = Path(__file__).with_name("upstream_launcher.py")
MAX_LINE = 4000
"""Bytes of one stderr line that are logged; the rest of a longer line is dropped."""
MAX_LINES_PER_SECOND = 100
"""Stderr lines logged per server and second (a server in a loop must not flood the log)."""


def launcher_argv(command: Sequence[str]) -> tuple[str, list[str]]:
    """``(executable, args)`` that run ``command`` under the launcher, tied to this process."""
    # -I: the launcher needs only the standard library, and nothing of the environment may change what it runs.
    return sys.executable, ["-I", str(LAUNCHER), str(os.getpid()), "--", *command]


class StderrPump:
    """A pipe for a child's stderr and a daemon thread logging each line it writes.

    Pass :attr:`writer` as the child's stderr, call :meth:`spawned` once the child runs (the parent's copy of
    the write end is closed, so the thread ends when the child's group has exited), and :meth:`close` when
    done with it.
    """

    def __init__(self, upstream: str, secrets: Mapping[str, str] | None = None) -> None:
        """``secrets``: where each secret goes (``env.API_KEY``) -> its value, replaced by its name in each line."""
        self.upstream = upstream
        self._secrets = dict(secrets or {})
        read_fd, write_fd = os.pipe()
        self.writer: IO[bytes] = os.fdopen(write_fd, "wb", buffering=0)
        self._reader = os.fdopen(read_fd, "rb")
        self.tail: deque[str] = deque(maxlen=3)
        """The last lines written: why a server that would not start said it would not."""
        self._thread = threading.Thread(target=self._pump, name=f"stderr:{upstream}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        window, logged, suppressed = 0, 0, 0
        with self._reader:
            for raw in _lines(self._reader):
                line = scrub_secrets(raw.decode("utf-8", "replace").rstrip("\r\n"), self._secrets)
                if not line:
                    continue
                self.tail.append(line)
                now = int(time.monotonic())
                if now != window:
                    window, logged = now, 0
                if logged >= MAX_LINES_PER_SECOND:
                    suppressed += 1
                    continue
                logged += 1
                if suppressed:
                    log.warning("upstream stderr suppressed", upstream=self.upstream, lines=suppressed)
                    suppressed = 0
                log.info("upstream stderr", upstream=self.upstream, line=line)
        if suppressed:
            log.warning("upstream stderr suppressed", upstream=self.upstream, lines=suppressed)

    def spawned(self) -> None:
        if not self.writer.closed:
            self.writer.close()

    def close(self) -> None:
        self.spawned()

    def finished(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the child's last lines (its group closed the pipe); True if read."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


def _lines(reader: IO[bytes]) -> Iterator[bytes]:
    """The lines ``reader`` yields, each cut at :data:`MAX_LINE` bytes: the rest of a longer line is read in
    bounded pieces and dropped, so no line is ever held whole."""
    while raw := reader.readline(MAX_LINE):
        if len(raw) == MAX_LINE and not raw.endswith(b"\n"):  # cut: skip to the end of the line
            while (rest := reader.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
        yield raw
