"""Audits and their judges end to end: patches a judge proposes outside the workspace or past the checks, judges
that fail or are missing, and Gemini's review combined with the internal one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from tests.fakes.gemini import FakeGemini, FakeResponse
from tests.plugins.thinking.audit_support import CHANGED, ORIGINAL, SpyJudges, audit, comments, evil_judge_applies
from tests.plugins.thinking.conftest import GitRepo, call, gateway_config, thought

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "target",
    ["../outside.py", "/tmp/outside-absolute.py", "link.py", ".git/config"],
)
async def test_a_judge_cannot_patch_outside_the_workspace(repo: GitRepo, tmp_path: Path, target: str) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    repo.write("m.py", "x = 1\n")
    (repo.root / "link.py").symlink_to(outside)
    repo.commit()
    repo.write("m.py", "x = 2\n")
    diff = f"--- a/{target}\n+++ b/{target}\n@@ -1 +1 @@\n-x = 1\n+x = 666\n"
    gan = await evil_judge_applies(repo, tmp_path, diff)
    assert gan["applied"] == [] and gan["proposed_diff"] is None
    assert any("evil: proposed diff ignored" in w for w in gan["warnings"])
    assert outside.read_text() == "x = 1\n" and "666" not in (repo.root / ".git" / "config").read_text()


async def test_failing_and_missing_judges_are_left_out(repo: GitRepo, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    repo.write("m.py", "x = 1\n")
    repo.commit()
    repo.write("m.py", "import os\nx = 1\n")
    config = '{"judges": ["internal", "broken", "gemini"]}'
    body = await audit(
        repo.root, tmp_path / "data", f"```gan-config\n{config}\n```",
        extra_plugins=[("spy", SpyJudges([]))], allowed_judges=["internal", "broken", "gemini"],
    )  # fmt: skip
    gan = body["gan"]
    cards = {card["model"]: card for card in gan["judge_cards"]}
    assert list(cards) == ["internal"] and isinstance(cards["internal"]["score"], int)  # cards carry numbers
    left_out = {entry["model"]: entry["reason"] for entry in gan["abstained"]}
    assert list(left_out) == ["broken", "gemini"]
    assert "RuntimeError: judge bug" in left_out["broken"] and left_out["gemini"].startswith("unavailable: no API key")
    assert gan["overall"] == cards["internal"]["score"] and gan["outcome"] == "reviewed"
    assert "notes" not in cards["internal"] or cards["internal"]["notes"]


async def test_no_judge_could_score(repo: GitRepo, tmp_path: Path, monkeypatch) -> None:
    """Code to review, but every judge abstains: overall is still a number (0: nothing earned approval), the
    verdict revise, the outcome unscored, and the reasons are in abstained."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    repo.write("m.py", "x = 1\n")
    repo.commit()
    repo.write("m.py", "x = 2\n")
    body = await audit(
        repo.root, tmp_path / "data", '```gan-config\n{"judges": ["broken", "gemini"]}\n```',
        extra_plugins=[("spy", SpyJudges([]))], allowed_judges=["internal", "broken", "gemini"],
    )  # fmt: skip
    gan = body["gan"]
    assert gan["overall"] == 0 and gan["outcome"] == "unscored" and gan["verdict"] == "revise"
    assert gan["judge_cards"] == [] and gan["dimensions"] == []
    assert [entry["model"] for entry in gan["abstained"]] == ["broken", "gemini"]
    assert body["nextThoughtNeeded"] is True and "No judge could score" in gan["review"]["summary"]


def gemini_config(fake: FakeGemini) -> dict[str, Any]:
    return {"judge": {"gemini": {"api_key": "test-key", "base_url": fake.base_url, "retries": 0, "timeout_seconds": 5}}}


async def test_gemini_and_internal_combine(repo: GitRepo, tmp_path: Path, fake_gemini: FakeGemini) -> None:
    repo.write("app/config.py", ORIGINAL)
    repo.commit()
    repo.write("app/config.py", CHANGED)
    answer = {
        "summary": "Errors are swallowed.",
        "dimensions": [{"name": "correctness", "score": 50}, {"name": "security", "score": 90}],
        "comments": [{"path": "app/config.py", "line": 10, "severity": "major", "comment": "Do not pass silently."}],
    }
    fake_gemini.generate_text = lambda request: json.dumps(answer)
    source = gateway_config(repo.root)
    source["plugins"].update(gemini_config(fake_gemini))
    async with running_gateway(source, tmp_path / "data") as client:
        body = await call(client, thought('```gan-config\n{"judges": ["internal", "gemini"]}\n```'))
        fake_gemini.enqueue(FakeResponse(status=500))
        failed = await call(client, thought('```gan-config\n{"judges": ["internal", "gemini"]}\n```', 2, branchId="s"))
    cards = {card["model"]: card for card in body["gan"]["judge_cards"]}
    assert cards["gemini/gemini-2.5-flash"]["score"] == 67  # (50 * .35 + 90 * .25) / .6 = 66.7
    assert body["gan"]["overall"] == round((cards["internal"]["score"] + 67) / 2)
    assert ("app/config.py", 10, "gemini/gemini-2.5-flash") in comments(body)
    prompt = fake_gemini.requests_for("generateContent")[0].json["contents"][-1]["parts"][0]["text"]
    assert "+import sys" in prompt and "    9|     except:" in prompt  # the workspace diff and the numbered file
    failed_cards = {card["model"]: card for card in failed["gan"]["judge_cards"]}
    assert list(failed_cards) == ["internal"]
    assert failed["gan"]["abstained"] == [{"model": "gemini/gemini-2.5-flash", "reason": "API error 500 INTERNAL"}]
    assert failed["gan"]["overall"] == failed_cards["internal"]["score"]


@pytest.mark.parametrize(
    ("changed", "diff"),
    [
        # a form feed str.splitlines() breaks at but git does not: a header the checks never saw
        (
            "m.py",
            "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 2\n+x = 3\n note\x0c@@ -1,2 +1,2 @@\n"
            "--- /dev/null\n+++ b/planted.py\n@@ -0,0 +1 @@\n+import os\n",
        ),
        # no a/ b/ prefixes: git strips "src/" all the same, and would create new.py at the root
        ("src/new.py", "--- src/new.py\n+++ src/new.py\n@@ -0,0 +1,2 @@\n+import os\n+os.system('true')\n"),
    ],
)
async def test_what_the_checks_read_is_what_git_applies(repo: GitRepo, tmp_path: Path, changed: str, diff: str) -> None:
    repo.write("m.py", "x = 1\n")
    repo.write("src/m.py", "x = 1\n")
    repo.commit()
    repo.write(changed, "x = 2\n")
    gan = await evil_judge_applies(repo, tmp_path, diff)
    assert gan["applied"] == [] and any("evil: proposed diff ignored" in w for w in gan["warnings"])
    assert not (repo.root / "planted.py").exists() and not (repo.root / "new.py").exists()
    assert "import os" not in (repo.root / "m.py").read_text() + (repo.root / changed).read_text()
