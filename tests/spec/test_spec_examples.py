"""Every example request of the specification documents succeeds through the real tool.

The examples are extracted from ``../shared/spec/`` (:mod:`tests.spec.extract`) into the checked-in
``spec_examples.json``; ``test_manifest_matches_the_documents`` keeps the two identical, so an example added to a
document fails here until it is run too. Each example runs in a gateway of its own on a fresh data dir, through
the MCP SDK client, exactly as the document writes it, and its result must be a success that validates against
the tool's published output schema, plus what the document's response says about it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.plugins.gim.conftest import minilm_graph  # noqa: F401  (the session fixture, reused)
from tests.spec.extract import DOCUMENTS, SpecExample, extract, extract_all, load_manifest, spec_dir
from tests.spec.harness import SPEC_ISSUE, example_id, gim_gateway, spec_submission, thinking_gateway

pytestmark = pytest.mark.anyio

EXAMPLES = load_manifest()
GIM = [e for e in EXAMPLES if DOCUMENTS[e.document] == "gim"]
THINKING = [e for e in EXAMPLES if DOCUMENTS[e.document] == "thinking"]


def test_manifest_matches_the_documents() -> None:
    directory = spec_dir()
    if not directory.is_dir():
        pytest.skip(f"the spec documents are not at {directory} (set MCP_GATEWAY_SPEC_DIR)")
    assert extract_all(directory) == EXAMPLES, "run `./dev python -m tests.spec.extract --write` and review"


def test_every_document_has_its_examples() -> None:
    """The extraction found what each document shows (guards the finders against silently finding nothing)."""
    per_document = {name: sorted(e.target for e in EXAMPLES if e.document == name) for name in DOCUMENTS}
    five = sorted(
        ["gim_search_issues", "gim_get_fix_bundle", "gim_submit_issue", "gim_confirm_fix", "gim_report_usage"]
    )
    assert per_document == {
        "gim-api-reference.md": five,
        "gim-api-reference-rev2.txt": five,
        "gim-system-design.txt": ["gim_search_issues"],
        "sequential-thinking-audit.md": ["sequentialthinking", "sequentialthinking", "tools/call", "tools/list"],
    }


def test_a_later_pack_s_document_is_ready_to_add() -> None:
    """context-engine-api.md waits for its pack; its REST request bodies are already found, so the pack adds the
    document to DOCUMENTS and a harness that sends them (responses and schemas are not collected)."""
    path = spec_dir() / "context-engine-api.md"
    if not path.exists():
        pytest.skip(f"the spec documents are not at {path.parent} (set MCP_GATEWAY_SPEC_DIR)")
    found = extract(path.name, path.read_text(encoding="utf-8"))
    assert {e.kind for e in found} == {"http"}
    assert [e.target for e in found] == [
        "POST /auth/refresh",
        "POST /search",
        "POST /index/start",
        "POST /index/force-reindex",
        "POST /connectors",
        "PUT /connectors/{id}",
        "PATCH /config",
    ]
    assert found[1].heading == "`POST /search`" and found[1].arguments["query"] == "How is user authentication handled?"


async def _call(client: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result, checked against the published output schema."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    body = result.structured_content
    assert body == json.loads(result.content[0].text)
    jsonschema.Draft202012Validator(tools[name].output_schema).validate(body)
    return body


def _as_call(example: SpecExample) -> tuple[str, dict[str, Any]]:
    """The tool call an example makes."""
    if example.kind == "tool_call":
        return example.target, example.arguments
    if example.kind == "jsonrpc" and example.target == "tools/call":
        return example.arguments["name"], example.arguments.get("arguments", {})
    if example.kind == "gan_config":
        block = json.dumps(example.arguments)
        thought = f"Audit the pending change.\n\n```gan-config\n{block}\n```"
        return example.target, {"thought": thought, "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
    raise AssertionError(f"no runner for {example.kind} {example.target}")


# -- GIM --------------------------------------------------------------------------------------------------------


def _check_search(example: SpecExample, body: dict[str, Any]) -> None:
    if "langchain" in example.arguments["error_message"]:
        assert body["issues"][0]["issue_id"] == SPEC_ISSUE  # as the response of the reference shows
    assert body["total_results"] >= len(body["issues"])


def _check_fix_bundle(example: SpecExample, body: dict[str, Any]) -> None:
    assert body["issue_id"] == SPEC_ISSUE
    assert body["root_cause"] == spec_submission()["root_cause"]
    assert body["fix_bundle"]["env_actions"][0]["command"] == "pip install langchain-core>=0.2.0"


def _check_submit(example: SpecExample, body: dict[str, Any]) -> None:
    # the same issue as the stored one: merged into it, as the reference's response shows
    assert body["status"] == "created" and body["merged"] is True
    assert body["master_issue_id"] == SPEC_ISSUE and body["issue_id"] != SPEC_ISSUE
    assert SPEC_ISSUE in body["message"]


def _check_confirm(example: SpecExample, body: dict[str, Any]) -> None:
    assert body["status"] == "confirmed" and body["issue_id"] == SPEC_ISSUE
    assert body["updated_verification_count"] == 1 and body["updated_confidence"] > 2 / 3


def _check_usage(example: SpecExample, body: dict[str, Any]) -> None:
    assert body["status"] == "recorded" and body["event_id"]


GIM_CHECKS: dict[str, Callable[[SpecExample, dict[str, Any]], None]] = {
    "gim_search_issues": _check_search,
    "gim_get_fix_bundle": _check_fix_bundle,
    "gim_submit_issue": _check_submit,
    "gim_confirm_fix": _check_confirm,
    "gim_report_usage": _check_usage,
}


@pytest.mark.parametrize("example", GIM, ids=example_id)
async def test_gim_example(example: SpecExample, tmp_path: Path, minilm_graph: Path) -> None:  # noqa: F811
    async with gim_gateway(tmp_path, minilm_graph) as client:
        name, arguments = _as_call(example)
        body = await _call(client, name, arguments)
    GIM_CHECKS[name](example, body)


# -- Sequential Thinking ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("workspace", ["change", "clean"])
@pytest.mark.parametrize("example", THINKING, ids=example_id)
async def test_thinking_example(example: SpecExample, workspace: str, tmp_path: Path) -> None:
    async with thinking_gateway(tmp_path, workspace) as client:
        if example.kind == "jsonrpc" and example.target == "tools/list":
            tools = (await client.list_tools()).tools
            assert [tool.name for tool in tools] == ["sequentialthinking"]
            return
        name, arguments = _as_call(example)
        body = await _call(client, name, arguments)
    assert body["thoughtNumber"] == arguments["thoughtNumber"] and body["thoughtHistoryLength"] == 1
    gan = body.get("gan")
    if "gan-config" not in arguments["thought"]:
        return
    assert gan is not None and body["sessionId"]
    # scores are numbers 0-100 whatever there was to review (the spec types them `number`)
    assert isinstance(gan["overall"], int) and 0 <= gan["overall"] <= 100
    assert all(isinstance(card["score"], int) for card in gan["judge_cards"])
    nothing = workspace == "clean" and gan["config"]["scope"] == "diff"  # "workspace" reviews the clean files
    assert gan["outcome"] == ("nothing_to_review" if nothing else "reviewed")
    assert not gan["warnings"]  # the example's config is valid as written
    if example.kind == "gan_config":
        assert {key: gan["config"][key] for key in example.arguments} == example.arguments
