"""Running git safely: read-only queries of the workspace, and ``git apply`` on it or on a scratch copy.

Every call disables what could run code from a repository's own config (``core.fsmonitor``, external diff and
textconv drivers), takes no optional locks (``git diff`` must not rewrite the index), never prompts, and has a
timeout. Nothing here stages, commits or otherwise changes the repository's state.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread

_SAFE_CONFIG = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    "-c",
    "diff.relative=false",
    "-c",
    "color.ui=false",
    "-c",
    "core.hooksPath=/dev/null",
)


class GitError(Exception):
    """git failed, timed out, or is not installed."""


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: str


def _environment(ceiling: Path | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") or key in ("GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES")
    }
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_PAGER": "cat"})
    if ceiling is not None:
        env["GIT_CEILING_DIRECTORIES"] = str(ceiling)
    return env


async def git(
    *args: str, cwd: Path, time_limit: float, stdin: bytes | None = None, ceiling: Path | None = None
) -> GitResult:
    """Run ``git <args>`` in ``cwd``. Raises :class:`GitError` on timeout or when git cannot start."""
    command = ["git", *_SAFE_CONFIG, *args]
    try:
        with anyio.fail_after(time_limit):
            done = await anyio.run_process(
                command, input=stdin, cwd=cwd, env=_environment(ceiling), check=False, stderr=subprocess.PIPE
            )
    except TimeoutError as error:
        raise GitError(f"git {args[0]} did not finish within {time_limit:g}s") from error
    except OSError as error:
        raise GitError(f"git could not run: {error}") from error
    return GitResult(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace").strip())


@dataclass(frozen=True)
class RepoInfo:
    """Where a workspace sits in its repository."""

    toplevel: Path
    prefix: str
    """The workspace root relative to the top level (``""`` when they are the same), POSIX, with a final ``/``."""
    head: str | None
    """``HEAD`` when the repository has a commit, else ``None``."""


async def repo_info(root: Path, time_limit: float) -> RepoInfo | None:
    """The repository containing ``root``, or ``None`` when it is not in one."""
    result = await git("rev-parse", "--show-toplevel", "--show-prefix", cwd=root, time_limit=time_limit)
    if result.returncode != 0:
        return None
    lines = result.stdout.decode("utf-8", "surrogateescape").splitlines()
    toplevel = Path(lines[0]) if lines else root
    prefix = lines[1] if len(lines) > 1 else ""
    head = await git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=root, time_limit=time_limit)
    return RepoInfo(toplevel, prefix, "HEAD" if head.returncode == 0 else None)


async def empty_tree(root: Path, time_limit: float) -> str:
    """The id of the empty tree in this repository's hash algorithm (the base of a diff before any commit)."""
    result = await git("hash-object", "-t", "tree", "--stdin", cwd=root, time_limit=time_limit, stdin=b"")
    if result.returncode != 0:
        raise GitError(result.stderr or "git hash-object failed")
    return result.stdout.decode().strip()


def _workspace_apply(root: Path, repo: RepoInfo | None) -> tuple[Path, Path | None, list[str]]:
    """(cwd, ceiling, extra ``git apply`` arguments) for a diff whose paths are relative to ``root``: inside a
    repository, from the top level with ``--directory=<prefix>``, since git resolves patch paths from there."""
    if repo is None:
        return root, root.parent, []
    return repo.toplevel, None, [f"--directory={repo.prefix.rstrip('/')}"] if repo.prefix else []


async def apply_to_workspace(
    root: Path, repo: RepoInfo | None, diff: str, *, check: bool, time_limit: float
) -> str | None:
    """``git apply`` (``--check`` when ``check``) ``diff`` whose paths are relative to ``root``. Returns ``None``
    on success, else git's reason."""
    cwd, ceiling, extra = _workspace_apply(root, repo)
    args = ["apply", "--whitespace=nowarn", *(["--check"] if check else []), *extra]
    result = await git(*args, "-", cwd=cwd, time_limit=time_limit, stdin=diff.encode("utf-8"), ceiling=ceiling)
    return None if result.returncode == 0 else (result.stderr or f"git apply exited with {result.returncode}")


