"""Two assistants on one machine: two real ``gateway serve`` processes, each launched by the MCP SDK's stdio client
as an editor launches the README's ``mcpServers`` command: the project's own ``config.toml`` (Qdrant Edge, SQLite
with the SQLite rate limiter, local embedder), both on one data dir (``MCP_GATEWAY_DATA_DIR``).

The first owns the Qdrant Edge store and serves it to the second; both submit and search at once and each finds
what the other submitted (a search sees another process's submissions once its lexical index is older than
``lexical_refresh_seconds``). Then the first is killed with ``kill -9`` while the second has calls in flight: the
second takes the store over, every one of its calls succeeds, and a later start finds both stores in agreement
with every acknowledged submission. CLI commands (``gateway gim stats``, ``gateway call``, ``gateway reindex`` with
and without ``--missing``) run beside the live servers as clients of the store. Neither gateway is given a prebuilt
embedding model: both build and cache the int8 graph in the shared data dir at the same moment, which must leave
one whole file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from gateway.testing import running_gateway
from tests.plugins.gim.support import call, submission
from tests.plugins.gim.test_consistency import stores_agree
from tests.serve_process import serve_pid

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
README_CONFIG = ROOT / "config.toml"
STALENESS = 1.1
"""A search sees another process's newest submissions once its lexical index is at most this old
(``[plugins.gim] lexical_refresh_seconds``, 1 s by default)."""

TOPICS = [
    ("psycopg.OperationalError: connection to server at \"db\" failed: FATAL: too many clients already",
     "The connection pool was sized above PostgreSQL's max_connections.", "lower the pool max_size"),
    ("OSError: [Errno 24] Too many open files: '/var/log/app/worker.log'",
     "Log handlers were created per request and never closed, exhausting file descriptors.", "reuse one handler"),
    ("RecursionError: maximum recursion depth exceeded while calling a Python object",
     "A property getter called itself through a misspelled attribute name.", "fix the attribute name"),
    ("ssl.SSLCertVerificationError: certificate verify failed: unable to get local issuer certificate",
     "The container image lacked the ca-certificates package.", "apt-get install ca-certificates"),
    ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
     "A UTF-16 file with a byte-order mark was read as UTF-8.", "open it with encoding='utf-16'"),
    ("ImportError: cannot import name 'soft_unicode' from 'markupsafe'",
     "markupsafe 2.1 removed soft_unicode, still used by old Jinja2 releases.", "pip install 'jinja2>=3'"),
    ("KeyError: 'DATABASE_URL' in os.environ lookup at settings.py",
     "The .env file was not loaded because python-dotenv ran after settings were imported.", "load dotenv first"),
    ("TypeError: Object of type datetime is not JSON serializable",
     "json.dumps was given datetimes without a default encoder.", "pass default=str to json.dumps"),
    ("MemoryError: Unable to allocate 12.0 GiB for an array with shape (40000, 40000) and data type float64",
     "A pairwise distance matrix was built densely instead of in chunks.", "compute the distances in chunks"),
    ("docker: Error response from daemon: driver failed programming external connectivity: port is already allocated",
     "Another container still published the same host port.", "stop the old container"),
    ("git: fatal: refusing to merge unrelated histories",
     "The local repository was initialised separately from the remote one.", "git pull --allow-unrelated-histories"),
    ("npm ERR! code ERESOLVE unable to resolve dependency tree: peer react@17 from react-dom@18",
     "react-dom 18 requires react 18 but the project pinned react 17.", "upgrade react to 18"),
    ("java.lang.OutOfMemoryError: Metaspace during hot redeploy of the web application",
     "Each redeploy leaked a classloader through a static thread-local.", "clear the thread-local on undeploy"),
    ("ValueError: Input contains NaN, infinity or a value too large for dtype('float32') in sklearn fit",
     "Missing values in the feature frame were not imputed before fitting.", "add a SimpleImputer step"),
    ("redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.",
     "The app container used localhost instead of the redis service name.", "set REDIS_HOST=redis"),
    ("CUDA error: device-side assert triggered in nll_loss forward",
     "Class labels ran from 1 to N while the loss expected 0 to N-1.", "shift the labels down by one"),
]  # fmt: skip


def issue(n: int) -> dict[str, Any]:
    error, cause, command = TOPICS[n % len(TOPICS)]
    actions = [{"order": 1, "type": "command", "command": f"{command} (case {n})", "explanation": cause}]
    return submission(f"{error}\n  (seen in service {n})", f"{cause} (case {n})", actions=actions)


def environment(data_dir: Path) -> dict[str, str]:
    # One identity for both (the per-install id), so one daily quota: large enough for the test's searches.
    return {**os.environ, "MCP_GATEWAY_DATA_DIR": str(data_dir), "DEFAULT_DAILY_SEARCH_LIMIT": "1000"}


@asynccontextmanager
async def assistant(config: Path, data_dir: Path) -> AsyncIterator[Any]:
    """An MCP client that launched ``gateway serve --config CONFIG`` over stdio, as an editor does."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)], env=environment(data_dir)
    )
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def search_finds(client: Any, submitted: dict[str, Any], answer: dict[str, Any]) -> None:
    found = await call(client, "gim_search_issues", {"error_message": submitted["error_message"], "limit": 3})
    assert found["issues"] and found["issues"][0]["issue_id"] == answer["master_issue_id"], found


