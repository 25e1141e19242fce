"""A failure reported through a log (real gateway, MCP SDK client, local embedder, Qdrant Edge, SQLite): the same
error line with a CI runner's, a scheduler's or a build's prefix finds the plain report's master first, as close as
the plain line itself (the prefixes are not part of the signature), and merges into it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.gim.support import call, submission

pytestmark = pytest.mark.anyio

ENVIRONMENT = {"language": "Python", "framework": "Jinja2", "os": "Linux"}
PLAIN = "ImportError: cannot import name 'soft_unicode' from 'markupsafe'"
CAUSE = (
    "MarkupSafe 2.1 removed soft_unicode; Jinja2 2.x and old packages that import it break when an unpinned "
    "MarkupSafe is upgraded. Pin markupsafe below 2.1 or upgrade the package that imports soft_unicode."
)
REWORDED = (
    "markupsafe 2.1.0 dropped the soft_unicode helper, and an older Jinja2 still imports it; pin MarkupSafe<2.1 "
    "or move to a Jinja2 that no longer uses it."
)
ACTIONS = [{"order": 1, "type": "downgrade", "command": 'pip install "markupsafe<2.1"', "explanation": "keep it"}]
LOGGED = [
    "2023-04-11T08:15:02.4419975Z ##[error]" + PLAIN,
    "[2023-02-21, 04:00:12 UTC] {taskinstance.py:2698} ERROR - " + PLAIN,
    "#12 3.104 " + PLAIN + "\n#12 ERROR: process did not complete successfully: exit code: 1",
]
OTHERS = [
    (
        "ImportError: cannot import name 'escape' from 'jinja2'",
        "Jinja2 3.1 removed jinja2.escape; import it from markupsafe.",
    ),
    ("ModuleNotFoundError: No module named 'markupsafe'", "MarkupSafe is not installed in the environment."),
]


@pytest.mark.parametrize("logged", LOGGED, ids=["github-actions", "airflow", "buildkit"])
async def test_a_logged_report_finds_and_merges_into_its_plain_master(gim: Any, logged: str) -> None:
    master = await call(gim, "gim_submit_issue", submission(PLAIN, CAUSE, actions=ACTIONS, environment=ENVIRONMENT))
    for error, cause in OTHERS:
        await call(gim, "gim_submit_issue", submission(error, cause, environment=ENVIRONMENT))

    found = await call(gim, "gim_search_issues", {"error_message": logged, "limit": 3})
    assert found["issues"][0]["issue_id"] == master["master_issue_id"]
    assert found["issues"][0]["relevance_score"] > 0.9

    joined = await call(gim, "gim_submit_issue", submission(logged, REWORDED, actions=ACTIONS, environment=ENVIRONMENT))
    assert joined["merged"] is True
    assert joined["master_issue_id"] == master["master_issue_id"]
