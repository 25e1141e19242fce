"""Federation overhead: calls/s through the gateway to a remote Python SDK server ÷ calls/s straight to it.

The remote server is a real `mcp` Python SDK server (``tests/plugins/remote/servers/py_server.py``) on Streamable
HTTP in a subprocess. The gateway runs in another subprocess (``gateway serve --transport http``) with the ``remote``
pack in front of that server and its full pipeline: a rate-limit interceptor (memory, token bucket), argument
checks against the remote input schema, result checks against its output schema, one structured log line per call
redacted by the ``patterns`` layer, Prometheus metrics. The same SDK ``Client`` class over the same transport (HTTP)
calls both; both clients are connected at once and driven in alternating chunks of 25 calls, so load from elsewhere
on the machine falls on both alike. The ratio is the median over rounds of (gateway calls/s) / (direct calls/s).

Workloads: the remote tool ``pause(ms)`` answers after ``ms`` milliseconds of waiting (what a remote tool that calls
an API or a database spends); 0 ms measures pure protocol overhead, the worst case. ``--concurrency`` runs that many
callers at once on each side.

``--transport stdio`` puts every hop on stdio instead: the client starts the gateway (which starts the server as a
stdio upstream) on one side and the server itself on the other.

``--floor`` puts ``bench/_floor_proxy.py`` where the gateway sits: a relay that parses and re-serialises each message
and does nothing else, the least any gateway written in Python must do, so its ratio is the best a Python hop
reaches on this machine (``--floor bytes``, stdio only: lines relayed without even being parsed).

    python bench/federation_overhead.py [--calls 200] [--rounds 5] [--work-ms 0 10 50 100] [--concurrency 1 8]
        [--transport http|stdio] [--floor [parse|bytes]]
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
import httpx
from mcp import Client, StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _overhead import alternate, free_port, pipeline_config, wait_for_port

from tests.plugins.remote.support import PY_SERVER, cmdline, descendants

ROOT = Path(__file__).resolve().parent.parent
FLOOR_PROXY = ROOT / "bench" / "_floor_proxy.py"
CHUNK = 25
TARGET = 0.85

REMOTE_CONFIG = """
[transport]
json_response = {json_response}
[[plugins.remote.servers]]
name = "py"
url = "{url}"
prefix = "py_"
max_concurrency = 64
"""


TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int | None) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (this process when None)."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@dataclass(frozen=True)
class Side:
    """One way of calling: its client, the tool's name there, and the processes doing the work."""

    client: Client
    tool: str
    pids: dict[str, int | None]


@dataclass(frozen=True)
class Result:
    work_ms: float
    concurrency: int
    gateway: float
    direct: float
    ratio: float
    cpu_ms: dict[str, dict[str, float]]
    """CPU ms per call, by side then process (client, gateway, upstream)."""


async def _chunk(side: Side, ms: float, concurrency: int, cpu: dict[str, float]) -> float:
    """Seconds for CHUNK calls spread over ``concurrency`` callers; adds each process's CPU seconds to ``cpu``."""

    async def caller(calls: int) -> None:
        for _ in range(calls):
            result = await side.client.call_tool(side.tool, {"ms": ms})
            assert not result.is_error, result

    before = {name: _cpu(pid) for name, pid in side.pids.items()}
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(concurrency):
            tg.start_soon(caller, CHUNK // concurrency + (1 if i < CHUNK % concurrency else 0))
    elapsed = time.perf_counter() - start
    for name, pid in side.pids.items():
        cpu[name] = cpu.get(name, 0.0) + _cpu(pid) - before[name]
    return elapsed


async def _measure(gateway: Side, direct: Side, ms: float, concurrency: int, calls: int, rounds: int) -> Result:
    for side in (gateway, direct):  # warm-up
        await _chunk(side, ms, concurrency, {})
    cpu: list[dict[str, float]] = [{}, {}]
    chunks = max(1, calls // CHUNK)
    spent = await alternate(
        lambda: _chunk(gateway, ms, concurrency, cpu[0]),
        lambda: _chunk(direct, ms, concurrency, cpu[1]),
        rounds=rounds,
        chunks=chunks,
    )
    done = rounds * chunks * CHUNK
    per_call = {
        side: {k: v * 1000 / done for k, v in c.items()} for side, c in zip(("gateway", "direct"), cpu, strict=True)
    }
    return Result(
        ms, concurrency, done / spent.first_seconds, done / spent.second_seconds, spent.median_ratio, per_call
    )


STDIO_REMOTE = """
[[plugins.remote.servers]]
name = "py"
command = ["{python}", "{server}", "stdio", "{state}"]
prefix = "py_"
max_concurrency = 64
start = "eager"
"""


async def _stdio_results(args: argparse.Namespace, tmp: str) -> list[Result]:
    """Both sides over stdio: the client starts the gateway (which starts the server) or the server itself."""
    states = [Path(tmp) / "state-via", Path(tmp) / "state-direct"]
    for state in states:
        state.mkdir()
    config = Path(tmp) / "gateway.toml"
    remote = STDIO_REMOTE.format(python=sys.executable, server=PY_SERVER, state=states[0])
    config.write_text(pipeline_config(Path(tmp) / "data", "remote", "py_pause", remote))
    gateway = StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)], cwd=str(ROOT)
    )
    if args.floor:
        relay = [str(FLOOR_PROXY), "stdio", *(["--raw"] if args.floor == "bytes" else [])]
        upstream = [sys.executable, str(PY_SERVER), "stdio", str(states[0])]
        gateway = StdioServerParameters(command=sys.executable, args=[*relay, *upstream])
    server = StdioServerParameters(command=sys.executable, args=[str(PY_SERVER), "stdio", str(states[1])])
    with open(os.devnull, "w") as quiet:  # the JSON log lines go where a log file would
        async with (
            Client(stdio_client(gateway, errlog=quiet), mode=args.mode) as through,  # type: ignore[arg-type]
            Client(server, mode=args.mode) as straight,
        ):
            mine = descendants(os.getpid())  # depth first: a launcher before its server
            upstreams = [p for p in mine if f"py_server.py stdio {states[0]}" in cmdline(p)]
            pids = {
                "gateway": next(p for p in mine if str(config) in cmdline(p) or str(FLOOR_PROXY) in cmdline(p)),
                "upstream": upstreams[-1],  # the server, below the gateway's launcher
                "direct": next(p for p in mine if str(states[1]) in cmdline(p)),
            }
            tool = "pause" if args.floor else "py_pause"
            via = Side(through, tool, {"client": None, "gateway": pids["gateway"], "upstream": pids["upstream"]})
            direct = Side(straight, "pause", {"client": None, "upstream": pids["direct"]})
            return [
                await _measure(via, direct, ms, concurrency, args.calls, args.rounds)
                for concurrency in args.concurrency
                for ms in args.work_ms
            ]


