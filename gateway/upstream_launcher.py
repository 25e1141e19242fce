"""Run an upstream MCP server so that it never outlives the gateway, even when the gateway is killed with SIGKILL.

Usage (the gateway runs it; it needs only the standard library)::

    python -I upstream_launcher.py GATEWAY_PID -- COMMAND [ARG...]

The gateway starts this script as the leader of a new process group. The script asks Linux to send it SIGTERM
when the gateway dies (``prctl(PR_SET_PDEATHSIG)``; elsewhere it notices within a second that its parent
changed), then starts COMMAND in the same process group, handing it its stdin/stdout (the MCP stdio wire) and
stderr, and keeping no copy of the wire itself, so the server's exit is seen at once. It then waits:

- COMMAND exits: whatever it left behind in the group (an ``npx`` child, say) is sent SIGTERM, and the script
  exits with COMMAND's status;
- the gateway dies, or the script is sent SIGTERM/SIGINT/SIGHUP (the gateway stopping the server): the whole group
  gets SIGTERM, and after a grace period SIGKILL.

So no process of the server's group survives its gateway, including grandchildren a plain parent-death signal on
COMMAND alone would miss.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import time

GRACE_SECONDS = 2.0
PR_SET_PDEATHSIG = 1
_SIGNALS = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux only); True if it did."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _signal_group(sig: int) -> None:
    try:
        os.killpg(os.getpgrp(), sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_group(child: subprocess.Popen[bytes]) -> int:
    """SIGTERM to the group, SIGKILL after the grace period; returns the exit status for this script."""
    _signal_group(signal.SIGTERM)  # this script has SIGTERM blocked, so it survives to escalate
    deadline = time.monotonic() + GRACE_SECONDS
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal_group(signal.SIGKILL)  # also ends this script: nothing of the group may outlive it
    return 128 + signal.SIGTERM


def _next_signal(timeout: float, received: list[int]) -> int | None:
    """The next stop or child signal within ``timeout`` seconds (queued while blocked, where the OS can)."""
    if hasattr(signal, "sigtimedwait"):
        info = signal.sigtimedwait(_SIGNALS, timeout)
        return info.si_signo if info is not None else None
    time.sleep(min(timeout, 0.2))  # no sigtimedwait (macOS): handlers record what arrives
    return received.pop(0) if received else None


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: upstream_launcher.py GATEWAY_PID -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    gateway_pid = int(argv[1])
    command = argv[3:]
    received: list[int] = []
    if hasattr(signal, "sigtimedwait"):
        # Blocked (and so queued for sigtimedwait below) before anything can send them; the server gets them back.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    else:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, set())
        for sig in _SIGNALS - {signal.SIGCHLD}:
            signal.signal(sig, lambda signum, _frame: received.append(signum))
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != gateway_pid:  # the gateway died before the death signal was armed
        return 1
    try:
        child = subprocess.Popen(command, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, previous))
    except OSError as exc:
        print(f"upstream_launcher: cannot start {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    # Keep no copy of the MCP wire: when the server exits, the gateway must see end-of-file at once.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    while True:
        status = child.poll()
        if status is not None:
            _signal_group(signal.SIGTERM)  # leftovers of the server; this script has SIGTERM blocked
            return status if status >= 0 else 128 - status
        if os.getppid() != gateway_pid:
            return _stop_group(child)
        signum = _next_signal(1.0, received)
        if signum is not None and signum != signal.SIGCHLD:
            return _stop_group(child)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
