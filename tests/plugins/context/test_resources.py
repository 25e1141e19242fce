"""``engine://files/...`` resources: listing with pages, directories, files with their MIME type, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from gateway.testing import running_gateway
from tests.plugins.context.support import add_file_connector, call, context_config, index_and_wait, resource_uris

pytestmark = [pytest.mark.anyio]


async def test_listing_pages_and_reading(repo: Path, data_dir: Path, tmp_path: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\x00")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (repo / "link.txt").symlink_to(outside)
    async with running_gateway(context_config(context={"resources_page": 10}), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        first = await client.list_resources()
        assert len(first.resources) == 6 and first.next_cursor is None
        uris = sorted(str(r.uri) for r in first.resources)
        assert uris[0] == "engine://files/README.md"
        templates = await client.list_resource_templates()
        assert templates.resource_templates[0].uri_template == "engine://files/{+path}"
        top = json.loads((await client.read_resource("engine://files/")).contents[0].text)
        assert {e["name"]: e["type"] for e in top["entries"]} == {
            "README.md": "file",
            "shop": "directory",
            "tests": "directory",
            "web": "directory",
        }
        readme = (await client.read_resource("engine://files/README.md")).contents[0]
        assert readme.mime_type == "text/markdown" and readme.text.startswith("# Shop")
        for uri, words in (
            ("engine://files/logo.png", "binary"),
            ("engine://files/link.txt", "outside"),
            ("engine://files/../outside.txt", ".."),
            ("engine://files/nothing/here.py", "no indexed file"),
        ):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            assert words in str(caught.value), uri


async def test_listing_is_paged(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "many"
    for n in range(25):
        (root / f"d{n % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"d{n % 3}" / f"f{n:02}.py").write_text(f"x{n} = {n}\n")
    async with running_gateway(context_config(context={"resources_page": 10}), data_dir) as client:
        await add_file_connector(client, root, name="many")
        await index_and_wait(client)
        seen = await resource_uris(client)
        assert len(seen) == len(set(seen)) == 25


async def test_links_to_secrets_are_neither_indexed_nor_served(repo: Path, data_dir: Path) -> None:
    (repo / ".env").write_text("API_KEY=zebracorn\n")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "creds.py").write_text("PASSWORD = 'zebracorn'\n")
    (repo / "build").mkdir()
    (repo / "build" / "gen.py").write_text("TOKEN = 'zebracorn'\n")
    (repo / ".gitignore").write_text("build/\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "settings.txt").symlink_to("../.env")
    (repo / "docs" / "creds.py").symlink_to("../secrets/creds.py")
    (repo / "docs" / "gen.py").symlink_to("../build/gen.py")
    (repo / "selfloop").symlink_to("selfloop")  # one loop does not stop the connector
    (repo / "loopdir").symlink_to("shop", target_is_directory=True)
    async with running_gateway(context_config(), data_dir) as client:
        connector = await call(
            client,
            "context.connector_management",
            {
                "action": "add",
                "connector_config": {"type": "file", "name": "shop", "root": str(repo), "exclude": ["secrets/"]},
            },
        )
        await index_and_wait(client)
        (info,) = (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        assert info["id"] == connector["connectors"][0]["id"] and info["status"] == "active"
        assert info["stats"]["skipped"]["symlink"] == 2 and info["stats"]["skipped"]["hidden"] >= 2
        hits = await call(client, "context.search", {"query": "zebracorn", "top_k": 20})
        assert all("zebracorn" not in r["content"] for r in hits["results"])
        assert (await call(client, "context.search", {"query": "charge card", "top_k": 1}))["results"]
        for uri, words in (
            ("engine://files/docs/settings.txt", "hidden"),
            ("engine://files/docs/creds.py", "ignored"),
            ("engine://files/docs/gen.py", "ignored"),
            ("engine://files/loopdir/billing.py", "reached through the symbolic link 'loopdir'"),
            ("engine://files/selfloop", "into a loop"),
        ):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            assert words in str(caught.value) and "zebracorn" not in str(caught.value), uri


async def test_a_path_two_connectors_hold_is_listed_once(repo: Path, data_dir: Path, tmp_path: Path) -> None:
    fork = tmp_path / "fork"
    (fork / "shop").mkdir(parents=True)
    (fork / "shop" / "billing.py").write_text("def fork_only():\n    return 1\n")
    (fork / "README.md").write_text("# Fork\n")
    for n in range(6):
        (fork / f"extra{n}.py").write_text(f"y = {n}\n")
    async with running_gateway(context_config(context={"resources_page": 10}), data_dir) as client:
        await add_file_connector(client, repo)
        await add_file_connector(client, fork, name="fork")
        await index_and_wait(client)
        seen = await resource_uris(client)
        assert len(seen) == len(set(seen)) == 12  # the shop's six, and the six paths only the fork holds
        assert "engine://files/extra5.py" in seen
        billing = (await client.read_resource("engine://files/shop/billing.py")).contents[0].text
        assert "charge_card" in billing  # the listed copy is the one served: the first connector's
