"""Audits of code as assistants write it: fences in list items, form feeds and line separators, a diff of a change
already applied next to a whole-file review, paths the OS cannot open."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins.thinking.audit_support import audit, lines_of
from tests.plugins.thinking.conftest import GitRepo

pytestmark = pytest.mark.anyio


async def test_valid_code_in_a_list_item_fence_is_not_a_syntax_error(repo: GitRepo, tmp_path: Path) -> None:
    text = "Plan:\n1. Add the helper:\n   ```python\n   def add(a, b):\n       return a + b\n   ```\n2. Done."
    gan = (await audit(repo.root, tmp_path / "data", text))["gan"]
    assert gan["verdict"] == "pass" and gan["review"]["inline"] == []


async def test_form_feeds_and_line_separators_keep_line_numbers(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("ff.py", "import os\n\x0c\n\ndef f():\n    return 1\n\x0c\nx = 2   \n# TODO: later\n")
    repo.commit()
    config = '```gan-config\n{"scope": "paths", "paths": ["ff.py"]}\n```\n'
    code = '```python\nSEP = "a\u2028b"\n```'
    body = await audit(repo.root, tmp_path / "data", config + code)
    gan = body["gan"]
    rules = {(c["path"], c["line"], c["comment"].split(":")[0]) for c in gan["review"]["inline"]}
    assert {line for path, line, _ in rules if path == "ff.py"} == {1, 7, 8}, rules
    assert not [path for path, _, _ in rules if path.startswith("thought/")], rules
    assert gan["verdict"] != "reject"
    assert not [w for w in gan["warnings"] if "does not apply" in w], gan["warnings"]


async def test_a_diff_of_an_applied_change_does_not_narrow_a_whole_file_review(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("k.py", "import os\n\nx = 1\n\n\ndef f():\n    try:\n        return 1\n    except:\n        pass\n")
    repo.commit()
    repo.write("k.py", "import os\n\ny = 2\n\n\ndef f():\n    try:\n        return 1\n    except:\n        pass\n")
    diff = repo.git("diff")
    config = '```gan-config\n{"scope": "paths", "paths": ["k.py"]}\n```\n'
    alone = await audit(repo.root, tmp_path / "alone", config)
    with_diff = await audit(repo.root, tmp_path / "with-diff", f"{config}```diff\n{diff}```")
    assert lines_of(alone, "k.py") == lines_of(with_diff, "k.py") != []
    assert with_diff["gan"]["verdict"] == alone["gan"]["verdict"] != "pass"


@pytest.mark.parametrize(
    "text",
    [
        "```diff\n--- a/" + "b" * 300 + ".py\n+++ b/" + "b" * 300 + ".py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n```",
        '```gan-config\n{"scope": "paths", "paths": ["' + "a" * 300 + '"]}\n```',
    ],
    ids=["diff", "paths"],
)
async def test_a_path_the_os_refuses_is_a_warning(repo: GitRepo, tmp_path: Path, text: str) -> None:
    repo.write("a.py", "x = 1\n")
    repo.commit()
    body = await audit(repo.root, tmp_path / "data", text)
    assert "error" not in body and body["thoughtNumber"] == 2
    assert any("not a usable path (File name too long)" in w for w in body["gan"]["warnings"]), body["gan"]["warnings"]
