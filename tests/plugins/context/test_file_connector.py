"""The ``file`` connector: the contract suite, ignore rules, skips with reasons, confinement, git history."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.api import Forbidden, NotFound, ValidationFailed
from gateway.contracts.connector_contract import ConnectorContract, Seeded
from gateway_plugins.context.file_connector import FileConnector, FileConnectorConfig

pytestmark = [pytest.mark.anyio]

DOCUMENTS = {
    "README.md": "# Demo\n",
    "src/app.py": "def main():\n    return 'ünïcode'\n",
    "src/pkg/util.js": "exports.f = function () {};\n",
}


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def connector(root: Path, **options: object) -> FileConnector:
    return FileConnector(FileConnectorConfig(root=root, **options))


class TestFileConnectorContract(ConnectorContract):
    @pytest.fixture
    async def seeded(self, tmp_path: Path) -> AsyncIterator[Seeded]:
        root = make_tree(tmp_path / "repo", dict(DOCUMENTS))
        instance = connector(root)
        yield Seeded(instance, DOCUMENTS)
        await instance.aclose()


async def test_gitignore_hidden_binary_and_size_are_skipped_with_reasons(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "repo",
        {
            ".gitignore": "build/\n*.log\n",
            "src/.gitignore": "generated.py\n",
            "src/generated.py": "x = 1\n",
            "src/kept.py": "y = 2\n",
            "build/out.js": "z\n",
            "debug.log": "log\n",
            ".env": "SECRET=1\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
            "big.txt": "a" * 2000,
            "notes.txt": "ok\n",
        },
    )
    result = await connector(root, max_file_bytes=1000).scan()
    assert sorted(d.path for d in result.documents) == ["notes.txt", "src/kept.py"]
    reasons = {s.path: s.reason for s in result.skipped}
    assert reasons["build/"] == "ignored" and reasons["debug.log"] == "ignored"
    assert reasons["src/generated.py"] == "ignored"  # a nested .gitignore applies below its directory
    assert reasons[".env"] == "hidden" and reasons["logo.png"] == "binary" and reasons["big.txt"] == "too_large"


async def test_matches_git_check_ignore(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "repo",
        {
            ".gitignore": "*.tmp\n!keep.tmp\ndocs/_build/\n/top-only.txt\n",
            "a.tmp": "1",
            "keep.tmp": "2",
            "docs/_build/x.html": "3",
            "docs/guide.md": "4",
            "top-only.txt": "5",
            "sub/top-only.txt": "6",
            "sub/.gitignore": "!keep.gen.tmp\nlocal.txt\n",  # a deeper file overrides, both ways
            "sub/keep.gen.tmp": "7",
            "sub/drop.gen.tmp": "8",
            "sub/local.txt": "9",
        },
    )
    git(root, "init", "-q")
    offered = {d.path for d in (await connector(root).scan()).documents}
    paths = ["a.tmp", "keep.tmp", "docs/_build/x.html", "docs/guide.md", "top-only.txt", "sub/top-only.txt"]
    for path in [*paths, "sub/keep.gen.tmp", "sub/drop.gen.tmp", "sub/local.txt"]:
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=root).returncode == 0
        assert (path not in offered) == ignored, path


async def test_symlinks_never_lead_out_of_the_root(tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "outside", {"secret.txt": "top secret\n"})
    root = make_tree(tmp_path / "repo", {"inside.txt": "hello\n"})
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "alias.txt").symlink_to(root / "inside.txt")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    instance = connector(root)
    result = await instance.scan()
    assert {d.path for d in result.documents} == {"inside.txt", "alias.txt"}
    assert {s.path: s.reason for s in result.skipped}["escape.txt"] == "symlink"
    with pytest.raises(Forbidden):
        await instance.read("escape.txt")
    with pytest.raises(Forbidden):
        await instance.read("linked_dir/secret.txt")
    with pytest.raises(ValidationFailed):
        await instance.read("../outside/secret.txt")
    assert (await instance.read("alias.txt")).text == "hello\n"


async def test_read_refuses_what_scan_skips(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo", {"logo.png": b"\x00\x01", ".env": "A=1\n", "dir/a.py": "a\n"})
    instance = connector(root)
    for path, reason in (("logo.png", "binary"), (".env", "hidden"), ("dir", "directory")):
        with pytest.raises(Forbidden) as caught:
            await instance.read(path)
        assert caught.value.details["reason"] == reason
    with pytest.raises(NotFound):
        await instance.read("dir/missing.py")


def test_config_names_the_root_problem(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    for root, words in ((tmp_path / "missing", "does not exist"), (tmp_path / "file.txt", "is not a directory")):
        with pytest.raises(ValidationError) as caught:
            FileConnectorConfig(root=root)
        assert caught.value.errors()[0]["loc"] == ("root",) and words in str(caught.value)


def test_a_root_the_system_cannot_look_up_is_a_validation_error(tmp_path: Path) -> None:
    """A name longer than the file system allows (a caller's 200,000 characters made ``stat`` raise, a 500; a
    path of 100,000 components took a second to resolve, on the event loop), or a symlink loop: the field is named,
    with the reason, and the value is not echoed whole."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    cases = (
        (tmp_path / ("a" * 2000), "File name too long"),
        (Path("/a" * 100_000), "longer than a path can be"),
        (tmp_path / "loop" / "x", ""),
    )
    for root, words in cases:
        with pytest.raises(ValidationError) as caught:
            FileConnectorConfig(root=root)
        assert caught.value.errors()[0]["loc"] == ("root",) and words in str(caught.value)
        assert len(str(caught.value)) < 1000


