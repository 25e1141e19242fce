"""The same pack on PostgreSQL: migrations, submissions and merges, search, votes, usage statistics, reindex and
the cross-process dedup lock, with portable SQL only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.api import Principal
from gateway.testing import running_gateway
from tests.plugins.gim.support import (
    NUMPY_ACTIONS,
    NUMPY_CAUSE,
    NUMPY_ERROR,
    NUMPY_FIX,
    call,
    gim_config,
    submission,
)
from tests.plugins.gim.test_consistency import stores_agree

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def _config(dsn: str) -> dict[str, Any]:
    config = gim_config()
    config["providers"]["store"] = "postgres"
    config["plugins"]["store"] = {"postgres": {"dsn": dsn}}
    return config


async def test_gim_on_postgres(data_dir: Path, postgres_db: str) -> None:
    numpy = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS, code_fix=NUMPY_FIX)
    async with running_gateway(_config(postgres_db), data_dir) as client:
        results: list[dict[str, Any]] = []

        async def submit() -> None:
            results.append(await call(client, "gim_submit_issue", numpy))

        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(submit)
        assert len({r["master_issue_id"] for r in results}) == 1
        master = results[0]["master_issue_id"]
        found = await call(client, "gim_search_issues", {"error_message": "module 'numpy' has no attribute 'float'"})
        assert found["issues"][0]["issue_id"] == master and found["total_results"] == 1
        runtime = client.runtime
        for who, success in (("alice", True), ("bob", True), ("alice", False)):
            context = runtime.new_context(principal=Principal(subject=who, all_scopes=True))
            outcome = await runtime.call_tool("gim_confirm_fix", {"issue_id": master, "success": success}, context)
            assert not outcome.is_error, outcome.body
        assert outcome.body["updated_confidence"] == 0.6 and outcome.body["updated_verification_count"] == 1
        bundle = await call(client, "gim_get_fix_bundle", {"issue_id": results[-1]["issue_id"]})
        assert bundle["issue_id"] == master and bundle["fix_bundle"]["code_fix"] == NUMPY_FIX
        stats = json.loads((await client.read_resource("gim://stats")).contents[0].text)
        assert stats["total_issues_submitted"] == 4 and stats["total_queries"] == 1
        assert stats["total_issues_resolved"] == 2 and stats["top_resolved_issues"] == [master]
        per_issue = json.loads((await client.read_resource(f"gim://issues/{master}/stats")).contents[0].text)
        assert per_issue["total_fix_retrieved"] == 1 and per_issue["last_queried_at"] is not None
        (report,) = await runtime.packs["gim"].reindex(missing_only=False, progress=lambda done, total: None)
        assert report.embedded == 4
        await stores_agree(runtime.packs["gim"].core)
    async with running_gateway(_config(postgres_db), data_dir) as client:  # restart: state comes back
        found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert found["issues"][0]["issue_id"] == master
        assert found["issues"][0]["confidence_score"] == 0.6
