"""Offset pagination walks one ranking: pages are disjoint, cover every result, and agree on ``total_results``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.testing import running_gateway
from gateway_plugins.gim.search import search_pool
from tests.plugins.gim.support import call, gim_config, submission

pytestmark = pytest.mark.anyio

PACKAGES = [f"pkg{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]


async def test_pages_are_slices_of_one_ranking(data_dir: Path) -> None:
    async with running_gateway(gim_config(), data_dir) as client:
        masters = set()
        for package in PACKAGES:
            issue = submission(
                f"ModuleNotFoundError: No module named '{package}'",
                f"The {package} package was not installed in the virtual environment before the import ran",
                actions=[{"type": "install", "command": f"pip install {package}", "explanation": "install it"}],
            )
            masters.add((await call(client, "gim_submit_issue", issue))["master_issue_id"])
        assert len(masters) == len(PACKAGES)
        query = {"error_message": "ModuleNotFoundError: No module named 'somepkg'"}
        whole = await call(client, "gim_search_issues", {**query, "limit": 50})
        pages = [await call(client, "gim_search_issues", {**query, "limit": 10, "offset": o}) for o in (0, 10, 20, 30)]
        first = await call(client, "gim_search_issues", {**query, "limit": 1})
    order = [issue["issue_id"] for issue in whole["issues"]]
    assert [issue["issue_id"] for page in pages for issue in page["issues"]] == order[:40]
    assert {page["total_results"] for page in pages} == {whole["total_results"], first["total_results"]}


def test_the_pool_only_grows_past_its_base() -> None:
    assert [search_pool(100, wanted) for wanted in (2, 100, 101, 250, 401)] == [100, 100, 200, 400, 800]
