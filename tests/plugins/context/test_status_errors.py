"""What ``status`` says about a job that did not do its work: over REST the same error as over MCP when every
connector failed, and a reason on a job stopped because the process running it exited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.api import Principal
from gateway.testing import running_gateway
from tests.plugins.context.rest_support import SCOPES, rest_config, serve
from tests.plugins.context.support import add_file_connector, call, context_config, sample_repo


def test_rest_index_status_carries_the_error_mcp_shows(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "shop")
    with serve(rest_config(tmp_path / "data"), {"admin": ("acme", SCOPES)}) as api:
        api.add_file_connector("admin", repo)
        first = api.index("admin")
        assert first["status"] == "completed" and first["current_job"]["error"] is None
        repo.rename(tmp_path / "moved")  # the connector's root is gone: it fails, the job still completes
        rest = api.index("admin")

        async def mcp_status() -> dict[str, Any]:
            principal = Principal(subject="mcp-user", tenant="acme", scopes=frozenset(SCOPES), method="api_key")
            context = api.runtime.new_context(principal=principal)
            return (await api.runtime.call_tool("context.index_control", {"action": "status"}, context)).body

        mcp = anyio.run(mcp_status)
    assert rest["status"] == mcp["status"] == "completed"
    assert rest["current_job"]["progress"] == {"completed": 0, "total": 0, "current_connector": None}
    assert rest["current_job"]["error"] == mcp["current_job"]["error"]
    assert rest["current_job"]["error"].startswith("1 of 1 connector(s) failed: file-shop: ")


@pytest.mark.anyio
async def test_a_job_stopped_by_its_process_exiting_says_so(repo: Path, data_dir: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        service = client.runtime.packs["context"].service
        await service.start_indexing("default")
        await service.jobs.aclose()  # what the gateway does when its process exits (a one-shot `gateway call`)
        status = await call(client, "context.index_control", {"action": "status"})
    assert status["status"] == "stopped"
    assert status["current_job"]["error"].startswith("stopped: the process running it exited before it finished")