async def test_git_history_of_the_tree_and_of_one_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo", {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "PROJ-7: first")
    (root / "a.py").write_text("a = 2\n")
    git(root, "commit", "-q", "-am", "change a")
    instance = connector(root)
    whole = await instance.history(None, limit=10)
    assert [e.message for e in whole] == ["change a", "PROJ-7: first"]
    assert whole[0].author.startswith("Ada") and whole[0].paths == ("a.py",)
    assert [e.message for e in await instance.history("b.py", limit=10)] == ["PROJ-7: first"]
    assert await connector(make_tree(tmp_path / "plain", {"x.txt": "x"})).history(None) == []


async def test_history_names_every_path_of_a_commit_that_deletes_a_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo", {"a.py": "a = 1\n", "b.py": "b = 1\n", "z.py": "z = 1\n"})
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    git(root, "rm", "-q", "b.py")
    (root / "a.py").write_text("a = 2\n")
    (root / "z.py").write_text("z = 2\n")
    git(root, "commit", "-q", "-am", "drop b, edit a and z")
    (newest,) = await connector(root).history("a.py", limit=1)
    assert sorted(newest.paths) == ["a.py", "b.py", "z.py"]


async def test_a_small_file_ending_in_invalid_utf8_is_skipped_as_binary(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo", {"latin1.py": "name = 'caf\xe9'\n".encode("latin-1"), "ok.py": "x = 1\n"})
    result = await connector(root).scan()
    assert [d.path for d in result.documents] == ["ok.py"]
    assert {s.path: s.reason for s in result.skipped} == {"latin1.py": "binary"}


async def test_a_repositorys_gitignore_cannot_re_include_what_the_operator_excludes(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "repo",
        {"app.py": "x = 1\n", "certs/.gitignore": "*\n!.gitignore\n!*.pem\n", "certs/server.pem": "-----BEGIN\n"},
    )
    result = await connector(root, exclude=["*.pem"]).scan()
    assert [d.path for d in result.documents] == ["app.py"]
    assert {s.path: s.reason for s in result.skipped}["certs/server.pem"] == "ignored"


async def test_symlink_loops_and_dangling_links_are_skipped_and_counted_never_fatal(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo", {"app.py": "x = 1\n", "sub/a.py": "a = 1\n"})
    (root / "selfloop").symlink_to("selfloop")
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "sub" / "deep").symlink_to("deep")
    (root / "dangling.py").symlink_to("nonexistent.py")
    (root / "loopdir").symlink_to("sub", target_is_directory=True)
    instance = connector(root)
    result = await instance.scan()
    assert sorted(d.path for d in result.documents) == ["app.py", "sub/a.py"]
    assert {s.path: s.reason for s in result.skipped} == {
        "a": "symlink",
        "b": "symlink",
        "dangling.py": "symlink",
        "loopdir/": "symlink",
        "selfloop": "symlink",
        "sub/deep": "symlink",
    }
    for path, words in (
        ("selfloop", "into a loop"),
        ("dangling.py", "to nothing"),
        ("loopdir", "linked directories are not descended"),
        ("loopdir/a.py", "reached through the symbolic link 'loopdir'"),
        ("selfloop/x.py", "reached through the symbolic link 'selfloop'"),
    ):
        with pytest.raises(Forbidden) as caught:
            await instance.read(path)
        assert caught.value.details["reason"] == "symlink" and words in caught.value.message, path


async def test_a_link_inside_the_root_cannot_expose_a_hidden_ignored_or_excluded_file(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "repo",
        {
            ".gitignore": "build/\n",
            ".env": "API_KEY=hunter2\n",
            "build/gen.py": "GENERATED = 1\n",
            "secrets/creds.py": "PASSWORD = 'hunter2'\n",
            "secrets/sub/key.py": "KEY = 'hunter2'\n",
            "docs/guide.md": "# Guide\n",
        },
    )
    links = {
        "docs/settings.txt": ("../.env", "hidden"),
        "docs/gen.py": ("../build/gen.py", "ignored"),
        "docs/creds.py": ("../secrets/creds.py", "ignored"),
        "docs/key.py": ("../secrets/sub/key.py", "ignored"),  # an excluded directory on the way
        "docs/alias.md": ("guide.md", None),  # a link to an offered file is offered under its own path
    }
    for link, (target, _) in links.items():
        (root / link).symlink_to(target)
    instance = connector(root, exclude=["secrets/"])
    result = await instance.scan()
    assert sorted(d.path for d in result.documents) == ["docs/alias.md", "docs/guide.md"]
    reasons = {s.path: s.reason for s in result.skipped}
    for link, (_, reason) in links.items():
        if reason is None:
            assert (await instance.read(link)).text == "# Guide\n"
            continue
        assert reasons[link] == reason, link
        with pytest.raises(Forbidden) as caught:
            await instance.read(link)
        assert caught.value.details["reason"] == reason and "hunter2" not in caught.value.message, link


async def test_a_stray_byte_after_the_sniff_window_is_text_for_scan_and_read_alike(tmp_path: Path) -> None:
    data = b"x = 1\n" * 2000 + b"name = 'caf\xe9'\n"  # 12 KB: the invalid byte lies past the first 8 KiB
    root = make_tree(tmp_path / "repo", {"late.py": data})
    instance = connector(root)
    assert [d.path for d in (await instance.scan()).documents] == ["late.py"]
    text = (await instance.read("late.py")).text
    assert text.endswith("name = 'caf\ufffd'\n") and len(text) == len(data)