async def main(args: argparse.Namespace) -> None:
    if args.transport == "stdio":
        with tempfile.TemporaryDirectory() as tmp:
            _print(args, await _stdio_results(args, tmp))
        return
    with tempfile.TemporaryDirectory() as tmp:
        upstream_port, gateway_port = free_port(), free_port()
        upstream_url = f"http://127.0.0.1:{upstream_port}/mcp"
        config = Path(tmp) / "gateway.toml"
        remote = REMOTE_CONFIG.format(url=upstream_url, json_response=str(args.json_response).lower())
        config.write_text(pipeline_config(Path(tmp) / "data", "remote", "py_pause", remote))
        upstream = subprocess.Popen(
            [sys.executable, str(PY_SERVER), "http", str(upstream_port), str(Path(tmp) / "state")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs = [upstream]
        try:
            wait_for_port(upstream_port, upstream)
            port = str(gateway_port)
            serve = ["-m", "gateway", "serve", "--config", str(config), "--transport", "http", "--port", port]
            if args.floor:
                serve = [str(FLOOR_PROXY), "http", port, upstream_url]
            gateway = subprocess.Popen(
                [sys.executable, *serve],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # the JSON log lines go where a log file would
                cwd=ROOT,
            )
            procs.append(gateway)
            wait_for_port(gateway_port, gateway)
            if not args.floor:
                httpx.get(f"http://127.0.0.1:{gateway_port}/health", timeout=30).raise_for_status()
            results = []
            async with (
                Client(f"http://127.0.0.1:{gateway_port}/mcp", mode=args.mode) as through,
                Client(upstream_url, mode=args.mode) as straight,
            ):
                pids = {"client": None, "upstream": upstream.pid}
                via = Side(through, "pause" if args.floor else "py_pause", {**pids, "gateway": gateway.pid})
                direct = Side(straight, "pause", pids)
                for concurrency in args.concurrency:
                    for ms in args.work_ms:
                        results.append(await _measure(via, direct, ms, concurrency, args.calls, args.rounds))
        finally:
            for proc in reversed(procs):
                proc.terminate()
                proc.wait(15)
    _print(args, results)


def _print(args: argparse.Namespace, results: list[Result]) -> None:
    hop = f"the floor proxy ({args.floor}) in place of the gateway" if args.floor else "the gateway"
    print(f"transport: {args.transport} (client to gateway, gateway to server, client to server); hop: {hop}")
    print(f"client protocol mode: {args.mode}; {args.rounds} rounds of {args.calls} calls a side, chunks of {CHUNK}")
    print(f"load average (1 min) after the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(
        f"{'remote work':>11} {'callers':>8} {'gateway calls/s':>16} {'direct calls/s':>15} {'ratio':>6} "
        f"{'target':>7}   CPU ms/call via gateway (client+gateway+upstream) | direct (client+upstream)"
    )
    for r in results:
        g, d = r.cpu_ms["gateway"], r.cpu_ms["direct"]
        print(
            f"{r.work_ms:>8g} ms {r.concurrency:>8} {r.gateway:>16.1f} {r.direct:>15.1f} {r.ratio:>6.2f} {TARGET:>7.2f}"
            f"   {g['client']:.2f} + {g['gateway']:.2f} + {g['upstream']:.2f}"
            f" | {d['client']:.2f} + {d['upstream']:.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per round and side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work-ms", type=float, nargs="+", default=[0.0, 10.0, 50.0, 100.0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--transport", choices=["http", "stdio"], default="http", help="every hop's transport")
    parser.add_argument(
        "--floor",
        nargs="?",
        const="parse",
        choices=["parse", "bytes"],
        help="measure bench/_floor_proxy.py in the gateway's place (bytes: stdio lines not even parsed)",
    )
    parser.add_argument("--mode", default="auto", help="the client's protocol mode: auto (2026-07-28) or legacy")
    parser.add_argument(
        "--json-response", action="store_true", help="the gateway answers with JSON bodies instead of SSE streams"
    )
    parsed = parser.parse_args()
    if parsed.floor == "bytes" and parsed.transport != "stdio":
        parser.error("--floor bytes relays stdio lines: use it with --transport stdio")
    anyio.run(main, parsed)
