"""Unified diffs: parsing real git output, changed lines, writing diffs git applies, and unsafe paths."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gateway_plugins.thinking import diffs, git
from tests.plugins.thinking.conftest import GitRepo


def test_parses_git_diff_output_with_changed_lines(repo: GitRepo) -> None:
    repo.write("app.py", "a\nb\nc\nd\ne\nf\ng\nh\n")
    repo.write("old name.txt", "same\n")
    repo.write("gone.txt", "bye\n")
    repo.commit()
    repo.write("app.py", "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\n")
    repo.git("mv", "old name.txt", "new name.txt")
    (repo.root / "gone.txt").unlink()
    text = repo.git("diff", "-M", "HEAD")
    patches = {patch.path: patch for patch in diffs.parse(text)}
    assert set(patches) == {"app.py", "new name.txt", "gone.txt"}
    assert patches["app.py"].added_lines() == {2, 9, 10}
    assert (
        patches["new name.txt"].old_path == "old name.txt"
        and "rename from old name.txt" in patches["new name.txt"].headers
    )
    assert patches["gone.txt"].new_path is None and patches["gone.txt"].added_lines() == set()


def test_parses_quoted_paths_and_missing_newlines(repo: GitRepo) -> None:
    repo.write('café "menu".txt', "soup")
    repo.commit()
    repo.write('café "menu".txt', "soup\nbread")
    text = repo.git("-c", "core.quotePath=true", "diff", "HEAD")
    [patch] = diffs.parse(text)
    assert patch.path == 'café "menu".txt'
    assert patch.added_lines() == {1, 2}
    assert any(line.startswith("\\") for line in patch.hunks[0].lines)


def test_prose_around_a_diff_is_ignored() -> None:
    text = "I changed the loop:\n\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\nThat is all.\n"
    [patch] = diffs.parse(text)
    assert (patch.old_path, patch.new_path, patch.added_lines()) == ("x.py", "x.py", {2})
    assert patch.new_side() == {1: "a = 1", 2: "b = 3"}


def test_a_markdown_list_is_not_a_diff() -> None:
    assert diffs.parse("- item\n- item\n+ plus\n") == []


def git_apply(base: Path, diff: str) -> None:
    done = subprocess.run(["git", "apply", "-"], cwd=base, input=diff.encode(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb", "a\nb\nc"),
        ("a\nb\n", "a\nb"),
        ("x\n" * 50, "x\n" * 20 + "y\n" + "x\n" * 30),
    ],
)
async def test_a_diff_from_git_applies_and_parses(tmp_path: Path, old: str, new: str) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "f.txt").write_text(old)
    text = await git.diff("pkg/f.txt", old, new, time_limit=30)
    assert text.startswith("diff --git a/pkg/f.txt b/pkg/f.txt\n")
    [patch] = diffs.parse(text)
    assert patch.old_path == patch.new_path == "pkg/f.txt"
    git_apply(tmp_path, text)
    assert (tmp_path / "pkg" / "f.txt").read_text() == new
    assert await git.diff("pkg/f.txt", old, old, time_limit=30) == ""


@pytest.mark.parametrize("content", ["one\ntwo\n", "no final newline", ""])
def test_new_file_diff_applies_with_git(tmp_path: Path, content: str) -> None:
    diff = diffs.new_file_diff("src/new.py", content)
    git_apply(tmp_path, diff)
    assert (tmp_path / "src" / "new.py").read_text() == content
    if content:
        [patch] = diffs.parse(diff)
        assert patch.added_lines() == set(range(1, len(content.splitlines()) + 1))


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("src/ok.py", None),
        ("./src/ok.py", None),
        ("/etc/passwd", "absolute path"),
        ("C:\\Windows\\system.ini", "absolute path"),
        ("../outside.py", "leaves the workspace"),
        ("src/../../outside.py", "leaves the workspace"),
        (".git/hooks/pre-commit", "inside .git"),
        ("", "empty path"),
    ],
)
def test_path_problem(path: str, problem: str | None) -> None:
    found = diffs.path_problem(path)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_risky_patches_are_refused() -> None:
    rename = "diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n"
    mode = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    link = "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n"
    binary = "diff --git a/x.png b/x.png\nindex 1..2 100644\nGIT binary patch\nliteral 1\n"
    escape = "--- a/../x.py\n+++ b/../x.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert "rename from" in diffs.patch_problems(diffs.parse(rename))[0]
    assert "old mode" in diffs.patch_problems(diffs.parse(mode))[0]
    assert "symbolic link" in diffs.patch_problems(diffs.parse(link))[0]
    assert "binary" in diffs.patch_problems(diffs.parse(binary))[0]
    assert "leaves the workspace" in diffs.patch_problems(diffs.parse(escape))[0]
    assert diffs.patch_problems([]) == ["no file patch found"]


async def _carried(old: str, new: str, lines: frozenset[int] | None) -> frozenset[int] | None:
    [patch] = diffs.parse(await git.diff("f.txt", old, new, time_limit=30)) or [None]
    return diffs.carry_lines(patch, lines)


@pytest.mark.anyio
async def test_changed_lines_follow_the_change() -> None:
    old = "a\nb\nc\nd\n"
    new = "a\nc\nX\nd\n"
    assert await _carried(old, new, frozenset({3, 4})) == frozenset({2, 3, 4})
    assert await _carried(old, new, None) is None
    assert await _carried(old, old, frozenset({1, 3})) == frozenset({1, 3})
    inserted = "".join(f"{n}\n" for n in range(1, 21))
    grown = inserted.replace("10\n", "10\nnew\nnewer\n")
    assert await _carried(inserted, grown, frozenset({1, 9, 10, 11, 20})) == frozenset({1, 9, 10, 11, 12, 13, 22})
    shrunk = inserted.replace("5\n6\n", "")
    assert await _carried(inserted, shrunk, frozenset({4, 5, 7, 20})) == frozenset({4, 5, 18})


@pytest.mark.anyio
async def test_changed_lines_follow_a_change_to_every_other_line_of_a_long_repetitive_file() -> None:
    """The case that took a sequence matcher cubic time (30 s for 2,000 lines): 8,000 lines of 101 repeated
    texts, trailing blanks stripped from every other line. Every line stays in place; the stripped ones are new."""
    texts = [f"line_{n % 101} = {n % 101}" for n in range(8000)]
    old = "".join(text + (" \n" if n % 2 else "\n") for n, text in enumerate(texts))
    new = "".join(text + "\n" for text in texts)
    changed = frozenset(range(1, 8001, 3))
    assert await _carried(old, new, changed) == changed | frozenset(range(2, 8001, 2))


def test_lines_break_where_git_breaks_them() -> None:
    # str.splitlines() would also break at the form feed, open a hunk there and swallow the next file's header
    text = (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n note\x0c@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n"
        "--- /dev/null\n+++ b/.github/workflows/ci.yml\n@@ -0,0 +1 @@\n+on: push\n"
    )
    assert diffs.touched_paths(diffs.parse(text)) == [".github/workflows/ci.yml", "m.py"]


@pytest.mark.anyio
async def test_git_says_which_paths_it_would_touch(tmp_path: Path) -> None:
    # without a/ b/ prefixes git strips the first component all the same (-p1): src/m.py is m.py to it
    unprefixed = "--- src/m.py\n+++ src/m.py\n@@ -0,0 +1 @@\n+import os\n"
    assert await git.paths_git_applies(tmp_path, None, unprefixed, time_limit=30) == {"m.py"}
    prefixed = "--- a/src/m.py\n+++ b/src/m.py\n@@ -0,0 +1 @@\n+import os\n"
    assert await git.paths_git_applies(tmp_path, None, prefixed, time_limit=30) == {"src/m.py"}
    assert await git.paths_git_applies(tmp_path, None, "not a diff\n", time_limit=30) in (None, set())
