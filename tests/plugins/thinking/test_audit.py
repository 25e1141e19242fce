"""Audits end to end: a real git repository, the real judges, the MCP SDK client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.api import JudgeRequest
from gateway.testing import running_gateway
from tests.plugins.thinking.audit_support import CHANGED, ORIGINAL, SpyJudges, applied, audit, lines_of
from tests.plugins.thinking.conftest import GitRepo, call, gateway_config, thought

pytestmark = pytest.mark.anyio


async def test_a_diff_with_known_defects_gets_line_comments(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("app/config.py", ORIGINAL)
    repo.write("web/app.js", "export const answer = 42;\n")
    repo.commit()
    repo.write("app/config.py", CHANGED)
    repo.write("web/app.js", "export const answer = 42;\ndebugger;\n")
    repo.write("app/new_module.py", "VALUE = 1   \n")  # untracked, with trailing whitespace
    before = repo.state()
    body = await audit(repo.root, tmp_path / "data", "Review my change to ```read_config```:\n```gan-config\n{}\n```")
    gan = body["gan"]
    assert body["sessionId"] == "review-1" and body["nextThoughtNeeded"] is True  # forced by the verdict
    assert lines_of(body, "app/config.py") == [2, 2, 9, 11]  # untested change reported at the first changed line
    rules = {(c["line"], c["comment"].split(" ")[0]) for c in gan["review"]["inline"] if c["path"] == "app/config.py"}
    assert (2, "'sys'") in rules and (11, "undefined") in rules
    assert lines_of(body, "web/app.js") == [2, 2]  # debugger, and no test
    assert lines_of(body, "app/new_module.py") == [1, 1]  # trailing whitespace, and no test for the new module
    assert "repo://app/config.py:9-10" in gan["review"]["citations"]
    assert gan["verdict"] == "reject" and gan["iterations"] == 1  # 100 - 86 points of findings
    assert [card["model"] for card in gan["judge_cards"]] == ["internal"]
    assert gan["judge_cards"][0]["score"] == gan["overall"]
    assert {d["name"] for d in gan["dimensions"]} >= {"correctness", "maintainability", "style", "test_coverage"}
    assert "-import sys" in gan["proposed_diff"] and "+    except Exception:" in gan["proposed_diff"]
    assert "proposed_diff" in gan and "applied" not in gan
    assert repo.state() == before  # nothing staged, nothing written, not even the index


async def test_a_clean_tested_change_passes(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("lib/maths.py", "def double(x):\n    return 2 * x\n")
    repo.write(
        "tests/test_maths.py", "from lib.maths import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    )
    repo.commit()
    repo.write("lib/maths.py", "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n")
    repo.write(
        "tests/test_maths.py",
        "from lib.maths import double, triple\n\n\ndef test_double():\n    assert double(2) == 4\n\n\n"
        "def test_triple():\n    assert triple(2) == 6\n",
    )
    body = await audit(repo.root, tmp_path / "data", "Done:\n```gan-config\n{}\n```")
    gan = body["gan"]
    assert gan["verdict"] == "pass" and gan["overall"] == 100 and gan["review"]["inline"] == []
    assert gan["proposed_diff"] is None
    assert body["nextThoughtNeeded"] is False


async def test_a_parse_error_is_rejected(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("m.py", "x = 1\n")
    repo.commit()
    repo.write("m.py", "x = 1\ndef broken(:\n    pass\n")
    body = await audit(repo.root, tmp_path / "data", '```gan-config\n{"threshold": 10}\n```')
    gan = body["gan"]
    assert gan["verdict"] == "reject" and "parse-error at m.py:2" in gan["review"]["summary"]
    assert body["nextThoughtNeeded"] is True


async def test_code_in_the_thought_is_reviewed(tmp_path: Path) -> None:
    text = (
        "I will add this helper:\n```python\nimport json\n\n\ndef load(text):\n"
        "    try:\n        return json.loads(text)\n    except Exception:\n        pass\n```\n"
        "and this script:\n```js\nconsole.log(load(x));\n```"
    )
    body = await audit(tmp_path, tmp_path / "data", text)
    gan = body["gan"]
    assert lines_of(body, "thought/block-1.py") == [7]
    assert lines_of(body, "thought/block-2.js") == [1]
    assert "thought://block-1.py:7-8" in gan["review"]["citations"]
    assert any("not a git repository" in warning for warning in gan["warnings"])
    assert gan["proposed_diff"] is None  # code in a thought is not a workspace file to patch


async def test_a_diff_in_the_thought_is_resolved_against_the_workspace(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("app/config.py", ORIGINAL)
    repo.commit()
    patch = (
        "diff --git a/app/config.py b/app/config.py\n--- a/app/config.py\n+++ b/app/config.py\n"
        "@@ -1,6 +1,8 @@\n import os\n+import sys\n \n \n def read_config(path):\n"
        "     with open(path) as handle:\n         return handle.read()\n+    return FALLBACK\n"
    )
    body = await audit(repo.root, tmp_path / "data", f"Proposed change:\n```diff\n{patch}```")
    assert lines_of(body, "thought/app/config.py") == [2, 8]
    assert "thought://app/config.py:8-8" in body["gan"]["review"]["citations"]
    assert (repo.root / "app/config.py").read_text() == ORIGINAL


async def test_paths_scope_reviews_whole_files_and_stays_in_the_workspace(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("src/a.py", "import os\n")
    repo.write("src/pkg/b.py", "x = 1   \n")
    outside = tmp_path / "outside.py"
    outside.write_text("import secrets_of_the_host\n")
    (repo.root / "src" / "escape.py").symlink_to(outside)
    repo.commit()
    config = {"scope": "paths", "paths": ["src", "../outside.py", "/etc/passwd", "missing.py"]}
    body = await audit(repo.root, tmp_path / "data", f"```gan-config\n{json.dumps(config)}\n```")
    gan = body["gan"]
    assert {c["path"] for c in gan["review"]["inline"]} == {"src/a.py", "src/pkg/b.py"}
    warnings = " | ".join(gan["warnings"])
    assert "../outside.py: leaves the workspace" in warnings and "/etc/passwd: absolute path" in warnings
    assert "missing.py: no such file" in warnings
    assert "test_coverage" not in {d["name"] for d in gan["dimensions"]}


async def test_workspace_scope_gives_an_overview(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("README.md", "# Demo\n")
    repo.write("pyproject.toml", "[project]\nname = 'demo'\n")
    repo.write("demo/core.py", "def f(x):\n    if x == None:\n        return 1\n    return 2\n")
    repo.commit()
    seen: list[JudgeRequest] = []
    body = await audit(
        repo.root, tmp_path / "data", '```gan-config\n{"scope": "workspace", "judges": ["internal", "spy"]}\n```',
        extra_plugins=[("spy", SpyJudges(seen))], allowed_judges=["internal", "spy"],
    )  # fmt: skip
    [request] = seen
    assert request.scope == "workspace" and "3 file(s):" in request.overview and "== README.md ==" in request.overview
    assert [f.path for f in request.files] == ["demo/core.py"]
    assert body["gan"]["config"]["scope"] == "workspace"


async def test_nothing_to_review(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.txt", "a\n")
    repo.commit()
    body = await audit(repo.root, tmp_path / "data", 'Settings:\n```gan-config\n{"threshold": 95}\n```')
    gan = body["gan"]
    # a number, as the spec types it; the outcome says there was nothing to review
    assert gan["overall"] == 100 and gan["outcome"] == "nothing_to_review"
    assert gan["verdict"] == "pass" and gan["iterations"] == 0 and gan["judge_cards"] == []
    assert gan["review"]["summary"].startswith("Nothing to review") and body["nextThoughtNeeded"] is False


async def test_config_warnings_are_reported(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("m.py", "x = 1\n")
    repo.commit()
    repo.write("m.py", "x = 2\n")
    block = '{"threshold": 400, "maxCycles": "many", "judges": ["internal", "rm -rf"], "colour": "blue"}'
    body = await audit(repo.root, tmp_path / "data", f"```gan-config\n{block}\n```")
    gan = body["gan"]
    assert gan["config"]["threshold"] == 100 and gan["config"]["maxCycles"] == 1
    assert gan["config"]["judges"] == ["internal"]
    assert len(gan["warnings"]) == 4 and gan["verdict"] == "revise"  # 100 is not reachable with an untested change


async def test_more_cycles_verify_the_fix(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("app/config.py", ORIGINAL)
    repo.commit()
    repo.write("app/config.py", CHANGED.replace("    return DEFAULTS\n", "    return None   \n"))
    one = await audit(repo.root, tmp_path / "d1", "```gan-config\n{}\n```")
    two = await audit(repo.root, tmp_path / "d2", '```gan-config\n{"maxCycles": 3, "candidates": 2}\n```')
    assert one["gan"]["iterations"] == 1 and two["gan"]["iterations"] == 2
    assert one["gan"]["overall"] == two["gan"]["overall"]  # the verdict is about the code as it is
    assert "raises the overall score to" in two["gan"]["review"]["summary"]
    patched = [
        applied(repo.root, "app/config.py", body["gan"]["proposed_diff"], tmp_path / f"copy{n}")
        for n, body in enumerate((one, two))
    ]
    assert patched[0] == patched[1] and "import sys" not in patched[0]  # the same fix, verified in cycle 2


async def test_apply_fixes_patches_the_workspace(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("app/config.py", ORIGINAL)
    repo.commit()
    repo.write("app/config.py", CHANGED)
    body = await audit(repo.root, tmp_path / "data", '```gan-config\n{"applyFixes": true}\n```')
    assert body["gan"]["applied"] == ["app/config.py"]
    fixed = (repo.root / "app/config.py").read_text()
    assert "import sys" not in fixed and "    except Exception:\n" in fixed
    again = await audit(repo.root, tmp_path / "data2", "```gan-config\n{}\n```")
    assert again["gan"]["overall"] > body["gan"]["overall"]
    assert repo.git("diff", "--cached") == ""  # the working tree changed, the index did not


async def test_apply_fixes_in_a_subdirectory_of_a_repository(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("service/app/config.py", ORIGINAL)
    repo.commit()
    repo.write("service/app/config.py", CHANGED)
    body = await audit(repo.root / "service", tmp_path / "data", '```gan-config\n{"applyFixes": true}\n```')
    assert body["gan"]["applied"] == ["app/config.py"]
    assert "import sys" not in (repo.root / "service/app/config.py").read_text()


async def test_session_rounds_are_remembered(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("m.py", "x = 1\n")
    repo.commit()
    repo.write("m.py", "import os\nx = 1\n")
    async with running_gateway(gateway_config(repo.root), tmp_path / "data") as client:
        first = await call(client, thought("```gan-config\n{}\n```", 1, branchId="s1"))
        second = await call(client, thought("```gan-config\n{}\n```", 2, branchId="s1"))
        anonymous = await call(client, thought("```gan-config\n{}\n```", 3))
    assert "Session round" not in first["gan"]["review"]["summary"]
    assert f"Session round 2 (previous round: {first['gan']['overall']})" in second["gan"]["review"]["summary"]
    assert anonymous["sessionId"].startswith("gan-") and anonymous["sessionId"] != "s1"


async def test_without_git_the_audit_degrades(repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.write("m.py", "x = 1\n")
    repo.commit()
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1 +1,2 @@\n x = 1\n+y = undefined_thing\n"
    text = f'```gan-config\n{{"applyFixes": true}}\n```\n```diff\n{patch}```\n```python\nimport os\n```'
    body = await audit(repo.root, tmp_path / "data", text)
    gan = body["gan"]
    warnings = " | ".join(gan["warnings"])
    assert "workspace not read: git could not run" in warnings and "reviewed as a fragment" in warnings
    assert lines_of(body, "thought/block-1.py") == [1] and gan["applied"] == []


async def test_a_key_file_linking_out_of_the_workspace_is_a_warning(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("README.md", "# top\n")
    repo.write("pkg/a.py", "x = 1\n")
    (repo.root / "pkg" / "README.md").symlink_to("../README.md")  # a monorepo's package README
    repo.commit()
    body = await audit(repo.root / "pkg", tmp_path / "data", '```gan-config\n{"scope": "workspace"}\n```')
    assert "overview: README.md: resolves outside the workspace" in body["gan"]["warnings"]
