"""What the overhead benchmarks share: the gateway configuration with the full call pipeline, starting servers on
free ports, and driving two clients in alternating chunks.

Used by ``bench/gateway_overhead.py`` and ``bench/federation_overhead.py`` (run as scripts, so ``bench/`` is on the
import path).
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

PIPELINE_CONFIG = """
[gateway]
data_dir = "{data}"
identity = "bench"
log_level = "info"
[packs]
enabled = ["{pack}"]
[providers]
rate_limiter = "memory"
[sanitize]
logs = "patterns"
[pipeline]
interceptors = [{{ name = "rate_limit" }}]
[[plugins.interceptor.rate_limit.rules]]
name = "{tool}-per-minute"
tools = ["{tool}"]
kind = "token_bucket"
limit = 100000000
period_seconds = 60
"""


def pipeline_config(data_dir: Path, pack: str, tool: str, extra: str = "") -> str:
    """TOML for a gateway serving ``pack`` with the full call pipeline in front of ``tool``: a rate-limit
    interceptor (memory backend, a token bucket no benchmark empties), one structured log line per call redacted
    by the ``patterns`` layer. ``extra`` is appended (more tables)."""
    return PIPELINE_CONFIG.format(data=data_dir, pack=pack, tool=tool) + extra


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    """Return once ``proc`` accepts connections on ``port``; raise if it exits first or takes over a minute."""
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("a server exited at start")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(port)


@dataclass(frozen=True)
class Alternated:
    first_seconds: float
    second_seconds: float
    median_ratio: float
    """The median over rounds of (second's seconds / first's seconds): the first side's speed as a share of the
    second's."""


async def alternate(
    first: Callable[[], Awaitable[float]], second: Callable[[], Awaitable[float]], *, rounds: int, chunks: int
) -> Alternated:
    """``rounds`` rounds of ``chunks`` chunks a side, the sides taking turns chunk by chunk so that load from
    elsewhere on the machine falls on both alike. ``first`` and ``second`` run one chunk and return its seconds."""
    totals = [0.0, 0.0]
    ratios = []
    for _ in range(rounds):
        spent = [0.0, 0.0]
        for _ in range(chunks):
            spent[0] += await first()
            spent[1] += await second()
        ratios.append(spent[1] / spent[0])
        totals = [totals[0] + spent[0], totals[1] + spent[1]]
    return Alternated(totals[0], totals[1], statistics.median(ratios))