async def paths_git_applies(root: Path, repo: RepoInfo | None, diff: str, *, time_limit: float) -> set[str] | None:
    """The paths ``git apply`` itself reads ``diff`` to touch, relative to ``root`` (``git apply --numstat``, which
    applies nothing), or ``None`` when git cannot read it. Checks of a diff compare their own reading with this one:
    git's reading of lines, headers and ``-p1`` is what will be applied."""
    cwd, ceiling, extra = _workspace_apply(root, repo)
    result = await git(
        "apply", "--numstat", "-z", *extra, "-", cwd=cwd, time_limit=time_limit, stdin=diff.encode(), ceiling=ceiling
    )
    if result.returncode != 0:
        return None
    prefix = repo.prefix if repo is not None else ""
    fields = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    paths: set[str] = set()
    index = 0
    while index < len(fields):
        counts = fields[index].split("\t")
        index += 1
        if len(counts) != 3:
            continue
        named = [counts[2]] if counts[2] else fields[index : index + 2]  # a rename: "\0old\0new"
        index += 0 if counts[2] else 2
        paths.update(path.removeprefix(prefix) for path in named)
    return paths


async def apply_in_memory(
    files: dict[str, str], diff: str, *, time_limit: float, reverse: bool = False
) -> dict[str, str] | None:
    """``files`` (path → content) with ``diff`` applied by ``git apply`` in a scratch directory, or ``None`` when
    it does not apply cleanly. Paths must already be checked (:func:`diffs.path_problem`)."""
    async with _scratch("gan-apply-") as base:
        await anyio.to_thread.run_sync(_write_tree, base, files)
        args = ["apply", "--whitespace=nowarn", *(["--reverse"] if reverse else []), "-"]
        result = await git(*args, cwd=base, time_limit=time_limit, stdin=diff.encode("utf-8"), ceiling=base.parent)
        if result.returncode != 0:
            return None
        return await anyio.to_thread.run_sync(_read_tree, base)


async def diff(path: str, old: str, new: str, *, time_limit: float) -> str:
    """The diff from ``old`` to ``new`` as ``path`` (``""`` when equal), written by ``git diff --no-index``: the
    ``a/``/``b/`` headers ``git apply`` reads, three lines of context. git's diff stays fast on files of repeated
    lines, where :mod:`difflib` takes cubic time (40 s for 8,000 lines)."""
    if old == new:
        return ""
    async with _scratch("gan-diff-") as base:
        await anyio.to_thread.run_sync(_write_tree, base, {f"a/{path}": old, f"b/{path}": new})
        args = ["diff", "--no-index", "--no-prefix", "--no-color", "--no-ext-diff", "--no-textconv", "-U3"]
        result = await git(*args, "--", f"a/{path}", f"b/{path}", cwd=base, time_limit=time_limit, ceiling=base.parent)
    if result.returncode not in (0, 1):  # 1: the files differ
        raise GitError(result.stderr or f"git diff exited with {result.returncode}")
    return result.stdout.decode("utf-8", "surrogateescape")


@asynccontextmanager
async def _scratch(prefix: str) -> AsyncIterator[Path]:
    """A temporary directory, created and removed in a worker thread (removing a tree of large files is I/O)."""
    directory = await anyio.to_thread.run_sync(partial(tempfile.TemporaryDirectory, prefix=prefix))
    try:
        yield Path(directory.name)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(directory.cleanup)


def _write_tree(base: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = base / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8", "surrogateescape"))


def _read_tree(base: Path) -> dict[str, str]:
    return {
        item.relative_to(base).as_posix(): item.read_bytes().decode("utf-8", "surrogateescape")
        for item in sorted(base.rglob("*"))
        if item.is_file()
    }
