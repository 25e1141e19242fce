"""Names the config gives that a server does not offer: a ``tools.deny`` entry is told like an ``allow`` one, and
a rate-limit rule's unknown tool is excused only by a server that may list it later (not up, or not read yet)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway.api import ConfigError
from gateway.testing import running_gateway
from tests.plugins.remote.support import py_stdio_server, remote_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.parametrize("listing", ["allow", "deny"])
async def test_a_list_naming_tools_the_server_lacks_is_told_once_per_read(tmp_path: Path, listing: str) -> None:
    """Again at the next start, when the catalogue read matches last run's copy (the typo is the config's)."""
    server = py_stdio_server(tmp_path / "state", start="eager", tools={listing: ["ehco", "pid"]})
    for _ in range(2):
        with capture_logs() as logs:
            async with running_gateway(remote_config(tmp_path, [server])) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
        told = [e for e in logs if e["event"].startswith("upstream offers no tool of these names")]
        assert ("py_pid" in listed) == (listing == "allow") and ("py_echo" in listed) == (listing == "deny")
        assert [(e["event"], e["upstream"], e["tools"]) for e in told] == [
            (f"upstream offers no tool of these names in tools.{listing}", "py", ["ehco"])
        ]


def _limited(tmp_path: Path, server: dict[str, Any], tools: list[str]) -> dict[str, Any]:
    rule = {"name": "echo", "tools": tools, "kind": "token_bucket", "limit": 5, "period_seconds": 60}
    return remote_config(
        tmp_path,
        [server],
        pipeline={"interceptors": [{"name": "rate_limit"}]},
        plugins={"interceptor": {"rate_limit": {"rules": [rule]}}},
    )


async def test_a_server_without_a_prefix_that_is_up_excuses_no_unknown_tool_in_a_rate_limit_rule(
    tmp_path: Path,
) -> None:
    server = py_stdio_server(tmp_path / "state", prefix="", start="eager")
    async with running_gateway(_limited(tmp_path, server, ["echo"])) as client:  # a tool it lists: fine
        assert client.runtime.packs["remote"].upstreams[0].state == "up"
    with pytest.raises(ConfigError, match=r"unknown tool\(s\) ehco"):
        async with running_gateway(_limited(tmp_path, server, ["echo", "ehco"])):
            pass


async def test_a_server_that_is_not_up_may_still_offer_a_name(tmp_path: Path) -> None:
    """Down (no catalogue yet), or idle with last run's copy of its catalogue: either may list it later."""
    down = py_stdio_server(tmp_path / "state", prefix="", restart_backoff_seconds=30, env={"PY_SERVER_FAIL": "1"})
    with capture_logs() as logs:
        async with running_gateway(_limited(tmp_path, down, ["ehco"])):
            pass
    assert any(e["event"] == "rate-limit rule names tools not served now" for e in logs)
    lazy = py_stdio_server(tmp_path / "state", prefix="")
    async with running_gateway(_limited(tmp_path, lazy, ["echo"])):  # the first run leaves a copy
        pass
    with capture_logs() as logs:
        async with running_gateway(_limited(tmp_path, lazy, ["ehco"])) as client:
            assert client.runtime.packs["remote"].upstreams[0].state == "idle"
    assert any(e["event"] == "rate-limit rule names tools not served now" for e in logs)
