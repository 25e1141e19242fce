"""A ``gateway serve`` subprocess spoken to in raw JSON-RPC lines, with its stdin kept open (for the stdio and
shutdown tests)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.gateway.http_support import INITIALIZE

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def serve(config: Path, *args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(config), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


class StdioPeer:
    """Raw JSON-RPC lines to and from a gateway subprocess whose stdin stays open."""

    def __init__(self, config: Path) -> None:
        self.process = serve(config, stdin=subprocess.PIPE)

    def send(self, message: dict[str, Any] | str) -> None:
        assert self.process.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the gateway closed stdout"
        return json.loads(line)  # type: ignore[no-any-return]

    def open_session(self) -> None:
        self.send(INITIALIZE)
        assert self.receive()["id"] == INITIALIZE["id"]
        self.send(INITIALIZED)

    def stop(self, signum: int) -> tuple[int, str]:
        """Send ``signum`` with stdin still open; the exit status and stderr once the process is gone."""
        self.process.send_signal(signum)
        try:
            _, stderr = self.process.communicate(timeout=60)  # a guard against a hang, not a speed target
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"the gateway did not stop on {signal.Signals(signum).name}") from None
        return self.process.returncode, stderr.decode()


def events(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
