"""The workspace boundary and the context an audit collects: confinement, limits, git states, patch refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.api import GatewayError
from gateway_plugins.thinking.audit import Auditor
from gateway_plugins.thinking.config import ContextLimits, ThinkingConfig
from gateway_plugins.thinking.context import AuditContext, ContextCollector
from gateway_plugins.thinking.git import repo_info
from gateway_plugins.thinking.session_config import SessionConfig
from gateway_plugins.thinking.workspace import PathRefused, Workspace
from tests.plugins.thinking.conftest import GitRepo

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (tmp_path / "secret.txt").write_text("host secret\n")
    (root / "inside_link.py").symlink_to(root / "src" / "a.py")
    (root / "escape_link.txt").symlink_to(tmp_path / "secret.txt")
    (root / "escape_dir").symlink_to(tmp_path)
    return root


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../secret.txt", "leaves the workspace"),
        ("src/../../secret.txt", "leaves the workspace"),
        (str(Path("/etc/passwd")), "absolute path"),
        ("escape_link.txt", "resolves outside the workspace"),
        ("escape_dir/secret.txt", "resolves outside the workspace"),
        (".git/config", "inside .git"),
    ],
)
def test_paths_outside_the_workspace_are_refused(tree: Path, path: str, reason: str) -> None:
    with pytest.raises(PathRefused, match=reason):
        Workspace(tree, max_file_bytes=1000).confine(path)


def test_paths_inside_are_resolved(tree: Path) -> None:
    workspace = Workspace(tree, max_file_bytes=1000)
    assert workspace.confine("src/a.py") == tree / "src" / "a.py"
    assert workspace.confine("inside_link.py") == tree / "src" / "a.py"
    with pytest.raises(PathRefused, match="symbolic link"):
        workspace.editable("inside_link.py")
    with pytest.raises(PathRefused, match="not an existing regular file"):
        workspace.editable("src/missing.py")
    assert workspace.editable("src/a.py") == tree / "src" / "a.py"


def test_reads_are_bounded_and_skip_binaries(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("".join(f"line_{i} = {i}\n" for i in range(1000)))
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    workspace = Workspace(tmp_path, max_file_bytes=1000)
    big = workspace.read("big.py")
    assert big is not None and big.truncated and len(big.text) <= 1000 and big.text.endswith("\n")
    assert workspace.read("blob.bin") is None and workspace.read("absent.py") is None


def test_walk_skips_caches_and_escaping_links(tree: Path) -> None:
    (tree / "node_modules" / "x").mkdir(parents=True)
    (tree / "node_modules" / "x" / "i.js").write_text("x\n")
    (tree / ".hidden").mkdir()
    (tree / ".hidden" / "h.py").write_text("h\n")
    assert Workspace(tree, max_file_bytes=1000).walk() == ["inside_link.py", "src/a.py"]


async def collect(root: Path, thought: str = "", **session: object) -> AuditContext:
    limits = ContextLimits(**{k: v for k, v in session.items() if k in ContextLimits.model_fields})  # type: ignore[arg-type]
    config = SessionConfig(**{k: v for k, v in session.items() if k not in ContextLimits.model_fields})  # type: ignore[arg-type]
    collector = ContextCollector(Workspace(root, max_file_bytes=limits.max_file_bytes), limits)
    return await collector.collect(config, thought)


async def test_diff_scope_before_the_first_commit(repo: GitRepo) -> None:
    repo.write("a.py", "import os\n")
    repo.git("add", "a.py")
    repo.write("b.py", "b = 1\n")
    repo.write(".gitignore", "ignored.py\n")
    repo.write("ignored.py", "never = 'reviewed'\n")
    context = await collect(repo.root)
    assert sorted(f.path for f in context.files) == [".gitignore", "a.py", "b.py"]
    assert all(f.changed_lines == frozenset({1}) for f in context.files)
    assert "+import os" in context.diff and "never = 'reviewed'" not in context.diff


async def test_a_changed_path_refused_for_leaving_the_workspace_is_neither_reviewed_nor_cited(
    repo: GitRepo, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("elsewhere = 1\n")
    repo.write("a.py", "a = 1\n")
    repo.commit()
    repo.write("a.py", "a = 2\n")
    (repo.root / "flink.py").symlink_to(outside)  # untracked, and outside once resolved
    context = await collect(repo.root)
    assert [f.path for f in context.files] == ["a.py"]
    assert context.changed_paths == ["a.py"]
    assert any("flink.py: resolves outside the workspace" in w for w in context.warnings)


async def test_diff_scope_limits_and_deletions(repo: GitRepo) -> None:
    for index in range(5):
        repo.write(f"m{index}.py", f"x = {index}\n")
    repo.write("gone.py", "bye\n")
    repo.commit()
    for index in range(5):
        repo.write(f"m{index}.py", f"x = {index + 1}\n")
    (repo.root / "gone.py").unlink()
    context = await collect(repo.root, max_files=3)
    assert [f.path for f in context.files] == ["m0.py", "m1.py", "m2.py"]
    assert context.changed_paths == ["m0.py", "m1.py", "m2.py", "m3.py", "m4.py"]  # deleted files excluded
    assert any("2 file(s) not reviewed" in w for w in context.warnings)
    assert "-bye" in context.diff


async def test_a_thought_diff_that_no_longer_applies_is_reviewed_as_a_fragment(repo: GitRepo) -> None:
    repo.write("m.py", "".join(f"v{i} = {i}\n" for i in range(1, 21)))
    repo.commit()
    stale = "--- a/m.py\n+++ b/m.py\n@@ -10,3 +10,4 @@\n old_a = 1\n+new = compute()\n old_b = 2\n old_c = 3\n"
    context = await collect(repo.root, f"```diff\n{stale}```")
    [fragment] = context.files
    assert fragment.path == "thought/m.py" and fragment.fragment and fragment.changed_lines == frozenset({11})
    assert fragment.content.splitlines()[10] == "new = compute()" and fragment.content.splitlines()[0] == ""


async def test_a_thought_diff_already_applied_marks_the_workspace_file(repo: GitRepo) -> None:
    repo.write("m.py", "a = 1\nb = 2\n")
    repo.commit()
    repo.write("m.py", "a = 1\nb = 2\nc = 3\n")
    applied = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n a = 1\n b = 2\n+c = 3\n"
    context = await collect(repo.root, f"Already done:\n```diff\n{applied}```")
    [file] = context.files
    assert file.path == "m.py" and file.origin == "workspace" and file.changed_lines == frozenset({3})


async def test_repo_info_of_a_subdirectory(repo: GitRepo, tmp_path: Path) -> None:
    (repo.root / "sub").mkdir()
    info = await repo_info(repo.root / "sub", 10)
    assert info is not None and info.prefix == "sub/" and info.head is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert await repo_info(plain, 10) is None


def auditor(root: Path) -> Auditor:
    def no_judges(*_: object) -> object:
        raise GatewayError("not needed")

    config = ThinkingConfig(workspace_root=root, audit=True)
    return Auditor(config, no_judges, Workspace(root, max_file_bytes=10_000))


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("../outside.py", "leaves the workspace"),
        ("/tmp/x.py", "absolute path"),
        ("link.py", "resolves outside"),
        ("inside_link.py", "symbolic link"),
        ("dirlink/outside.py", "resolves outside"),
        (".git/config", "inside .git"),
        ("new_file.py", "not an existing regular file"),
    ],
)
async def test_apply_fixes_refuses_paths_outside_the_workspace(
    repo: GitRepo, tmp_path: Path, target: str, reason: str
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    repo.write("m.py", "x = 1\n")
    (repo.root / "link.py").symlink_to(outside)
    (repo.root / "inside_link.py").symlink_to(repo.root / "m.py")
    (repo.root / "dirlink").symlink_to(tmp_path)
    repo.commit()
    diff = f"--- a/{target}\n+++ b/{target}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    warnings: list[str] = []
    context = AuditContext(repo=await repo_info(repo.root, 10))
    assert await auditor(repo.root)._apply(diff, context, warnings) == []
    assert reason in warnings[0] and outside.read_text() == "x = 1\n"


async def test_apply_fixes_refuses_a_patch_that_does_not_apply(repo: GitRepo) -> None:
    repo.write("m.py", "x = 1\n")
    repo.commit()
    warnings: list[str] = []
    context = AuditContext(repo=await repo_info(repo.root, 10))
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 5\n+x = 6\n"
    assert await auditor(repo.root)._apply(diff, context, warnings) == []
    assert "does not apply cleanly" in warnings[0] and (repo.root / "m.py").read_text() == "x = 1\n"


async def test_apply_fixes_outside_a_repository(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    warnings: list[str] = []
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert await auditor(tmp_path)._apply(diff, AuditContext(), warnings) == ["m.py"]
    assert (tmp_path / "m.py").read_text() == "x = 2\n" and warnings == []


def test_a_symlink_loop_is_refused_as_a_path(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for path in ("a", "a/x.py"):
        with pytest.raises(PathRefused, match="not a usable path"):
            Workspace(tmp_path, max_file_bytes=1000).confine(path)
