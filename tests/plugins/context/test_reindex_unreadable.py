"""A file the scan offers is read as the scan judged it (text with a stray byte past the sniff window), and an
indexed file that can no longer be read loses its stored version: search never serves what the source no longer
holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.api import SkippedDocument
from gateway.testing import running_gateway
from tests.plugins.context.support import (
    add_file_connector,
    call,
    context_config,
    index_and_wait,
    index_directly,
    the_connector,
)

pytestmark = [pytest.mark.anyio]

PADDING = b"# padding line of the module, long enough to push what follows past the 8 KiB sniff window\n" * 100


async def test_a_stray_byte_past_the_sniff_window_is_indexed_and_served_both_new_and_edited(
    repo: Path, data_dir: Path
) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        (repo / "shop" / "latin.py").write_bytes(PADDING + b"def caf\xe9_menu():\n    return 'pastry_of_the_day'\n")
        (repo / "shop" / "money.py").write_bytes(PADDING + b"def round_euros(amount):  # \xe9\n    return amount\n")
        await index_and_wait(client)
        (info,) = (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        assert info["stats"]["last_error"] is None and "binary" not in info["stats"]["skipped"]
        for query, path in (("pastry_of_the_day", "shop/latin.py"), ("round_euros", "shop/money.py")):
            hits = await call(client, "context.search", {"query": query, "top_k": 3})
            assert hits["results"][0]["metadata"]["path"] == path, query
        stale = await call(client, "context.search", {"query": "round_cents", "top_k": 10})
        assert all("round(amount, 2)" not in r["content"] for r in stale["results"])  # the old version is gone
        served = (await client.read_resource("engine://files/shop/money.py")).contents[0].text
        assert "def round_euros(amount):  # \ufffd" in served


async def test_an_indexed_file_the_read_refuses_is_removed_and_counted(repo: Path, data_dir: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        service, row, connector = await the_connector(client)
        scan = await connector.scan()
        (repo / "shop" / "money.py").write_bytes(b"\x00\x01 now a binary file")  # between the scan and the read
        outcome = await index_directly(service, row, connector, scan.documents)
        assert outcome.skipped == [SkippedDocument("shop/money.py", "binary")] and outcome.removed == 1
        assert outcome.failed and outcome.failed[0].startswith("shop/money.py: ")
        paths = {r["path"] for r in await service.store.fetch_all("SELECT path FROM ctx_files")}
        assert "shop/money.py" not in paths and "shop/billing.py" in paths
        hits = await call(client, "context.search", {"query": "round_cents amount", "top_k": 10})
        assert all(r["metadata"]["path"] != "shop/money.py" for r in hits["results"])
