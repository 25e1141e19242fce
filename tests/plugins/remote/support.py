"""Real upstream servers for the federation tests: the official reference servers from npm (installed by
``.ci/run`` into ``tests/plugins/remote/node``; never fetched at test time) and a Python SDK server run over
Streamable HTTP or stdio in a subprocess; plus gateway configs that front them and process-tree helpers."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node" / "node_modules" / "@modelcontextprotocol"
EVERYTHING = NODE_MODULES / "server-everything" / "dist" / "index.js"
FILESYSTEM = NODE_MODULES / "server-filesystem" / "dist" / "index.js"
PY_SERVER = HERE / "servers" / "py_server.py"


def node_or_skip() -> str:
    """The ``node`` executable, or skip: the reference servers need Node.js and their npm packages."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (CI installs Debian's nodejs; see .ci/run)")
    if not EVERYTHING.exists() or not FILESYSTEM.exists():
        pytest.skip(
            "the reference MCP servers are not installed: run `npm ci --prefix tests/plugins/remote/node` "
            "(.ci/run does)"
        )
    return node


def everything_server(node: str, **extra: Any) -> dict[str, Any]:
    return {"name": "everything", "command": [node, str(EVERYTHING), "stdio"], "prefix": "ev_", **extra}


def filesystem_server(node: str, root: Path, **extra: Any) -> dict[str, Any]:
    return {"name": "files", "command": [node, str(FILESYSTEM), str(root)], "prefix": "fs_", **extra}


def py_stdio_server(state: Path, **extra: Any) -> dict[str, Any]:
    return {"name": "py", "command": [sys.executable, str(PY_SERVER), "stdio", str(state)], "prefix": "py_", **extra}


def py_http_server(upstream: HttpUpstream, **extra: Any) -> dict[str, Any]:
    return {"name": "py", "url": upstream.url, "prefix": "py_", **extra}


def remote_config(tmp_path: Path, servers: list[dict[str, Any]], **tables: Any) -> dict[str, Any]:
    """A gateway serving only the remote pack in front of ``servers``; ``tables`` add or replace tables."""
    base: dict[str, Any] = {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "tester"},
        "packs": {"enabled": ["remote"]},
        "sanitize": {"logs": ""},
        "providers": {"store": "sqlite", "rate_limiter": "memory"},
        "plugins": {"remote": {"servers": servers}},
    }
    for key, value in tables.items():
        if key == "plugins":
            base["plugins"] = {**base["plugins"], **value}
        else:
            base[key] = {**base.get(key, {}), **value}
    return base


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in value.items()) + " }"
    raise TypeError(type(value))


def write_toml(path: Path, config: dict[str, Any]) -> Path:
    """``config`` as a TOML file (servers as ``[[plugins.remote.servers]]`` tables) for a gateway subprocess."""
    lines = []
    for table, body in config.items():
        if table == "plugins":
            for server in body["remote"]["servers"]:
                lines.append("[[plugins.remote.servers]]")
                lines += [f"{key} = {toml_value(value)}" for key, value in server.items()]
            for other, sub in body.items():
                if other != "remote":
                    lines.append(f"[plugins.{other}]")
                    lines += [f"{key} = {toml_value(value)}" for key, value in sub.items()]
            continue
        lines.append(f"[{table}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in body.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class HttpUpstream:
    """The Python SDK server over Streamable HTTP in a subprocess; :meth:`restart` keeps the port."""

    port: int
    state: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    command: list[str] | None = None
    """Another server to run instead (it reads its port from ``PORT``): the TypeScript reference server."""

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command or [sys.executable, str(PY_SERVER), "http", str(self.port), str(self.state)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PORT": str(self.port)},
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError("the Python upstream server exited at start") from None
                time.sleep(0.1)
        raise TimeoutError("the Python upstream server did not listen in time")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def restart(self) -> None:
        self.kill()
        self.start()


@contextmanager
def http_upstream(tmp_path: Path, command: list[str] | None = None) -> Iterator[HttpUpstream]:
    upstream = HttpUpstream(free_port(), tmp_path / "upstream-state", command=command)
    upstream.start()
    try:
        yield upstream
    finally:
        upstream.kill()


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    result = []
    for child in children(pid):
        result += [child, *descendants(child)]
    return result


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(predicate: Any, timeout: float = 20.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


async def eventually(predicate: Any, timeout: float = 20.0, interval: float = 0.05) -> bool:
    """:func:`wait_until` for async tests: the event loop keeps running meanwhile."""
    import anyio

    with anyio.move_on_after(timeout):
        while not predicate():
            await anyio.sleep(interval)
    return bool(predicate())


def servers_under(pid: int, marker: str) -> list[int]:
    """Descendants of ``pid`` whose command line contains ``marker`` (the upstream server, not its launcher)."""
    return [p for p in descendants(pid) if marker in cmdline(p) and "upstream_launcher" not in cmdline(p)]


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
