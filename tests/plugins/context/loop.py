"""The acceptance loop, run over every transport: add connector -> start -> status until done -> search ->
get_related_info -> edit a file -> incremental re-index -> the edit is found -> remove connector -> its chunks are
gone. Also lists the tools and reads ``engine://files/...`` resources."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.plugins.context.support import add_file_connector, call, index_and_wait

TOOLS = {"context.search", "context.get_related_info", "context.index_control", "context.connector_management"}


async def full_loop(client: Any, repo: Path) -> None:
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert TOOLS <= names

    connector_id = await add_file_connector(client, repo)
    status = await index_and_wait(client)
    assert status["status"] == "completed"
    job = status["current_job"]
    assert job["progress"]["completed"] == job["progress"]["total"] == 6  # .gitignore-free sample: 6 files

    result = await client.call_tool("context.search", {"query": "where is an expired card refused?", "top_k": 5})
    found = result.structured_content
    top = found["results"][0]
    assert top["source"] == "file://shop/billing.py" and top["metadata"]["symbol"] == "charge_card"
    assert top["metadata"]["type"] == "function" and top["metadata"]["connector_id"] == connector_id
    assert found["query_metadata"]["index_status"] == "ready"
    text = result.content[0].text  # formatted for a context window, not a JSON dump
    assert text.startswith(f"{found['total_results']} results") and "shop/billing.py" in text and "```python" in text

    related = await call(client, "context.get_related_info", {"file_path": "shop/billing.py"})
    assert related["commits"][0]["message"] == "SHOP-1: billing and checkout"
    assert related["imports"] == ["shop/money.py"] and "charge_card" in related["symbols"]

    (repo / "shop" / "money.py").write_text(
        "def round_cents(amount):\n    return round(amount, 2)\n\n\n"
        'def convert_currency(amount, rate):\n    """Exchange between currencies."""\n    return amount * rate\n'
    )
    status = await index_and_wait(client)
    assert status["status"] == "completed"
    hits = await call(client, "context.search", {"query": "exchange between currencies", "top_k": 3})
    assert hits["results"][0]["metadata"]["symbol"] == "convert_currency"

    listing = await client.list_resources()
    uris = {str(r.uri) for r in listing.resources}
    assert "engine://files/shop/billing.py" in uris
    read = await client.read_resource("engine://files/shop/money.py")
    assert "convert_currency" in read.contents[0].text and read.contents[0].mime_type == "text/x-python"
    directory = json.loads((await client.read_resource("engine://files/shop/")).contents[0].text)
    assert {e["name"] for e in directory["entries"]} == {"__init__.py", "billing.py", "money.py"}

    listed = await call(client, "context.connector_management", {"action": "list"})
    assert listed["connectors"][0]["stats"]["chunks"] > 0
    await call(client, "context.connector_management", {"action": "remove", "connector_id": connector_id})
    gone = await call(client, "context.search", {"query": "expired card", "top_k": 5})
    assert gone["results"] == [] and gone["query_metadata"]["index_status"] == "no_connectors"
    listed = await call(client, "context.connector_management", {"action": "list"})
    assert listed["connectors"] == []
