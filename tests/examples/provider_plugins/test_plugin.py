"""The example providers plug into a real gateway: the hook offers each one with its config model, and a GIM
deployment built only from them (embedder, vector store, store, rate limiter, sanitizer layer; HTTP behind the
example authenticator) takes a submission and finds it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from example_providers import plugin
from gateway.app import prepare
from gateway.testing import http_gateway, running_gateway
from tests.plugins.gim.support import body, submission

EXTRA = [("example_providers", plugin)]
TOKEN = "tt_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
ERROR = "PermissionError: [Errno 13] Permission denied: '/srv/reports/out.csv' (owner alice.smith@acme-corp.io)"


def deployment(data_dir: Path, **providers: Any) -> dict[str, Any]:
    return {
        "gateway": {"data_dir": data_dir.as_posix(), "log_level": "warning"},
        "packs": {"enabled": ["gim"]},
        "providers": {
            "embedder": ["hashing"],
            "vector_store": "memory",
            "store": "timed",
            "rate_limiter": "dict",
            "auth": "none",
            **providers,
        },
        "sanitize": {
            "error_message": ["emails", "patterns"],
            "code": ["emails", "patterns"],
            "free_text": ["emails"],  # root causes: the example layer alone
            "query": ["emails"],
            "logs": "patterns",
        },
        "pipeline": {"interceptors": [{"name": "rate_limit", "on_error": "fail_closed"}]},
        "plugins": {
            "embedder": {"hashing": {"dimension": 128}},
            "store": {"timed": {"inner": "sqlite", "slow_ms": 250}},
            "auth": {"team_token": {"token": TOKEN, "subject": "platform", "scopes": ["gim:read", "gim:write"]}},
            "interceptor": {"rate_limit": {"rules": [{"name": "search", "tools": ["gim_search_issues"], "limit": 2}]}},
        },
    }


def test_each_provider_is_offered_with_its_config_model(tmp_path: Path) -> None:
    loaded, plugins = prepare(deployment(tmp_path), extra_plugins=EXTRA)
    offered = {(reg.kind, reg.name): reg for reg in plugins.registry.all() if reg.plugin == "example_providers"}
    assert set(offered) == {
        ("embedder", "hashing"),
        ("vector_store", "memory"),
        ("store", "timed"),
        ("rate_limiter", "dict"),
        ("sanitizer", "emails"),
        ("auth", "team_token"),
        ("judge", "leftovers"),
    }
    assert offered[("embedder", "hashing")].config_model is plugin.HashingConfig
    assert offered[("store", "timed")].config_model is plugin.TimedStoreConfig
    assert all(reg.description for reg in offered.values())
    assert loaded.plugin_config(offered[("embedder", "hashing")]).dimension == 128


def test_a_misspelt_key_of_an_example_table_is_named(tmp_path: Path) -> None:
    config = deployment(tmp_path)
    config["plugins"]["embedder"]["hashing"] = {"dimensions": 128}
    with pytest.raises(Exception, match=r"plugins\.embedder\.hashing\.dimensions"):
        prepare(config, extra_plugins=EXTRA)


@pytest.mark.anyio
async def test_gim_runs_on_the_example_providers(tmp_path: Path) -> None:
    async with running_gateway(deployment(tmp_path), extra_plugins=EXTRA) as client:
        cause = "The report files belong to alice.smith@acme-corp.io; the job runs as nobody."
        # the description is free text: the example deployment leaves it to the emails layer alone
        described = submission(ERROR, cause, description="Permission denied writing the report")
        created = body(await client.call_tool("gim_submit_issue", described))
        assert created["status"] == "created"
        found = body(await client.call_tool("gim_search_issues", {"error_message": ERROR}))
        assert found["embedder"] == "hashing/words-trigrams/128"
        assert [issue["issue_id"] for issue in found["issues"]] == [created["master_issue_id"]]
        bundle = body(await client.call_tool("gim_get_fix_bundle", {"issue_id": created["master_issue_id"]}))
        assert bundle["root_cause"] == "The report files belong to <EMAIL_1>; the job runs as nobody."
        second = await client.call_tool("gim_search_issues", {"error_message": ERROR})
        assert not second.is_error
        third = await client.call_tool("gim_search_issues", {"error_message": ERROR})
        assert body(third)["error"]["code"] == "rate_limit_exceeded"  # the dict limiter counted two searches


def test_http_requests_are_authenticated_by_the_team_token(tmp_path: Path) -> None:
    with http_gateway(deployment(tmp_path, auth="team_token"), extra_plugins=EXTRA) as (url, _):
        refused = httpx.post(f"{url}/api/v1/tools/gim_search_issues", json={"error_message": ERROR})
        assert refused.status_code == 401
        wrong = httpx.post(
            f"{url}/api/v1/tools/gim_search_issues", json={"error_message": ERROR}, headers={"X-Team-Token": "nope"}
        )
        assert wrong.status_code == 401
        admitted = httpx.post(
            f"{url}/api/v1/tools/gim_search_issues", json={"error_message": ERROR}, headers={"X-Team-Token": TOKEN}
        )
        assert admitted.status_code == 200, admitted.text
        assert admitted.json()["total_results"] == 0
