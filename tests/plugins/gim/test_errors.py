"""Every error code of the API reference, reached through the MCP SDK client, in the spec's error format."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from tests.plugins.gim.support import (
    NUMPY_ACTIONS,
    NUMPY_CAUSE,
    NUMPY_ERROR,
    body,
    call,
    call_error,
    gim_config,
    submission,
)

pytestmark = pytest.mark.anyio


def _code(error_body: dict[str, Any]) -> str:
    assert set(error_body) == {"error"} and set(error_body["error"]) == {"code", "message", "details"}
    return error_body["error"]["code"]


async def test_validation_errors_name_the_field(gim: Any) -> None:
    missing = await call_error(gim, "gim_search_issues", {"limit": 3})
    assert _code(missing) == "validation_error"
    assert any(e["field"] == "error_message" for e in missing["error"]["details"]["errors"])
    bad_enum = await call_error(gim, "gim_search_issues", {"error_message": "x", "provider": "acme"})
    assert _code(bad_enum) == "validation_error"
    no_fix = submission(NUMPY_ERROR, NUMPY_CAUSE)
    del no_fix["fix_bundle"]["verification"]
    assert _code(await call_error(gim, "gim_submit_issue", no_fix)) == "validation_error"
    bad_action = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=[{"type": "reboot", "command": "x"}])
    assert _code(await call_error(gim, "gim_submit_issue", bad_action)) == "validation_error"
    not_uuid = await call_error(gim, "gim_get_fix_bundle", {"issue_id": "not-a-uuid"})
    assert _code(not_uuid) == "validation_error"
    naive_time = {"event_type": "search", "session_id": "s", "timestamp": "2025-01-27T10:00:00"}
    assert _code(await call_error(gim, "gim_report_usage", naive_time)) == "validation_error"
    assert _code(await call_error(gim, "gim_search_issues", {"error_message": "x", "limit": 0})) == "validation_error"


async def test_not_found_for_unknown_issues(gim: Any) -> None:
    unknown = str(uuid.uuid4())
    for tool, args in (
        ("gim_get_fix_bundle", {"issue_id": unknown}),
        ("gim_confirm_fix", {"issue_id": unknown, "success": True}),
        (
            "gim_report_usage",
            {"event_type": "fix_applied", "issue_id": unknown, "session_id": "s", "timestamp": "2025-01-27T10:00:00Z"},
        ),
    ):
        error = await call_error(gim, tool, args)
        assert _code(error) == "not_found", tool
        assert error["error"]["details"] == {"issue_id": unknown}


async def test_insufficient_data(gim: Any) -> None:
    empty_fix = submission(NUMPY_ERROR, NUMPY_CAUSE)
    empty_fix["fix_bundle"]["env_actions"] = []
    error = await call_error(gim, "gim_submit_issue", empty_fix)
    assert _code(error) == "insufficient_data" and error["error"]["details"] == {"field": "fix_bundle"}
    blank = await call_error(gim, "gim_search_issues", {"error_message": "--- ... ---"})
    assert _code(blank) == "insufficient_data"


async def test_internal_error_does_not_leak(gim: Any) -> None:
    await call(gim, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    core = gim.runtime.packs["gim"].core

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("connection to /var/secret/qdrant.sock refused for user admin")

    core.vectors.query = broken
    error = await call_error(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
    assert _code(error) == "internal_error"
    assert "secret" not in str(error) and "admin" not in str(error)
    assert set(error["error"]["details"]) == {"correlation_id"}


async def test_embedder_outage_is_service_unavailable(gim: Any) -> None:
    from gateway.api import ServiceUnavailable

    core = gim.runtime.packs["gim"].core
    await core.ensure_embedders()

    async def down(text: str, **options: Any) -> Any:
        raise ServiceUnavailable("no embedder could embed the query", details={"embedder": "local"})

    core.embeddings.embed_query = down
    error = await call_error(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
    assert _code(error) == "service_unavailable"


async def test_sanitization_failure_is_the_spec_rejection(data_dir: Path, fake_gemini: Any) -> None:
    """A layer that cannot vouch for a field refuses the whole submission (fail closed): nothing is stored."""
    fake_gemini.generate_text = lambda request: "this is not the JSON the schema asks for"
    sanitize = {
        "error_message": ["patterns"],
        "code": ["patterns"],
        "free_text": ["patterns", "gemini"],
        "query": ["patterns"],
    }
    config = gim_config(
        sanitize=sanitize,
        plugins={"sanitizer": {"gemini": {"api_key": "test-key", "base_url": fake_gemini.base_url}}},
    )
    async with running_gateway(config, data_dir) as client:
        result = await client.call_tool("gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE))
        assert result.is_error
        rejection = body(result)
        assert rejection["status"] == "rejected" and rejection["reason"] == "sanitization_failed"
        assert set(rejection) == {"status", "reason", "details", "confidence_score"}
        assert isinstance(rejection["details"], str) and rejection["details"]
        assert 0.0 <= rejection["confidence_score"] <= 1.0
        found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert found["issues"] == [] and found["total_results"] == 0


async def test_a_sanitizer_service_outage_is_service_unavailable_and_stores_nothing(
    data_dir: Path, fake_gemini: Any
) -> None:
    """Fail closed, but do not blame the caller's text for the service being down."""
    from tests.fakes.gemini import FakeResponse

    for _ in range(8):
        fake_gemini.enqueue(FakeResponse(status=503))
    sanitize = {"error_message": ["patterns"], "code": ["patterns"], "free_text": ["patterns", "gemini"]}
    config = gim_config(
        sanitize={**sanitize, "query": ["patterns"]},
        plugins={"sanitizer": {"gemini": {"api_key": "test-key", "base_url": fake_gemini.base_url}}},
    )
    async with running_gateway(config, data_dir) as client:
        refused = await call_error(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE))
        found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
    assert _code(refused) == "service_unavailable" and refused["error"]["details"]["provider"] == "sanitizer:gemini"
    assert found["total_results"] == 0


async def test_a_store_locked_by_another_process_is_service_unavailable_and_search_still_answers(
    data_dir: Path,
) -> None:
    import sqlite3

    config = gim_config(plugins={"store": {"sqlite": {"busy_timeout": 0.3}}})
    async with running_gateway(config, data_dir) as client:
        await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        store = client.runtime.packs["gim"].core.store
        other = sqlite3.connect(store.path, isolation_level=None)  # another process's writer, holding the lock
        other.execute("BEGIN IMMEDIATE")
        try:
            refused = await call_error(client, "gim_submit_issue", submission(NUMPY_ERROR + " again", NUMPY_CAUSE))
            found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        finally:
            other.execute("ROLLBACK")
            other.close()
        after = await call(client, "gim_submit_issue", submission(NUMPY_ERROR + " again", NUMPY_CAUSE))
    assert _code(refused) == "service_unavailable" and refused["error"]["details"]["provider"] == "store:sqlite"
    assert str(store.path) not in refused["error"]["message"]  # paths and hosts stay in the server log
    assert found["total_results"] == 1  # a search is served; only its usage event is missed
    assert after["status"] in ("created", "merged")
