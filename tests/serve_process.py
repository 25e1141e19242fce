"""Finding the ``gateway serve`` process a test or benchmark launched (to kill -9 it, or to read its memory)."""

from __future__ import annotations

from pathlib import Path


def find_serve_pid(config: Path) -> int | None:
    """The pid of the ``gateway serve`` process started with ``config`` (a child of this process), if any."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # the process ended meanwhile
        if str(config).encode() in cmdline and b"serve" in cmdline:
            return int(entry.name)
    return None


def serve_pid(config: Path) -> int:
    """:func:`find_serve_pid`, failing the test when no such process runs."""
    pid = find_serve_pid(config)
    if pid is None:
        raise AssertionError(f"no gateway serves {config}")
    return pid
