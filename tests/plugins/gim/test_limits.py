"""GIM's daily quotas as the shipped ``config.toml`` configures them (the pack has no quota code of its own): per
identity, gim_search_issues 100 a day and gim_get_fix_bundle 100 a day, each its own count; submissions and
confirmations unlimited."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from gateway.app import DEFAULT_CONFIG
from gateway.testing import running_gateway
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, call_error, gim_config, submission

pytestmark = pytest.mark.anyio


def _shipped_quotas() -> dict[str, Any]:
    """:func:`gim_config` with the ``[pipeline]`` and rate-limit rules of the shipped ``config.toml``."""
    shipped = tomllib.loads(DEFAULT_CONFIG.read_text())
    config = gim_config(pipeline=shipped["pipeline"])
    config["plugins"]["interceptor"] = shipped["plugins"]["interceptor"]
    return config


async def test_search_and_fix_bundle_each_have_100_a_day(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEFAULT_DAILY_SEARCH_LIMIT", raising=False)
    async with running_gateway(_shipped_quotas(), data_dir) as client:
        created = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        fetch = {"issue_id": created["master_issue_id"]}
        for _ in range(100):
            await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR, "limit": 1})
        refused = await call_error(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert refused["error"]["code"] == "rate_limit_exceeded"
        details = refused["error"]["details"]
        assert (details["limit"], details["remaining"], details["rule"]) == (100, 0, "gim-daily-search")
        assert details["reset_at"].endswith("T00:00:00Z")
        for _ in range(100):  # the searches took nothing from the fix bundles
            await call(client, "gim_get_fix_bundle", fetch)
        refused = await call_error(client, "gim_get_fix_bundle", fetch)
        assert refused["error"]["details"]["rule"] == "gim-daily-fix-bundle"
        # submissions and confirmations are unlimited
        await call(client, "gim_confirm_fix", {"issue_id": created["master_issue_id"], "success": True})
        await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))


async def test_default_daily_search_limit_sets_both_counts(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", "2")
    async with running_gateway(_shipped_quotas(), data_dir) as client:
        created = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        for tool, arguments in (
            ("gim_search_issues", {"error_message": NUMPY_ERROR}),
            ("gim_get_fix_bundle", {"issue_id": created["master_issue_id"]}),
        ):
            for _ in range(2):
                await call(client, tool, arguments)
            refused = await call_error(client, tool, arguments)
            assert refused["error"]["code"] == "rate_limit_exceeded" and refused["error"]["details"]["limit"] == 2
