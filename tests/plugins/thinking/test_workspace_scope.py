"""Audits and the ``thinking:workspace`` scope: over HTTP, reading the operator's checkout or changing it takes
the scope; thinking, and the review of code written in the thought, do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.api import Principal
from gateway.testing import running_gateway
from tests.plugins.thinking.audit_support import CHANGED, ORIGINAL
from tests.plugins.thinking.conftest import GitRepo, gateway_config, thought

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("scopes", [frozenset(), frozenset({"gim:read"})])
async def test_a_caller_without_the_workspace_scope_gets_the_thoughts_code_reviewed_and_nothing_more(
    repo: GitRepo, tmp_path: Path, scopes: frozenset[str]
) -> None:
    """Over HTTP every authenticated caller may think; reading the operator's checkout, or changing it, takes
    ``thinking:workspace``."""
    repo.write("app/config.py", ORIGINAL)
    repo.commit()
    repo.write("app/config.py", CHANGED)
    text = '```gan-config\n{"scope": "workspace", "applyFixes": true}\n```\n```python\ndef f():\n    return 1\n```'
    async with running_gateway(gateway_config(repo.root), tmp_path / "data") as client:
        runtime = client.runtime
        caller = Principal(subject="someone", tenant="other", scopes=scopes, method="api_key")
        outcome = await runtime.call_tool(
            "sequentialthinking",
            thought(text, 2, 3, next_needed=False),
            runtime.new_context(principal=caller, transport="rest"),
        )
    gan = outcome.body["gan"]
    assert {f.split("/", 1)[0] for f in {c["path"] for c in gan["review"]["inline"]}} <= {"thought"}
    assert not gan.get("applied") and (repo.root / "app/config.py").read_text() == CHANGED
    assert any("needs the thinking:workspace scope" in warning for warning in gan["warnings"])
    assert "app/config.py" not in json.dumps(gan)


async def test_without_the_scope_and_no_code_in_the_thought_the_review_says_the_workspace_was_not_read(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("app/config.py", CHANGED)
    repo.commit()
    text = '```gan-config\n{"scope": "paths", "paths": ["app/config.py"], "applyFixes": true}\n```\nCheck it.'
    async with running_gateway(gateway_config(repo.root), tmp_path / "data") as client:
        runtime = client.runtime
        caller = Principal(subject="someone", tenant="other", scopes=frozenset(), method="api_key")
        outcome = await runtime.call_tool(
            "sequentialthinking",
            thought(text, 1, 2, next_needed=False),
            runtime.new_context(principal=caller, transport="rest"),
        )
    gan = outcome.body["gan"]
    assert gan["outcome"] == "nothing_to_review"
    summary = gan["review"]["summary"]
    assert "was not read" in summary and "thinking:workspace" in summary and "none in the selected scope" not in summary
    assert gan["applied"] == []  # applyFixes was asked for and refused


@pytest.mark.parametrize("audit", [False, True])
async def test_the_tool_says_it_may_change_files_only_when_auditing_can_apply_fixes(
    repo: GitRepo, tmp_path: Path, audit: bool
) -> None:
    async with running_gateway(gateway_config(repo.root, audit=audit), tmp_path / "data") as client:
        (tool,) = (await client.list_tools()).tools
    hints = tool.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint) == ((False, True) if audit else (True, False))
