"""The README configurations, served over stdio by a real ``gateway serve`` subprocess."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.plugins.thinking.conftest import GitRepo, thought

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

THINKING_TOML = """\
[packs]
enabled = ["thinking"]
"""

AUDIT_TOML = """\
[packs]
enabled = ["thinking"]

[plugins.thinking]
audit = true                          # or ENABLE_GAN_AUDITING=true in the environment
workspace_root = "{root}"
allowed_judges = ["internal", "gemini"]

[plugins.thinking.defaults]           # what a thought's ```gan-config``` block starts from
threshold = 85
max_cycles = 2
judges = ["internal"]
apply_fixes = false

[plugins.judge.internal]
complexity_threshold = 10

[plugins.judge.gemini]
api_key = {{ env = "GEMINI_API_KEY" }}
model = "gemini-2.5-flash"
"""


def server(tmp_path: Path, toml: str) -> StdioServerParameters:
    config = tmp_path / "thinking.toml"
    config.write_text(toml)
    env = {**os.environ, "MCP_GATEWAY_DATA_DIR": str(tmp_path / "data")}
    env.pop("ENABLE_GAN_AUDITING", None)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)], env=env
    )


async def test_the_pack_alone_over_stdio(tmp_path: Path) -> None:
    async with Client(server(tmp_path, THINKING_TOML)) as client:
        [tool] = (await client.list_tools()).tools
        first = await client.call_tool("sequentialthinking", thought("Start.", 1, 2))
        second = await client.call_tool("sequentialthinking", thought("```python\nimport os\n```", 3, 2))
    assert tool.name == "sequentialthinking"
    assert json.loads(first.content[0].text)["thoughtHistoryLength"] == 1
    assert json.loads(second.content[0].text) == {
        "thoughtNumber": 3, "totalThoughts": 3, "nextThoughtNeeded": True, "branches": [], "thoughtHistoryLength": 2
    }  # fmt: skip


async def test_auditing_over_stdio(tmp_path: Path, repo: GitRepo) -> None:
    repo.write("app.py", "def f():\n    return 1\n")
    repo.commit()
    repo.write("app.py", "import os\n\n\ndef f():\n    return 1\n")
    async with Client(server(tmp_path, AUDIT_TOML.format(root=repo.root))) as client:
        result = await client.call_tool("sequentialthinking", thought("Ready?\n```gan-config\n{}\n```", branchId="b1"))
    body = json.loads(result.content[0].text)
    assert body["sessionId"] == "b1" and body["gan"]["config"]["maxCycles"] == 2
    assert [(c["path"], c["line"]) for c in body["gan"]["review"]["inline"]][:1] == [("app.py", 1)]
