"""Run an upstream MCP server so that it never outlives the gateway, even when the gateway is killed with SIGKILL.

Usage (the gateway runs it; it needs only the standard library)::

    python -I upstream_launcher.py GATEWAY_PID -- COMMAND [ARG...]

The gateway starts this script as the leader of a new process group. The script asks Linux to send it SIGTERM
when the gateway dies (``prctl(PR_SET_PDEATHSIG)``; elsewhere it notices within a second that its parent
changed), then starts COMMAND in the same process group, handing it its stdin/stdout (the MCP stdio wire) and
stderr, and keeping no copy of the wire itself, so the server's exit is seen at once. It then waits:

- COMMAND exits: whatever it left behind in the group (an ``npx`` child, say) is sent SIGTERM, and SIGKILL if it
  is still there after the grace period (a leftover holding the wire would keep the gateway from seeing the exit);
  then the script exits with COMMAND's status (by SIGKILL, with the group, when something had to be killed). On
  Linux the script is the group's child subreaper (``PR_SET_CHILD_SUBREAPER``), so it sees when the last leftover
  is gone; elsewhere a forked helper sends the SIGKILL after the grace period;
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
PR_SET_CHILD_SUBREAPER = 36
_SIGNALS = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` (Linux only); True if it succeeded."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux only); True if it did."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def become_subreaper() -> bool:
    """Have the orphans among this process's descendants reparented to it, not to init (Linux only)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _signal_group(sig: int) -> None:
    try:
        os.killpg(os.getpgrp(), sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(command: subprocess.Popen[bytes]) -> bool:
    """Collect every child of this group that exited (COMMAND, and orphans handed to a subreaper); True while one
    is left. A descendant that left the group (``setsid``) is not waited for: the group's signals miss it."""
    while True:
        try:
            pid, status = os.waitpid(-os.getpgrp(), os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == command.pid:
            command.returncode = os.waitstatus_to_exitcode(status)


def _wait_children(seconds: float, command: subprocess.Popen[bytes]) -> bool:
    """Reap children for up to ``seconds``; True once none is left."""
    deadline = time.monotonic() + seconds
    while _reap(command):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _stop_group(command: subprocess.Popen[bytes]) -> int:
    """SIGTERM to the group, SIGKILL after the grace period; returns the exit status for this script."""
    _signal_group(signal.SIGTERM)  # this script has SIGTERM blocked, so it survives to escalate
    _wait_children(GRACE_SECONDS, command)
    _signal_group(signal.SIGKILL)  # also ends this script: nothing of the group may outlive it
    return 128 + signal.SIGTERM


def _end_leftovers(command: subprocess.Popen[bytes], subreaper: bool) -> int:
    """COMMAND exited: SIGTERM to what it left in the group, SIGKILL to whatever outlasts the grace period."""
    status = command.returncode
    assert status is not None
    _signal_group(signal.SIGTERM)  # this script has SIGTERM blocked
    if subreaper:  # every leftover is a child of this script now: it knows when the last one is gone
        if not _wait_children(GRACE_SECONDS, command):
            _signal_group(signal.SIGKILL)  # also ends this script: a leftover ignored SIGTERM
    elif os.fork() == 0:  # no subreaper: a helper in the group kills what is left (and itself) after the grace
        os.close(2)  # the server's stderr ends with the server's group, not with this helper
        time.sleep(GRACE_SECONDS)
        _signal_group(signal.SIGKILL)
        os._exit(0)
    return status if status >= 0 else 128 - status


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
    subreaper = become_subreaper()
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
        _reap(child)
        if child.returncode is not None:
            return _end_leftovers(child, subreaper)
        if os.getppid() != gateway_pid:
            return _stop_group(child)
        signum = _next_signal(1.0, received)
        if signum is not None and signum != signal.SIGCHLD:
            return _stop_group(child)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
