"""The workspace an audit may read: every path confined to its root, every read bounded."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gateway_plugins.thinking.diffs import path_problem

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "dist",
        "build",
        "target",
        ".idea",
        ".vscode",
    }
)
SOURCE_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".js",
        ".mjs",
        ".cjs",
        ".jsx",
        ".ts",
        ".tsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".scala",
        ".rb",
        ".php",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".swift",
        ".sh",
        ".sql",
    }
)
KEY_FILES = (
    "README.md",
    "README.rst",
    "README",
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "package.json",
    "tsconfig.json",
    "Cargo.toml",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "Makefile",
    "Dockerfile",
)


class PathRefused(Exception):
    """A path names something outside the workspace (or inside ``.git``)."""


@dataclass(frozen=True)
class FileText:
    text: str
    truncated: bool


class Workspace:
    """A directory tree an audit reads. ``root`` is resolved once (symlinks included)."""

    def __init__(self, root: Path, *, max_file_bytes: int) -> None:
        self.root = root.resolve()
        self.max_file_bytes = max_file_bytes

    def confine(self, relative: str) -> Path:
        """The absolute path of ``relative``, refused when it is absolute, climbs out with ``..``, goes through
        ``.git``, resolves (through symlinks) outside the root, or cannot name a file (a name too long, a NUL)."""
        problem = path_problem(relative)
        if problem:
            raise PathRefused(problem)
        try:
            resolved = (self.root / relative).resolve()
            resolved.exists()  # the OS's own refusals (ENAMETOOLONG...) surface here, not in the callers
        except (OSError, ValueError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python 3.11's resolve)
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise PathRefused(f"{relative[:200]}: not a usable path ({reason})") from None
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise PathRefused(f"{relative}: resolves outside the workspace")
        if ".git" in resolved.relative_to(self.root).parts:
            raise PathRefused(f"{relative}: inside .git")
        return resolved

    def editable(self, relative: str) -> Path:
        """Like :meth:`confine`, and the path must be an existing regular file, not a symbolic link (a patch may
        only modify files that are there; it never creates, deletes or writes through links)."""
        resolved = self.confine(relative)
        unresolved = self.root / relative
        if unresolved.is_symlink():
            raise PathRefused(f"{relative}: is a symbolic link")
        if not resolved.is_file():
            raise PathRefused(f"{relative}: not an existing regular file")
        return resolved

    def read(self, relative: str) -> FileText | None:
        """The text of a file (its beginning when larger than the limit), ``None`` when absent or binary."""
        path = self.confine(relative)
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            data = handle.read(self.max_file_bytes + 1)
        if b"\x00" in data[:8192]:
            return None
        truncated = len(data) > self.max_file_bytes
        if truncated:
            data = data[: self.max_file_bytes]
            data = data[: data.rfind(b"\n") + 1] or data
        return FileText(data.decode("utf-8", errors="replace"), truncated)

    def walk(self, relative: str = "", limit: int = 10_000) -> list[str]:
        """Files under ``relative`` (POSIX, relative to the root), sorted, skipping VCS, caches and symlinks that
        leave the workspace; at most ``limit``."""
        start = self.confine(relative) if relative else self.root
        if start.is_file():
            return [start.relative_to(self.root).as_posix()]
        found: list[str] = []
        for directory, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
            for name in sorted(files):
                candidate = Path(directory) / name
                resolved = candidate.resolve()
                if not resolved.is_relative_to(self.root) or not resolved.is_file():
                    continue
                found.append(candidate.relative_to(self.root).as_posix())
                if len(found) >= limit:
                    return found
        return found
