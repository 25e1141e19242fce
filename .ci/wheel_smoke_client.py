"""A real MCP client against an installed ``gateway serve`` over stdio: one GIM submission, then a search that finds
it. Run by ``.ci/wheel_smoke`` with the Python of a fresh venv that holds only the built wheel (and what it
declares); exits non-zero with the reason on any failure.

    python wheel_smoke_client.py GATEWAY_COMMAND...     (e.g. /venv/bin/gateway, or uvx --from WHEEL gateway)

``serve`` is appended to the command.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/report.py", line 12, in <module>\n'
    "    import polars\n"
    "ModuleNotFoundError: No module named 'polars'"
)
SUBMISSION: dict[str, Any] = {
    "error_description": "ModuleNotFoundError: No module named 'polars' when running the report job",
    "error_message": ERROR,
    "root_cause": "The report job's virtual environment was built without the optional polars dependency.",
    "fix_bundle": {
        "env_actions": [
            {"order": 1, "type": "install", "command": "pip install polars", "explanation": "add the missing module"}
        ],
        "verification": [
            {"order": 1, "command": "python /srv/app/report.py", "expected_output": "the report is written"}
        ],
    },
    "model": "claude-3-opus-20240229",
    "provider": "anthropic",
    "environment": {"language": "python", "os": "linux"},
}


def body(result: Any, tool: str) -> dict[str, Any]:
    """The structured result of a successful call; a failed call ends the smoke test with its error body."""
    if result.is_error:
        text = result.content[0].text if result.content else "(no content)"
        raise SystemExit(f"{tool} failed: {text}")
    return result.structured_content


async def main(gateway: list[str]) -> None:
    # The SDK hands a server only a few variables by default: pass ours (MCP_GATEWAY_DATA_DIR, HOME...) on.
    params = StdioServerParameters(command=gateway[0], args=[*gateway[1:], "serve"], env=dict(os.environ))
    async with Client(params, read_timeout_seconds=120) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        missing = {"gim_submit_issue", "gim_search_issues"} - tools
        if missing:
            raise SystemExit(f"the default deployment does not serve {sorted(missing)} (it serves {sorted(tools)})")
        submitted = body(await client.call_tool("gim_submit_issue", SUBMISSION), "gim_submit_issue")
        found = body(await client.call_tool("gim_search_issues", {"error_message": ERROR}), "gim_search_issues")
    ids = [issue["issue_id"] for issue in found["issues"]]
    if submitted["master_issue_id"] not in ids:
        raise SystemExit(f"the search did not find the submitted issue {submitted['master_issue_id']}: {ids}")
    if not str(found.get("embedder", "")).startswith("local/"):
        raise SystemExit(f"the search was not served by the shipped local embedder: {found.get('embedder')}")
    print(json.dumps({"submitted": submitted["master_issue_id"], "found": ids, "embedder": found["embedder"]}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
