"""kill -9 of a real gateway process (MCP over stdio) in the middle of a stream of submissions: after a restart
both stores agree (no row without its vectors, no vector without its row) and no acknowledged submission is lost."""

from __future__ import annotations

import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from gateway.testing import running_gateway
from tests.plugins.gim.support import call, gim_config, submission, write_config
from tests.plugins.gim.test_consistency import stores_agree

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _issue(n: int) -> dict[str, Any]:
    module = f"plugin_{n}_{random.Random(n).randrange(10**6)}"
    return submission(
        f"ModuleNotFoundError: No module named '{module}'\n  File \"/srv/app/run_{n}.py\", line {n}, in <module>",
        f"The optional extra that provides {module} was not installed (case {n}).",
        actions=[{"order": 1, "type": "install", "command": f"pip install {module}", "explanation": "install it"}],
    )


def _server_pid(config: Path) -> int | None:
    """The pid of the gateway serving ``config`` (a child of this test process)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(config).encode() in cmdline and b"serve" in cmdline:
            return int(entry.name)
    return None


async def _stream_until_killed(config: Path, first: int, kill_after: int, rng: random.Random) -> list[dict[str, Any]]:
    """Submit issues ``first``, ``first+1``... over stdio; kill -9 the server at a random moment once
    ``kill_after`` have been acknowledged. Returns (submission, answer) of every acknowledged one."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)])
    acked: list[dict[str, Any]] = []
    killed = anyio.Event()

    async def killer() -> None:
        while len(acked) < kill_after:
            await anyio.sleep(0.005)
        await anyio.sleep(rng.uniform(0.0, 0.08))  # lands anywhere inside the next submissions
        pid = _server_pid(config)
        assert pid is not None, "the gateway process was not found"
        os.kill(pid, signal.SIGKILL)
        killed.set()

    try:
        async with Client(params, read_timeout_seconds=60) as client, anyio.create_task_group() as group:
            group.start_soon(killer)
            n = first
            while not killed.is_set():
                arguments = _issue(n)
                result = await client.call_tool("gim_submit_issue", arguments)
                if not result.is_error:
                    acked.append({"submission": arguments, "answer": result.structured_content})
                n += 1
    except BaseException as exc:  # the connection dies with the server: expected
        if not killed.is_set() or isinstance(exc, KeyboardInterrupt):
            raise
    return acked


async def test_kill_9_during_submissions_leaves_the_stores_in_agreement(
    tmp_path: Path, data_dir: Path, minilm_graph: Path
) -> None:
    deployment = gim_config(gateway={"data_dir": data_dir.as_posix(), "log_level": "warning"})
    config = write_config(tmp_path / "config.toml", deployment)
    rng = random.Random(7)
    acknowledged: list[dict[str, Any]] = []
    for round_number in range(3):  # three crashes, each followed by a restart that must reconcile
        acknowledged += await _stream_until_killed(config, first=1000 * round_number, kill_after=8, rng=rng)
    assert len(acknowledged) >= 24
    async with running_gateway(gim_config(), data_dir) as client:
        core = client.runtime.packs["gim"].core
        active = await stores_agree(core)
        for entry in acknowledged:
            issue_id = entry["answer"]["issue_id"]
            assert issue_id in active, "an acknowledged submission was lost"
            bundle = await call(client, "gim_get_fix_bundle", {"issue_id": issue_id})
            assert bundle["issue_id"] == entry["answer"]["master_issue_id"]
            if not entry["answer"]["merged"]:  # a master keeps the fix it was submitted with
                sent = entry["submission"]["fix_bundle"]["env_actions"][0]["command"]
                assert bundle["fix_bundle"]["env_actions"][0]["command"] == sent
        probe = acknowledged[len(acknowledged) // 2]
        found = await call(client, "gim_search_issues", {"error_message": probe["submission"]["error_message"]})
        assert found["issues"][0]["issue_id"] == probe["answer"]["master_issue_id"]
