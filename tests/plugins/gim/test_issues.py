"""Submissions, search and confirmations through the MCP SDK client: new masters and merges, children found by
search, pagination, confidence updates with one vote per identity, and fixes rising with confirmations."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.api import Principal
from gateway.testing import running_gateway
from tests.plugins.gim.support import (
    NUMPY_ACTIONS,
    NUMPY_CAUSE,
    NUMPY_ERROR,
    NUMPY_FIX,
    call,
    gim_config,
    submission,
)

pytestmark = pytest.mark.anyio

NUMPY_WINDOWS = (
    '  File "C:\\Users\\bob\\AppData\\Local\\Programs\\Python\\Python311\\lib\\site-packages\\sklearn\\utils.py", '
    "line 88, in check\n    dtype=np.float\nAttributeError: module 'numpy' has no attribute 'float'"
)
NUMPY_PARAPHRASE = (
    "Since numpy 1.24 the old aliases np.float/np.int/np.bool are gone, so legacy code referencing them fails."
)
PANDAS_ERROR = "AttributeError: 'DataFrame' object has no attribute 'append'. Did you mean: '_append'?"
PANDAS_CAUSE = "pandas 2.0 removed DataFrame.append; code written for pandas 1.x must use pd.concat."
PANDAS_ACTIONS = [
    {"order": 1, "type": "command", "command": "use pd.concat([df, other])", "explanation": "append is gone"}
]


def numpy_submission(error: str = NUMPY_ERROR, cause: str = NUMPY_CAUSE, **kwargs: Any) -> dict[str, Any]:
    return submission(error, cause, actions=NUMPY_ACTIONS, code_fix=NUMPY_FIX, **kwargs)


async def test_new_master_then_merge_and_children_found_by_search(gim: Any) -> None:
    first = await call(gim, "gim_submit_issue", numpy_submission())
    assert first["status"] == "created" and first["merged"] is False
    assert first["issue_id"] == first["master_issue_id"]
    assert "contribution_type" not in first  # None is left out of the answer
    other = await call(gim, "gim_submit_issue", submission(PANDAS_ERROR, PANDAS_CAUSE, actions=PANDAS_ACTIONS))
    assert other["merged"] is False and other["master_issue_id"] != first["master_issue_id"]

    dup = await call(
        gim,
        "gim_submit_issue",
        numpy_submission(NUMPY_WINDOWS, NUMPY_PARAPHRASE, environment={"language": "python", "os": "windows"}),
    )
    assert dup["merged"] is True and dup["master_issue_id"] == first["master_issue_id"]
    assert dup["issue_id"] != first["issue_id"]
    assert dup["contribution_type"] == "environment"
    # the spec's one success status (its own example is a merged submission); the answer names the master
    assert dup["status"] == "created"
    assert dup["message"] == f"Issue submitted successfully and merged with existing master issue {first['issue_id']}"

    # the child's own wording finds the master; a child id resolves to its master
    found = await call(gim, "gim_search_issues", {"error_message": NUMPY_WINDOWS})
    assert found["issues"][0]["issue_id"] == first["master_issue_id"]
    bundle = await call(gim, "gim_get_fix_bundle", {"issue_id": dup["issue_id"]})
    assert bundle["issue_id"] == first["master_issue_id"]
    assert bundle["fix_bundle"]["env_actions"][0]["command"] == 'pip install "numpy<1.24"'
    assert bundle["fix_bundle"]["code_fix"] == NUMPY_FIX
    assert bundle["root_cause"] == NUMPY_CAUSE

    core = gim.runtime.packs["gim"].core
    master = (await core.repo.masters(core.store, [first["master_issue_id"]]))[first["master_issue_id"]]
    assert master.child_issue_count == 1
    assert any("windows" in label for label in master.environment_coverage)


async def test_search_answer_shape_and_embedder(gim: Any) -> None:
    created = await call(gim, "gim_submit_issue", numpy_submission())
    found = await call(
        gim,
        "gim_search_issues",
        {"error_message": "AttributeError: module 'numpy' has no attribute 'float'", "provider": "anthropic"},
    )
    assert found["total_results"] == 1 and found["limit"] == 10 and found["offset"] == 0
    assert found["embedder"] == "local/all-MiniLM-L6-v2-int8/384"
    issue = found["issues"][0]
    assert issue["issue_id"] == created["master_issue_id"]
    assert set(issue) >= {
        "canonical_title",
        "root_cause_category",
        "relevance_score",
        "confidence_score",
        "verification_count",
        "last_confirmed_at",
        "affected_models",
    }
    assert issue["affected_models"][0]["provider"] == "anthropic"
    assert 0.2 <= issue["relevance_score"] <= 1.0
    assert "/home/alice" not in issue["canonical_title"]


async def test_a_title_says_what_kind_of_value_the_sanitizer_took_out(gim: Any) -> None:
    error = "psycopg.OperationalError: connection to server at db01.internal.acme-corp.com failed: timeout expired"
    described = submission(
        error,
        "The VPN route to the internal database network was missing, so connections timed out.",
        description="Reports fail for billing_admin on db01.internal.acme-corp.com from /home/alice/app/report.py",
    )
    copied = submission(
        "redis.exceptions.ConnectionError: Error -2 connecting to cache01.corp.example.lan:6379. "
        "Name or service not known.",
        "The cron environment had no search domain, so the internal cache host name did not resolve.",
    )
    titles = []
    for args in (described, copied):
        created = await call(gim, "gim_submit_issue", args)
        bundle = await call(gim, "gim_get_fix_bundle", {"issue_id": created["issue_id"]})
        found = await call(gim, "gim_search_issues", {"error_message": args["error_message"]})
        assert found["issues"][0]["issue_id"] == bundle["issue_id"]
        titles.append(found["issues"][0]["canonical_title"])
    assert titles[0] == "Reports fail for billing_admin on <internal host> from <path>/report.py"
    assert (
        titles[1]
        == "redis.exceptions.ConnectionError: Error -2 connecting to <internal host>. Name or service not known."
    )


async def test_pagination_by_offset(gim: Any) -> None:
    for i, name in enumerate(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]):
        error = f"KeyError: 'missing_{name}_setting' while loading settings module {name}_conf"
        cause = f"The {name} service expects a '{name}' entry in its settings file (case {i})."
        await call(
            gim,
            "gim_submit_issue",
            submission(
                error,
                cause,
                actions=[{"order": 1, "type": "config", "command": f"add {name} to settings", "explanation": cause}],
            ),
        )
    query = {"error_message": "KeyError: 'missing_setting' while loading settings module", "limit": 3}
    pages = [await call(gim, "gim_search_issues", {**query, "offset": offset}) for offset in (0, 3, 6, 9)]
    total = pages[0]["total_results"]
    assert total == 7 and all(p["total_results"] == total for p in pages)
    ids = [issue["issue_id"] for page in pages for issue in page["issues"]]
    assert len(ids) == 7 and len(set(ids)) == 7
    assert [len(p["issues"]) for p in pages] == [3, 3, 1, 0]
    assert [p["offset"] for p in pages] == [0, 3, 6, 9] and all(p["limit"] == 3 for p in pages)
    whole = await call(gim, "gim_search_issues", {**query, "limit": 10})
    assert [i["issue_id"] for i in whole["issues"]] == ids


async def _confirm(runtime: Any, who: str, issue_id: str, success: bool) -> dict[str, Any]:
    context = runtime.new_context(principal=Principal(subject=who, all_scopes=True), transport="memory")
    outcome = await runtime.call_tool("gim_confirm_fix", {"issue_id": issue_id, "success": success}, context)
    assert not outcome.is_error, outcome.body
    return outcome.body


async def test_confidence_is_bayesian_with_one_vote_per_identity(gim: Any) -> None:
    created = await call(gim, "gim_submit_issue", numpy_submission())
    issue_id = created["master_issue_id"]
    runtime = gim.runtime
    first = await _confirm(runtime, "alice", issue_id, True)
    assert first == {
        "status": "confirmed",
        "issue_id": issue_id,
        "updated_confidence": 0.75,  # Beta(2, 1) prior + 1 success = 3/4
        "updated_verification_count": 1,
    }
    assert (await _confirm(runtime, "bob", issue_id, True))["updated_confidence"] == 0.8  # 4/5
    repeat = await _confirm(runtime, "alice", issue_id, True)  # a repeat replaces: nothing changes
    assert repeat["updated_confidence"] == 0.8 and repeat["updated_verification_count"] == 2
    changed = await _confirm(runtime, "alice", issue_id, False)  # alice changes her mind: 1 success, 1 failure
    assert changed["updated_confidence"] == 0.6 and changed["updated_verification_count"] == 1
    bundle = await call(gim, "gim_get_fix_bundle", {"issue_id": issue_id})
    assert bundle["confidence_score"] == 0.6 and bundle["verification_count"] == 1
    found = await call(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
    assert found["issues"][0]["last_confirmed_at"] is not None


async def _read_json(client: Any, uri: str) -> dict[str, Any]:
    return json.loads((await client.read_resource(uri)).contents[0].text)


async def test_verification_count_and_usage_statistics_tell_one_story(gim: Any) -> None:
    """Alice confirms twice, Bob once: three successful reports by two identities. verification_count (votes,
    one per identity) is 2 on every surface; the statistics count the 3 reports as total_resolved and carry the
    2 votes beside them. When Alice changes her vote, her vote moves to failure_count; her reports stay."""
    created = await call(gim, "gim_submit_issue", numpy_submission())
    issue_id = created["master_issue_id"]
    for who in ("alice", "bob", "alice"):
        confirmed = await _confirm(gim.runtime, who, issue_id, True)
    assert confirmed["updated_verification_count"] == 2

    async def surfaces() -> tuple[int, int, int, dict[str, Any]]:
        bundle = await call(gim, "gim_get_fix_bundle", {"issue_id": issue_id})
        found = await call(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
        stats = await _read_json(gim, f"gim://issues/{issue_id}/stats")
        pack_stats = (await gim.runtime.packs["gim"].issue_stats(issue_id)).model_dump(mode="json")  # the CLI's
        assert pack_stats == stats
        return (
            bundle["verification_count"],
            found["issues"][0]["verification_count"],
            stats["verification_count"],
            stats,
        )

    bundle_count, search_count, stats_count, stats = await surfaces()
    assert bundle_count == search_count == stats_count == 2 and stats["failure_count"] == 0
    assert stats["total_resolved"] == 3 and stats["total_fix_applied"] == 3 and stats["resolution_rate"] == 1.0
    found = await call(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
    last_confirmed = datetime.fromisoformat(found["issues"][0]["last_confirmed_at"])
    assert datetime.fromisoformat(stats["last_resolved_at"]) == last_confirmed  # the same instant

    changed = await _confirm(gim.runtime, "alice", issue_id, False)
    assert changed["updated_verification_count"] == 1
    bundle_count, search_count, stats_count, stats = await surfaces()
    assert bundle_count == search_count == stats_count == 1 and stats["failure_count"] == 1
    assert stats["total_resolved"] == 3 and stats["total_fix_applied"] == 4  # every report stays counted
    # confidence follows the votes alone: Beta(2, 1) + 1 success + 1 failure
    assert changed["updated_confidence"] == round((2 + 1) / (3 + 1 + 1), 4)


async def test_confirmations_make_good_fixes_rise(gim: Any) -> None:
    """Two issues equally relevant to a query: the one the community confirmed ranks first."""
    shared = "ConnectionResetError: [Errno 104] Connection reset by peer while streaming the response"
    a = await call(
        gim,
        "gim_submit_issue",
        submission(
            shared,
            "The proxy closes idle keep-alive connections after 60s.",
            actions=[
                {
                    "order": 1,
                    "type": "config",
                    "command": "keepalive_timeout 300",
                    "explanation": "raise the proxy idle timeout",
                }
            ],
        ),
    )
    b = await call(
        gim,
        "gim_submit_issue",
        submission(
            shared,
            "The server's worker is killed by the OOM killer mid-response.",
            actions=[
                {
                    "order": 1,
                    "type": "config",
                    "command": "raise the memory limit",
                    "explanation": "give workers more memory",
                }
            ],
        ),
    )
    assert a["master_issue_id"] != b["master_issue_id"]
    before = await call(gim, "gim_search_issues", {"error_message": shared})
    scores = {i["issue_id"]: i["relevance_score"] for i in before["issues"]}
    assert scores[a["master_issue_id"]] == scores[b["master_issue_id"]]
    underdog = sorted(scores)[1] if before["issues"][0]["issue_id"] == sorted(scores)[0] else sorted(scores)[0]
    for who in ("u1", "u2", "u3"):
        await _confirm(gim.runtime, who, underdog, True)
    after = await call(gim, "gim_search_issues", {"error_message": shared})
    assert after["issues"][0]["issue_id"] == underdog
    assert after["issues"][0]["confidence_score"] > after["issues"][1]["confidence_score"]


async def test_concurrent_submissions_of_one_new_issue_make_one_master(gim: Any) -> None:
    results: list[dict[str, Any]] = []

    async def one(i: int) -> None:
        env = {"language": "python", "os": ["linux", "macos", "windows"][i % 3]}
        results.append(await call(gim, "gim_submit_issue", numpy_submission(environment=env)))

    async with anyio.create_task_group() as group:
        for i in range(8):
            group.start_soon(one, i)
    masters = {r["master_issue_id"] for r in results}
    assert len(masters) == 1
    assert sum(1 for r in results if not r["merged"]) == 1


async def test_baseline_strategy_runs_through_the_same_tools(data_dir: Path) -> None:
    async with running_gateway(gim_config(gim={"strategy": "baseline"}), data_dir) as client:
        first = await call(client, "gim_submit_issue", numpy_submission())
        same = await call(client, "gim_submit_issue", numpy_submission())
        assert same["merged"] is True and same["master_issue_id"] == first["master_issue_id"]
        found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert found["issues"][0]["issue_id"] == first["master_issue_id"]
        core = client.runtime.packs["gim"].core
        assert core.kinds == ("combined",)


async def test_in_a_shared_memory_a_submitter_does_not_verify_its_own_fix(gim: Any) -> None:
    """Callers known by key or token: a submitter's own success is refused (others verify a fix); its failure, and
    everyone else's confirmation, count. A personal memory's one caller (stdio) confirms its own fixes."""
    runtime = gim.runtime
    submitter = Principal(
        subject="key:sub", tenant="acme", scopes=frozenset({"gim:read", "gim:write"}), method="api_key"
    )
    context = runtime.new_context(principal=submitter, transport="memory")
    created = (await runtime.call_tool("gim_submit_issue", numpy_submission(), context)).body
    issue_id = created["master_issue_id"]

    async def confirm(success: bool) -> Any:
        arguments = {"issue_id": issue_id, "success": success}
        return await runtime.call_tool("gim_confirm_fix", arguments, runtime.new_context(principal=submitter))

    own = await confirm(True)
    assert own.is_error and own.error.code == "forbidden" and own.error.details["reason"] == "own_submission"
    assert not (await confirm(False)).is_error
    assert (await _confirm(runtime, "another", issue_id, True))["updated_verification_count"] == 1
    local = await call(gim, "gim_submit_issue", numpy_submission())  # the local caller, over the in-memory client
    confirmed = await call(gim, "gim_confirm_fix", {"issue_id": local["master_issue_id"], "success": True})
    assert confirmed["status"] == "confirmed"
