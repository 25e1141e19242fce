"""The forms the spec documents' examples send, accepted with a clear mapping (not dropped), and what is really
wrong still refused with the field named. (Every example itself runs in ``tests/spec/test_spec_examples.py``.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, call_error, submission

pytestmark = pytest.mark.anyio


def _fields(error_body: dict[str, Any]) -> dict[str, str]:
    assert error_body["error"]["code"] == "validation_error", error_body
    return {e["field"]: e["message"] for e in error_body["error"]["details"]["errors"]}


async def test_top_level_environment_fields_reach_the_stored_issue(gim: Any) -> None:
    """The system design's form: environment fields at the top level are merged into ``environment``."""
    flat = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS)
    del flat["environment"]
    flat |= {"language": "python", "language_version": "3.11", "framework": "numpy", "os": "linux"}
    created = await call(gim, "gim_submit_issue", flat)
    core = gim.runtime.packs["gim"].core
    master = (await core.repo.masters(core.store, [created["master_issue_id"]]))[created["master_issue_id"]]
    assert master.environment_coverage == ["python 3.11 / numpy / linux"]

    mixed = {"error_message": NUMPY_ERROR, "language": "python", "environment": {"os": "linux"}}
    found = await call(gim, "gim_search_issues", mixed)
    assert found["issues"][0]["issue_id"] == created["master_issue_id"]
    same_twice = {"error_message": NUMPY_ERROR, "language": "python", "environment": {"language": "python"}}
    assert (await call(gim, "gim_search_issues", same_twice))["total_results"] >= 1


async def test_top_level_fields_are_published_in_the_input_schema(gim: Any) -> None:
    tools = {tool.name: tool for tool in (await gim.list_tools()).tools}
    search = tools["gim_search_issues"].input_schema["properties"]
    assert {"language", "framework", "os"} <= set(search)
    assert "environment.language" in search["language"]["description"]
    submit = tools["gim_submit_issue"].input_schema["properties"]
    assert {"language", "language_version", "framework", "framework_version", "os"} <= set(submit)


async def test_real_errors_are_still_refused_naming_the_field(gim: Any) -> None:
    conflict = {"error_message": NUMPY_ERROR, "language": "python", "environment": {"language": "go"}}
    assert (
        "differs from environment.language" in _fields(await call_error(gim, "gim_search_issues", conflict))["language"]
    )
    typo = {"error_message": NUMPY_ERROR, "langauge": "python"}
    assert "langauge" in _fields(await call_error(gim, "gim_search_issues", typo))
    wrong_type = {"error_message": NUMPY_ERROR, "framework": ["fastapi"]}
    assert "framework" in _fields(await call_error(gim, "gim_search_issues", wrong_type))
    no_error = {"language": "python", "framework": "fastapi"}
    assert "error_message" in _fields(await call_error(gim, "gim_search_issues", no_error))

    clash = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS, environment={"os": "linux"}) | {"os": "macOS"}
    assert "os" in _fields(await call_error(gim, "gim_submit_issue", clash))
    unknown = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS) | {"os_versoin": "14"}
    assert "os_versoin" in _fields(await call_error(gim, "gim_submit_issue", unknown))
    bad_action = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=[{"order": 1, "type": "reboot", "command": "x"}])
    assert "fix_bundle.env_actions.0.type" in _fields(await call_error(gim, "gim_submit_issue", bad_action))
