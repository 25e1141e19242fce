"""Usage events (recorded by the tools and by gim_report_usage) and the statistics served as MCP resources
(gim://stats, gim://issues/{issue_id}/stats) and by ``gateway gim stats``."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from gateway.cli import cli
from gateway.testing import running_gateway
from tests.plugins.gim.support import (
    NUMPY_ACTIONS,
    NUMPY_CAUSE,
    NUMPY_ERROR,
    call,
    gim_config,
    submission,
    write_config,
)


async def _read(client: Any, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    return json.loads(result.contents[0].text)


async def _activity(client: Any) -> str:
    created = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    issue = created["master_issue_id"]
    await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
    await call(client, "gim_search_issues", {"error_message": "AttributeError: module 'numpy' has no attribute 'int'"})
    await call(client, "gim_search_issues", {"error_message": "zzz qqq nothing alike at all"})
    await call(client, "gim_get_fix_bundle", {"issue_id": issue})
    applied = {
        "event_type": "fix_applied",
        "issue_id": issue,
        "session_id": "session-1",
        "timestamp": "2025-01-27T10:00:00Z",
        "model": "m",
        "provider": "anthropic",
    }
    recorded = await call(client, "gim_report_usage", applied)
    assert recorded["status"] == "recorded" and uuid.UUID(recorded["event_id"])
    await call(client, "gim_report_usage", {**applied, "session_id": "session-2"})
    await call(client, "gim_confirm_fix", {"issue_id": issue, "success": True, "session_id": "session-1"})
    return issue


@pytest.mark.anyio
async def test_stats_resources(gim: Any) -> None:
    issue = await _activity(gim)
    listed = await gim.list_resources()
    assert "gim://stats" in {str(r.uri) for r in listed.resources}
    templates = await gim.list_resource_templates()
    assert "gim://issues/{issue_id}/stats" in {t.uri_template for t in templates.resource_templates}

    stats = await _read(gim, "gim://stats")
    assert stats["total_queries"] == 3 and stats["queries_24h"] == 3
    assert stats["total_issues_submitted"] == 1
    assert stats["total_issues_resolved"] == 1 and stats["resolutions_24h"] == 1
    assert stats["top_queried_issues"] == [issue] and stats["top_resolved_issues"] == [issue]
    assert stats["active_sessions_24h"] >= 1  # the 2025 events are older than 24 hours

    per_issue = await _read(gim, f"gim://issues/{issue}/stats")
    assert per_issue["issue_id"] == issue
    assert per_issue["total_queries"] == 2  # the unrelated search found nothing
    assert per_issue["total_fix_retrieved"] == 1
    assert per_issue["total_fix_applied"] == 2 and per_issue["total_resolved"] == 1
    assert per_issue["verification_count"] == 1 and per_issue["failure_count"] == 0  # the votes beside the events
    assert per_issue["resolution_rate"] == 0.5
    assert per_issue["last_queried_at"] is not None and per_issue["last_resolved_at"] is not None


@pytest.mark.anyio
async def test_reporting_what_a_tool_recorded_counts_it_once(gim: Any) -> None:
    """The spec's own example reports a ``fix_retrieved``; the tools record it already."""
    created = await call(gim, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    issue = created["master_issue_id"]
    await call(gim, "gim_get_fix_bundle", {"issue_id": issue})
    await call(gim, "gim_confirm_fix", {"issue_id": issue, "success": True})
    now = datetime.now(UTC).isoformat()
    reported = {"issue_id": issue, "session_id": "s", "timestamp": now}
    retrieved = await call(gim, "gim_report_usage", {**reported, "event_type": "fix_retrieved"})
    again = await call(gim, "gim_report_usage", {**reported, "event_type": "fix_retrieved"})
    await call(gim, "gim_report_usage", {**reported, "event_type": "fix_confirmed"})
    assert retrieved["status"] == "recorded" and again["event_id"] == retrieved["event_id"]
    per_issue = await _read(gim, f"gim://issues/{issue}/stats")
    assert per_issue["total_fix_retrieved"] == 1 and per_issue["total_fix_applied"] == 1
    assert per_issue["total_resolved"] == 1 and per_issue["resolution_rate"] == 1.0
    stale = {**reported, "event_type": "fix_retrieved", "timestamp": "2025-01-27T10:00:00Z"}  # not this call's
    assert (await call(gim, "gim_report_usage", stale))["event_id"] != retrieved["event_id"]
    assert (await _read(gim, f"gim://issues/{issue}/stats"))["total_fix_retrieved"] == 2


def test_cli_gim_stats(tmp_path: Path, data_dir: Path) -> None:
    patterns_only = {kind: ["patterns"] for kind in ("error_message", "code", "free_text", "query")}
    deployment = gim_config(gateway={"data_dir": data_dir.as_posix(), "log_level": "warning"}, sanitize=patterns_only)
    config = write_config(tmp_path / "config.toml", deployment)

    async def seed() -> str:
        async with running_gateway(gim_config(), data_dir) as client:
            return await _activity(client)

    issue = anyio.run(seed)
    runner = CliRunner()
    overall = runner.invoke(cli, ["--config", str(config), "gim", "stats"])
    assert overall.exit_code == 0, overall.output
    assert json.loads(overall.stdout)["total_queries"] == 3
    after = runner.invoke(cli, ["gim", "stats", "--config", str(config)])  # a plugin's command takes it too
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout) == json.loads(overall.stdout)
    one = runner.invoke(cli, ["--config", str(config), "gim", "stats", "--issue", issue])
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["total_resolved"] == 1
    assert json.loads(one.stdout)["verification_count"] == 1
    unknown = runner.invoke(cli, ["--config", str(config), "gim", "stats", "--issue", str(uuid.uuid4())])
    assert unknown.exit_code != 0 and "not_found" in unknown.output


@pytest.mark.anyio
async def test_a_time_with_no_utc_year_is_a_validation_error(gim: Any) -> None:
    for timestamp in ("0001-01-01T00:00:00+10:00", "9999-12-31T23:59:59-10:00"):
        result = await gim.call_tool(
            "gim_report_usage", {"event_type": "search", "session_id": "s", "timestamp": timestamp}
        )
        assert result.is_error
        error = json.loads(result.content[0].text)["error"]
        assert error["code"] == "validation_error", error
        assert error["details"]["errors"][0]["field"] == "timestamp", error
    recorded = await call(
        gim, "gim_report_usage", {"event_type": "search", "session_id": "s", "timestamp": "2026-01-01T05:00:00+10:00"}
    )
    assert recorded["status"] == "recorded"


@pytest.mark.anyio
async def test_identifiers_a_client_names_are_sanitized_as_free_text(gim: Any) -> None:
    """A session id or model name is whatever the client sends: a pasted command line keeps no password."""
    created = await call(gim, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    report = {
        "event_type": "fix_applied",
        "issue_id": created["master_issue_id"],
        "session_id": "mysql -u root -pHunter2Secret",
        "model": "s-xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "timestamp": "2025-01-27T10:00:00Z",
    }
    await call(gim, "gim_report_usage", report)
    core = gim.runtime.packs["gim"].core
    rows = await core.store.fetch_all("SELECT session_id, model FROM gim_usage_events WHERE event_type = 'fix_applied'")
    stored = json.dumps(rows)
    assert "Hunter2Secret" not in stored and "xoxb" not in stored and "mysql -u root -p" in stored
