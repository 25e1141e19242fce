"""Gateway overhead: the same trivial tool served by the gateway (full pipeline) and by a bare lowlevel SDK server.

Prints calls/s for both and their ratio, in-memory, over stdio and over HTTP. Targets: ratio >= 0.9 for stdio and
HTTP, >= 0.8 in-memory.

    python bench/gateway_overhead.py [--calls 2000]

The gateway side serves the example pack (`examples/hello_pack`, installed as a third party would) with the full
call pipeline: a rate-limit interceptor (memory backend, token bucket), per-call structured logging with
log redaction, input/output validation.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import _bare_server  # noqa: E402

from gateway.app import running_runtime  # noqa: E402
from gateway.mcp_adapter import in_memory_client  # noqa: E402

CONFIG = """
[gateway]
data_dir = "{data}"
identity = "bench"
log_level = "info"
[packs]
enabled = ["hello"]
[providers]
rate_limiter = "memory"
[sanitize]
logs = "patterns"
[pipeline]
interceptors = [{{ name = "rate_limit" }}]
[[plugins.interceptor.rate_limit.rules]]
name = "greet-per-minute"
tools = ["hello_greet"]
kind = "token_bucket"
limit = 100000000
period_seconds = 60
"""


async def _drive(client: Client, calls: int) -> float:
    for _ in range(50):  # warm-up
        await client.call_tool("hello_greet", {"name": "bench"})
    start = time.perf_counter()
    for _ in range(calls):
        result = await client.call_tool("hello_greet", {"name": "bench"})
        assert not result.is_error
    return calls / (time.perf_counter() - start)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early: {proc.stderr.read() if proc.stderr else ''}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise TimeoutError(url)


ROUNDS = 7


async def _alternate(gateway: Client, bare: Client, calls: int) -> tuple[float, float]:
    """Both clients connected at once, driven in alternating rounds; the best round of each is kept, so a burst
    of load from elsewhere on the machine does not decide the ratio."""
    gateway_rates, bare_rates = [], []
    for _ in range(ROUNDS):
        gateway_rates.append(await _drive(gateway, calls))
        bare_rates.append(await _drive(bare, calls))
    return max(gateway_rates), max(bare_rates)


async def in_memory(config_path: Path, calls: int) -> tuple[float, float]:
    async with running_runtime(config_path, configure_logs=True) as runtime:
        async with (
            in_memory_client(runtime, mode="legacy") as gateway,
            Client(_bare_server.build(), mode="legacy") as bare,
        ):
            return await _alternate(gateway, bare, calls)


async def stdio(config_path: Path, calls: int) -> tuple[float, float]:
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


async def http(config_path: Path, calls: int) -> tuple[float, float]:
    procs, urls = [], []
    for command in (
        [sys.executable, "-m", "gateway", "serve", "--config", str(config_path), "--transport", "http", "--port"],
        [sys.executable, str(HERE / "_bare_server.py"), "http"],
    ):
        port = _free_port()
        procs.append(subprocess.Popen([*command, str(port)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}/mcp")
    try:
        for url, proc in zip(urls, procs, strict=True):
            _wait_http(url, proc)
        async with Client(urls[0], mode="legacy") as gateway, Client(urls[1], mode="legacy") as bare:
            return await _alternate(gateway, bare, calls)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config_path = Path(tmp) / "bench.toml"
        config_path.write_text(CONFIG.format(data=Path(tmp) / "data"))
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
    for name, (gateway, bare) in results.items():
        print(f"{name:<10} {gateway:>16.0f} {bare:>17.0f} {gateway / bare:>7.2f} {targets[name]:>7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help=f"calls per round ({ROUNDS} alternating rounds)")
    anyio.run(main, parser.parse_args().calls)
