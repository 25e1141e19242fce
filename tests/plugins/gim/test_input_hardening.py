"""Inputs that cannot be stored faithfully are refused naming the field; code comes back exactly as sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.testing import running_gateway
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, call_error, gim_config, submission

pytestmark = pytest.mark.anyio

CODE_FIX = "    if conn is not None:\n        conn.close()\n"
PATCH = "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n-x = np.int(3)\n+x = int(3)\n \n \n"


def _fields(error: dict) -> set[str]:
    return {e["field"] for e in error["error"]["details"]["errors"]}


async def test_code_is_stored_exactly_as_sent(data_dir: Path) -> None:
    async with running_gateway(gim_config(), data_dir) as client:
        issue = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS)
        issue["fix_bundle"] |= {"code_fix": CODE_FIX, "patch_diff": PATCH}
        issue["fix_bundle"]["verification"] = [{"command": "python -c 'print(1)'", "expected_output": "  1\n"}]
        master = (await call(client, "gim_submit_issue", issue))["master_issue_id"]
        bundle = (await call(client, "gim_get_fix_bundle", {"issue_id": master}))["fix_bundle"]
    assert bundle["code_fix"] == CODE_FIX and bundle["patch_diff"] == PATCH
    assert bundle["verification"][0]["expected_output"] == "  1\n"


async def test_nul_characters_are_refused_naming_the_field(data_dir: Path) -> None:
    async with running_gateway(gim_config(), data_dir) as client:
        issue = submission(NUMPY_ERROR + "\x00", NUMPY_CAUSE, actions=NUMPY_ACTIONS)
        submitted = await call_error(client, "gim_submit_issue", issue)
        searched = await call_error(client, "gim_search_issues", {"error_message": NUMPY_ERROR, "model": "gpt\x004"})
        confirm = {"issue_id": "00000000-0000-0000-0000-000000000000", "success": True, "environment": {"a\x00": 1}}
        confirmed = await call_error(client, "gim_confirm_fix", confirm)
    assert submitted["error"]["code"] == "validation_error" and "error_message" in _fields(submitted)
    assert "NUL" in submitted["error"]["message"]
    assert _fields(searched) == {"model"} and _fields(confirmed) == {"environment"}


async def test_name_like_fields_and_free_form_objects_are_bounded(data_dir: Path) -> None:
    async with running_gateway(gim_config(), data_dir) as client:
        huge = "x" * 2_000
        searched = await call_error(
            client, "gim_search_issues", {"error_message": NUMPY_ERROR, "model": huge, "environment": {"os": huge}}
        )
        issue = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS)
        issue["fix_bundle"]["constraints"] = {"incompatible_with": ["numpy<1"] * 101}
        submitted = await call_error(client, "gim_submit_issue", issue)
        confirm = {"issue_id": "00000000-0000-0000-0000-000000000000", "success": True}
        confirmed = await call_error(
            client, "gim_confirm_fix", confirm | {"environment": {str(i): i for i in range(5000)}}
        )
    assert _fields(searched) == {"model", "environment.os"}
    assert _fields(submitted) == {"fix_bundle.constraints.incompatible_with"}
    assert _fields(confirmed) == {"environment"}


async def test_usage_events_cannot_be_dated_in_the_future(data_dir: Path) -> None:
    async with running_gateway(gim_config(), data_dir) as client:
        event = {"event_type": "search", "session_id": "s1"}
        later = (datetime.now(UTC) + timedelta(days=2)).isoformat()
        refused = await call_error(client, "gim_report_usage", event | {"timestamp": later})
        fine = await call(client, "gim_report_usage", event | {"timestamp": datetime.now(UTC).isoformat()})
    assert _fields(refused) == {"timestamp"} and "future" in refused["error"]["message"]
    assert fine["status"] == "recorded"
