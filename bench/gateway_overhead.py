"""Gateway overhead: the same trivial tool served by the gateway (full pipeline) and by a bare lowlevel SDK server.

Prints calls/s for both and their ratio, in-memory, over stdio and over HTTP. Targets: ratio >= 0.9 for stdio and
HTTP, >= 0.8 in-memory. Both servers are connected at once and driven in alternating chunks of 25 calls, so load from
elsewhere on the machine falls on both alike; the ratio is the median over 5 rounds.

    python bench/gateway_overhead.py [--calls 1000]

The gateway side serves the example pack (`examples/hello_pack`, installed as a third party would) with the full
call pipeline: a rate-limit interceptor (memory backend, token bucket), per-call structured logging with
log redaction, input/output validation.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import _bare_server  # noqa: E402
from _overhead import alternate, free_port, pipeline_config, wait_for_port  # noqa: E402

from gateway.app import running_runtime  # noqa: E402
from gateway.mcp_adapter import in_memory_client  # noqa: E402


async def _timed(client: Client, calls: int) -> float:
    """Seconds for ``calls`` sequential calls."""
    start = time.perf_counter()
    for _ in range(calls):
        result = await client.call_tool("hello_greet", {"name": "bench"})
        assert not result.is_error
    return time.perf_counter() - start


ROUNDS = 5
CHUNK = 25


@dataclass(frozen=True)
class Result:
    gateway: float
    """Calls/s through the gateway, over all rounds."""
    bare: float
    ratio: float
    """The median over rounds of (gateway calls/s) / (bare calls/s) within the round."""


async def _alternate(gateway: Client, bare: Client, calls: int) -> Result:
    """Both clients connected at once and driven in alternating chunks of CHUNK calls, so that load from
    elsewhere on the machine falls on both sides alike; ROUNDS rounds of ``calls`` calls a side."""
    for client in (gateway, bare):  # warm-up
        await _timed(client, 50)
    chunks = max(1, calls // CHUNK)
    spent = await alternate(lambda: _timed(gateway, CHUNK), lambda: _timed(bare, CHUNK), rounds=ROUNDS, chunks=chunks)
    done = ROUNDS * chunks * CHUNK
    return Result(done / spent.first_seconds, done / spent.second_seconds, spent.median_ratio)


async def in_memory(config_path: Path, calls: int) -> Result:
    async with running_runtime(config_path, configure_logs=True) as runtime:
        async with (
            in_memory_client(runtime, mode="legacy") as gateway,
            Client(_bare_server.build(), mode="legacy") as bare,
        ):
            return await _alternate(gateway, bare, calls)


async def stdio(config_path: Path, calls: int) -> Result:
    env = dict(os.environ)
    gw = StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config_path)], env=env
    )
    bare = StdioServerParameters(command=sys.executable, args=[str(HERE / "_bare_server.py"), "stdio"], env=env)
    # The servers' stderr (the gateway's JSON log lines) goes to /dev/null, as it would to a log file.
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        async with Client(gw, mode="legacy") as gateway, Client(bare, mode="legacy") as bare_client:
            return await _alternate(gateway, bare_client, calls)
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)


async def http(config_path: Path, calls: int) -> Result:
    procs, ports, urls = [], [], []
    for command in (
        [sys.executable, "-m", "gateway", "serve", "--config", str(config_path), "--transport", "http", "--port"],
        [sys.executable, str(HERE / "_bare_server.py"), "http"],
    ):
        port = free_port()
        ports.append(port)
        procs.append(subprocess.Popen([*command, str(port)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}/mcp")
    try:
        for port, proc in zip(ports, procs, strict=True):
            wait_for_port(port, proc)
        async with Client(urls[0], mode="legacy") as gateway, Client(urls[1], mode="legacy") as bare:
            return await _alternate(gateway, bare, calls)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config_path = Path(tmp) / "bench.toml"
        config_path.write_text(pipeline_config(Path(tmp) / "data", "hello", "hello_greet"))
        devnull = open(os.devnull, "w")
        saved, sys.stderr = sys.stderr, devnull
        try:
            results = {"in-memory": await in_memory(config_path, calls)}
        finally:
            sys.stderr = saved
        results["stdio"] = await stdio(config_path, calls)
        results["http"] = await http(config_path, max(100, calls // 4))
    targets = {"in-memory": 0.8, "stdio": 0.9, "http": 0.9}
    print(f"load average (1 min) after the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'transport':<10} {'gateway calls/s':>16} {'bare SDK calls/s':>17} {'ratio':>7} {'target':>7}")
    for name, result in results.items():
        print(f"{name:<10} {result.gateway:>16.0f} {result.bare:>17.0f} {result.ratio:>7.2f} {targets[name]:>7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help=f"calls per round ({ROUNDS} alternating rounds)")
    anyio.run(main, parser.parse_args().calls)
