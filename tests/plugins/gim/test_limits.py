"""The daily quota shared by gim_search_issues and gim_get_fix_bundle, enforced by the rate_limit interceptor
configured as in config.toml (the pack has no quota code of its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, call_error, gim_config, submission

pytestmark = pytest.mark.anyio


def _quota_config(limit: int) -> dict[str, Any]:
    config = gim_config(pipeline={"interceptors": [{"name": "rate_limit", "on_error": "fail_closed"}]})
    config["plugins"]["interceptor"] = {
        "rate_limit": {
            "rules": [
                {
                    "name": "gim-daily-search",
                    "tools": ["gim_search_issues", "gim_get_fix_bundle"],
                    "kind": "daily",
                    "limit": limit,
                }
            ]
        }
    }
    return config


async def test_search_and_fix_bundle_share_the_daily_quota(data_dir: Path) -> None:
    async with running_gateway(_quota_config(3), data_dir) as client:
        created = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        await call(client, "gim_get_fix_bundle", {"issue_id": created["master_issue_id"]})
        await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        refused = await call_error(client, "gim_get_fix_bundle", {"issue_id": created["master_issue_id"]})
        assert refused["error"]["code"] == "rate_limit_exceeded"
        assert refused["error"]["details"]["limit"] == 3 and refused["error"]["details"]["remaining"] == 0
        again = await call_error(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert again["error"]["code"] == "rate_limit_exceeded"
        # submissions and confirmations are unlimited
        await call(client, "gim_confirm_fix", {"issue_id": created["master_issue_id"], "success": True})
        await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
