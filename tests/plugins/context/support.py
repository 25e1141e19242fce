"""Shared helpers of the context tests: deployment configs, a sample git repository, calls through the SDK client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

SAMPLE = {
    "README.md": "# Shop\n\nA small shop service.\n\n## Payments\n\nCards are charged by the billing module.\n",
    "shop/__init__.py": "",
    "shop/billing.py": (
        "from .money import round_cents\n\n\n"
        "class Invoice:\n"
        '    """An invoice of one order."""\n\n'
        "    def total(self, lines):\n"
        '        """Sum the order lines and apply the discount."""\n'
        "        return round_cents(sum(line.price for line in lines))\n\n\n"
        "def charge_card(invoice, card):\n"
        "    if card.expired:\n"
        '        raise ValueError("The card has expired and cannot be charged")\n'
        "    return invoice.total([])\n"
    ),
    "shop/money.py": "def round_cents(amount):\n    return round(amount, 2)\n",
    "web/routes.js": (
        "var billing = require('./billing');\n\n"
        "/**\n * Render the checkout page.\n */\n"
        "exports.checkout = function checkout(req, res) {\n  res.render('checkout');\n};\n"
    ),
    "tests/test_billing.py": "def test_charge_card():\n    assert True\n",
}


def git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def sample_repo(root: Path, *, with_git: bool = True) -> Path:
    for rel, text in SAMPLE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if with_git:
        git(root, "init", "-q")
        git(root, "add", ".")
        git(root, "commit", "-q", "-m", "SHOP-1: billing and checkout")
    return root


def context_config(
    *, embed: bool = False, store: str = "sqlite", context: dict[str, Any] | None = None, **sections: Any
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "gateway": {"log_level": "warning"},
        "packs": {"enabled": ["context"]},
        "providers": {
            "embedder": ["local"],
            "vector_store": "qdrant-edge",
            "store": store,
            "rate_limiter": "memory",
            "auth": "none",
        },
        "plugins": {"context": {"embed": embed, "heartbeat_seconds": 0.2, "refresh_seconds": 0.0, **(context or {})}},
    }
    config.update(sections)
    return config


def body(result: Any) -> dict[str, Any]:
    if result.structured_content is not None and not result.is_error:
        return result.structured_content
    return json.loads(result.content[0].text)


async def call(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def call_error(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return json.loads(result.content[0].text)["error"]


async def wait_for_job(client: Any) -> dict[str, Any]:
    for _ in range(600):
        status = await call(client, "context.index_control", {"action": "status"})
        if status["status"] not in ("running", "queued", "stopping"):
            return status
        await asyncio.sleep(0.1)
    raise AssertionError("indexing did not finish")


async def index_and_wait(client: Any, connectors: list[str] | None = None, action: str = "start") -> dict[str, Any]:
    """Start a job (after the running one, if any: one job per tenant at a time) and wait for it."""
    args: dict[str, Any] = {"action": action}
    if connectors:
        args["connectors"] = connectors
    result = await client.call_tool("context.index_control", args)
    if result.is_error:
        assert json.loads(result.content[0].text)["error"]["code"] == "conflict", result.content[0].text
        await wait_for_job(client)
        await call(client, "context.index_control", args)
    return await wait_for_job(client)


async def add_file_connector(client: Any, root: Path, name: str = "shop") -> str:
    added = await call(
        client,
        "context.connector_management",
        {"action": "add", "connector_config": {"type": "file", "name": name, "root": str(root)}},
    )
    return added["connectors"][0]["id"]


async def resource_uris(client: Any) -> list[str]:
    """Every ``resources/list`` entry, page after page."""
    seen: list[str] = []
    cursor = None
    while True:
        page = await client.list_resources(cursor=cursor) if cursor else await client.list_resources()
        seen += [str(r.uri) for r in page.resources]
        cursor = page.next_cursor
        if cursor is None:
            return seen


async def the_connector(client: Any) -> tuple[Any, dict[str, Any], Any]:
    """The context service, its one connector's row (default tenant) and that connector's live instance."""
    service = client.runtime.packs["context"].service
    (row,) = await service.repo.list_connectors(service.store, "default")
    return service, row, await service.connectors.instance(row)


async def index_directly(service: Any, row: dict[str, Any], connector: Any, documents: Any) -> Any:
    """One forced :meth:`Indexer.run` of ``documents`` read through ``connector`` (no job around it)."""

    async def progress(done: int, path: str | None) -> None:
        pass

    return await service.indexer.run(
        row["id"], connector, documents, force=True, progress=progress, should_stop=lambda: False
    )
