"""The stdio upstream launcher: the server's whole process group dies with the gateway, even on SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from gateway.upstream_launcher import GRACE_SECONDS
from gateway.upstream_process import LAUNCHER, launcher_argv
from tests.plugins.remote.support import alive, descendants, wait_until

# A stand-in for the gateway: starts the launcher the way the SDK's stdio client does (a new session), then waits.
PARENT = textwrap.dedent(
    """
    import os, subprocess, sys, time
    child = subprocess.Popen(
        [sys.executable, "-I", sys.argv[1], str(os.getpid()), "--", *sys.argv[2:]],
        start_new_session=True, stdin=subprocess.PIPE,
    )
    print(child.pid, flush=True)
    time.sleep(600)
    """
)
# A server that leaves a grandchild behind, as ``npx`` does.
FAMILY = ["/bin/sh", "-c", "sleep 600 & sleep 600; true"]


def _parent(command: list[str]) -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(LAUNCHER), *command], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def test_the_group_dies_when_the_gateway_is_killed() -> None:
    parent, launcher = _parent(FAMILY)
    try:
        assert wait_until(lambda: len(descendants(launcher)) >= 3)  # sh and its two sleeps
        group = [launcher, *descendants(launcher)]
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert wait_until(lambda: not any(alive(pid) for pid in group), timeout=15)
    finally:
        for pid in descendants(parent.pid):
            os.kill(pid, signal.SIGKILL)
        parent.kill()


def test_the_server_exit_status_and_its_leftovers(tmp_path: Path) -> None:
    left = tmp_path / "left.pid"
    script = f"sleep 600 & echo $! > {left}; exit 7"
    done = subprocess.run(
        [sys.executable, "-I", str(LAUNCHER), str(os.getpid()), "--", "/bin/sh", "-c", script],
        start_new_session=True,
        timeout=60,
    )
    assert done.returncode == 7
    leftover = int(left.read_text())
    assert wait_until(lambda: not alive(leftover))  # what the server left in its group was stopped too


def test_refuses_to_start_for_a_parent_that_is_gone(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = subprocess.run(
        [sys.executable, "-I", str(LAUNCHER), "1", "--", "/bin/sh", "-c", f"touch {marker}"], timeout=60
    )
    assert done.returncode == 1 and not marker.exists()


def test_a_command_that_cannot_start() -> None:
    done = subprocess.run(
        [sys.executable, "-I", str(LAUNCHER), str(os.getpid()), "--", "/no/such/server"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 127 and "cannot start '/no/such/server'" in done.stderr


def test_launcher_argv_ties_the_command_to_this_process() -> None:
    executable, args = launcher_argv(["node", "server.js"])
    assert executable == sys.executable
    assert args == ["-I", str(LAUNCHER), str(os.getpid()), "--", "node", "server.js"]


def test_a_leftover_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    """It would hold the server's stdout open: the gateway would never see the server exit."""
    left = tmp_path / "left.pid"
    script = f"(trap '' TERM; exec sleep 600) & echo $! > {left}; sleep 0.5; exit 7"  # 0.5 s: the trap is set
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(LAUNCHER), str(os.getpid()), "--", "/bin/sh", "-c", script],
            start_new_session=True,
            stdout=subprocess.PIPE,  # read to its end: no process of the group may keep it open
            timeout=GRACE_SECONDS + 10,
        )
        leftover = int(left.read_text())
        assert wait_until(lambda: not alive(leftover), timeout=5), "the leftover outlived the launcher"
        assert time.monotonic() - started < GRACE_SECONDS + 3
        assert done.returncode in (7, -signal.SIGKILL)
    finally:
        if left.exists() and alive(int(left.read_text())):
            os.kill(int(left.read_text()), signal.SIGKILL)


def test_a_leftover_that_left_the_group_is_not_waited_for(tmp_path: Path) -> None:
    """The group's signals cannot reach it, so waiting for it would only delay the exit (and lose its status)."""
    left = tmp_path / "left.pid"
    script = f"setsid sh -c 'echo $$ > {left}; exec sleep 600' >/dev/null 2>&1 & sleep 0.3; exit 3"
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(LAUNCHER), str(os.getpid()), "--", "/bin/sh", "-c", script],
            start_new_session=True,
            timeout=GRACE_SECONDS + 10,
        )
        assert done.returncode == 3 and time.monotonic() - started < GRACE_SECONDS
    finally:
        if left.exists() and alive(int(left.read_text())):
            os.kill(int(left.read_text()), signal.SIGKILL)