def gateway_cli(*args: str, config: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args, "--config", str(config)],
        cwd=ROOT,
        env=environment(data_dir),
        capture_output=True,
        text=True,
        timeout=180,
    )


def submitted_count(config: Path, data_dir: Path) -> int:
    stats = gateway_cli("gim", "stats", config=config, data_dir=data_dir)
    assert stats.returncode == 0, stats.stderr
    return int(json.loads(stats.stdout)["total_issues_submitted"])


async def test_two_assistants_share_one_data_dir_and_the_second_survives_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    first_config, second_config = tmp_path / "first.toml", tmp_path / "second.toml"  # told apart in /proc
    for config in (first_config, second_config):
        shutil.copyfile(README_CONFIG, config)
    acknowledged: list[tuple[dict[str, Any], dict[str, Any]]] = []
    own: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {"first": [], "second": []}
    step = {name: anyio.Event() for name in ("first up", "second up", "first submitted", "second submitted",
                                             "first searched", "kill phase", "killed")}  # fmt: skip
    first_pid: list[int] = []

    def owner_of_the_store() -> int:
        return int((data_dir / "providers" / "vector_store" / "qdrant-edge" / "store.pid").read_text())

    progress = {"submitted": 0, "searched": 0}

    async def submit(client: Any, numbers: range, into: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        for n in numbers:
            arguments = issue(n)
            answer = await call(client, "gim_submit_issue", arguments)
            into.append((arguments, answer))
            acknowledged.append((arguments, answer))

    async def first_assistant() -> None:
        try:
            async with assistant(first_config, data_dir) as client:
                first_pid.append(serve_pid(first_config))
                step["first up"].set()
                await step["second up"].wait()
                await submit(client, range(0, 4), own["first"])  # while the second submits its own
                step["first submitted"].set()
                await step["second submitted"].wait()
                await anyio.sleep(STALENESS)
                for arguments, answer in own["second"]:
                    await search_finds(client, arguments, answer)
                step["first searched"].set()
                await step["kill phase"].wait()
                await submit(client, range(200, 10_000), [])  # until its server is killed
        except BaseException:
            if not step["killed"].is_set():
                raise  # anything but the end of a killed server's session is a failure

    async def second_assistant() -> None:
        await step["first up"].wait()
        async with assistant(second_config, data_dir) as client:
            second_pid = serve_pid(second_config)
            assert owner_of_the_store() == first_pid[0]
            step["second up"].set()
            await submit(client, range(4, 8), own["second"])
            step["second submitted"].set()
            await step["first submitted"].wait()
            await anyio.sleep(STALENESS)
            for arguments, answer in own["first"]:
                await search_finds(client, arguments, answer)
            await step["first searched"].wait()
            assert len(acknowledged) == 8 and all(not answer["merged"] for _, answer in acknowledged)

            # The command line beside two live servers: a client of the store too.
            assert await anyio.to_thread.run_sync(submitted_count, second_config, data_dir) == 8
            probe, probe_answer = own["first"][1]
            query = json.dumps({"error_message": probe["error_message"]})
            found = await anyio.to_thread.run_sync(
                lambda: gateway_cli("call", "gim_search_issues", query, config=second_config, data_dir=data_dir)
            )
            assert found.returncode == 0, found.stderr
            assert json.loads(found.stdout)["issues"][0]["issue_id"] == probe_answer["master_issue_id"]
            reindex = await anyio.to_thread.run_sync(
                lambda: gateway_cli("reindex", "--missing", config=second_config, data_dir=data_dir)
            )
            assert reindex.returncode == 0, reindex.stderr
            assert ": 0 embedded" in reindex.stdout, reindex.stdout
            # A full reindex builds a new generation beside both servers, switches, and drops the old collection:
            # the servers follow the switch.
            reindex = await anyio.to_thread.run_sync(
                lambda: gateway_cli("reindex", config=second_config, data_dir=data_dir)
            )
            assert reindex.returncode == 0, reindex.stderr
            assert ": 8 embedded" in reindex.stdout, reindex.stdout
            await search_finds(client, *own["first"][2])

            # kill -9 the owner while this assistant has submissions and searches in flight.
            step["kill phase"].set()

            async def submissions() -> None:
                n = 100
                while not step["killed"].is_set() or progress["submitted"] < 12:
                    await submit(client, range(n, n + 1), own["second"])
                    progress["submitted"] += 1
                    n += 1

            async def searches() -> None:
                while not step["killed"].is_set() or progress["searched"] < 20:
                    arguments, answer = acknowledged[progress["searched"] % 8]
                    await search_finds(client, arguments, answer)
                    progress["searched"] += 1

            async def killer() -> None:
                while progress["submitted"] < 3:
                    await anyio.sleep(0.01)
                os.kill(first_pid[0], signal.SIGKILL)
                step["killed"].set()

            async with anyio.create_task_group() as group:
                group.start_soon(submissions)
                group.start_soon(searches)
                group.start_soon(killer)
            assert owner_of_the_store() == second_pid
            await anyio.sleep(STALENESS)
            for arguments, answer in acknowledged[-6:]:
                await search_finds(client, arguments, answer)  # this assistant's server now owns the store
            # The killed server may have committed the submission it was working on without getting to answer it
            # (kill -9 lands anywhere; its client sends one call at a time): at most one more than acknowledged.
            stored = await anyio.to_thread.run_sync(submitted_count, second_config, data_dir)
            assert len(acknowledged) <= stored <= len(acknowledged) + 1, (stored, len(acknowledged))

    with anyio.fail_after(600):
        async with anyio.create_task_group() as group:
            group.start_soon(first_assistant)
            group.start_soon(second_assistant)

    # A later start reconciles and finds both stores in agreement with everything acknowledged.
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", "1000")
    async with running_gateway(README_CONFIG, data_dir) as client:
        active = await stores_agree(client.runtime.packs["gim"].core)
        assert {answer["issue_id"] for _, answer in acknowledged} <= active
        for arguments, answer in acknowledged[::5]:
            await search_finds(client, arguments, answer)
    graphs = list((data_dir / "providers" / "embedder" / "local").glob("*.onnx"))
    assert len(graphs) == 1 and not list(graphs[0].parent.glob("*.tmp"))  # two builders, one whole file
