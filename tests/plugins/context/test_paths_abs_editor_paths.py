"""Absolute paths, as editors send them: ``work_context.active_file`` and ``file_path`` under a connector's root
are read relative to it; an active file under no root is left out of the ranking with a note, and
``context.get_related_info`` refuses a file under no root naming ``file_path``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.testing import running_gateway
from tests.plugins.context.support import add_file_connector, call, call_error, context_config, index_and_wait

pytestmark = [pytest.mark.anyio]

QUERY = "where is an expired card refused?"


async def test_an_absolute_active_file_under_a_root_ranks_as_the_relative_one(
    repo: Path, data_dir: Path, tmp_path: Path
) -> None:
    link = tmp_path / "checkout"
    link.symlink_to(repo)  # an editor may open the tree through a link
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)

        async def search(active_file: str) -> dict:
            return await call(client, "context.search", {"query": QUERY, "work_context": {"active_file": active_file}})

        relative = await search("shop/billing.py")
        for absolute in (str(repo / "shop" / "billing.py"), str(link / "shop" / "billing.py")):
            found = await search(absolute)
            assert found["results"] == relative["results"]
            assert found["query_metadata"]["note"] is None
        plain = await call(client, "context.search", {"query": QUERY})
        assert plain["results"] != relative["results"]  # the active file counts in the ranking
        elsewhere = await search("/etc/passwd")
        assert elsewhere["results"] == plain["results"]
        note = elsewhere["query_metadata"]["note"] or ""
        assert "work_context.active_file '/etc/passwd' is under no connector's root: it was not used" in note
        error = await call_error(client, "context.search", {"query": "x", "work_context": {"active_file": "../x"}})
        assert error["details"]["errors"][0]["field"] == "work_context.active_file"


async def test_related_info_takes_an_absolute_path_under_a_root_and_refuses_one_under_none(
    repo: Path, data_dir: Path
) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        relative = await call(client, "context.get_related_info", {"file_path": "shop/billing.py"})
        absolute = await call(client, "context.get_related_info", {"file_path": str(repo / "shop" / "billing.py")})
        assert absolute == relative and absolute["file_path"] == "shop/billing.py"
        outside = await call_error(client, "context.get_related_info", {"file_path": "/etc/passwd"})
        assert outside["code"] == "validation_error"
        assert outside["details"]["errors"][0]["field"] == "file_path"
        assert outside["message"].startswith("file_path: '/etc/passwd' is under no connector's root")
        missing = await call_error(client, "context.get_related_info", {"file_path": str(repo / "no" / "such.py")})
        assert missing["code"] == "not_found" and missing["details"]["path"] == "no/such.py"


async def test_an_absolute_path_counts_under_a_root_written_relative(
    repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root written relative (to the config file, or here the working directory) is compared as resolved."""
    monkeypatch.chdir(repo.parent)
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, Path(repo.name))
        await index_and_wait(client)
        relative = await call(client, "context.get_related_info", {"file_path": "shop/billing.py"})
        absolute = await call(client, "context.get_related_info", {"file_path": str(repo / "shop" / "billing.py")})
        found = await call(
            client,
            "context.search",
            {"query": QUERY, "work_context": {"active_file": str(repo.resolve() / "shop" / "billing.py")}},
        )
    assert absolute == relative
    assert found["query_metadata"]["note"] is None
