"""``engine://files/...`` resources: listing with pages, directories, files with their MIME type, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from gateway.testing import running_gateway
from tests.plugins.context.support import add_file_connector, context_config, index_and_wait

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
        seen: list[str] = []
        cursor = None
        while True:
            page = await client.list_resources(cursor=cursor) if cursor else await client.list_resources()
            seen += [str(r.uri) for r in page.resources]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == 25
