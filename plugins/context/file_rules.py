"""What the ``file`` connector leaves out by name and by content: ``.gitignore`` rules, ``exclude`` patterns, and
the binary sniff (a NUL byte or invalid UTF-8 in a file's first 8 KiB)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pathspec

__all__ = ["SNIFF_BYTES", "IgnoreRules", "is_binary", "load_ignore_rules"]

SNIFF_BYTES = 8192


@dataclass
class IgnoreRules:
    """gitignore specs by the directory (root-relative, '' for the root) whose .gitignore they came from."""

    specs: dict[str, pathspec.PathSpec]
    veto: pathspec.PathSpec | None = None
    """The connector's own ``exclude`` patterns: what they match is skipped whatever a .gitignore re-includes."""

    def __post_init__(self) -> None:
        self._deepest_first = sorted(self.specs.items(), key=lambda item: -len(item[0].split("/")) if item[0] else 0)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """As git decides: the deepest .gitignore with a pattern matching ``rel`` rules, and in that file its last
        matching pattern (so a ``!keep.py`` below re-includes what a parent directory's ``*.py`` ignores). The
        operator's ``exclude`` comes first: a repository's own files cannot re-include what it names."""
        if self.veto is not None and self.veto.match_file(rel + "/" if is_dir else rel):
            return True
        for base, spec in self._deepest_first:
            if base and not (rel == base or rel.startswith(base + "/")):
                continue
            sub = rel[len(base) + 1 :] if base else rel
            decision = spec.check_file(sub + "/" if is_dir else sub).include
            if decision is not None:
                return decision
        return False

    def ignored_on_the_way(self, rel: str) -> bool:
        """``rel`` (a file) or one of its ancestor directories is ignored."""
        parts = rel.split("/")
        return any(self.ignored("/".join(parts[:i]), True) for i in range(1, len(parts))) or self.ignored(rel, False)


def load_ignore_rules(root: Path, *, respect_gitignore: bool, exclude: list[str]) -> IgnoreRules:
    """The ``.gitignore`` files under ``root`` (at any depth, plus ``.git/info/exclude``) and ``exclude``."""
    lines_by_dir: dict[str, list[str]] = {"": []}
    if respect_gitignore:
        lines_by_dir[""] += _read_lines(root / ".git" / "info" / "exclude")
        for directory, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            if ".gitignore" in filenames:
                rel = os.path.relpath(directory, root).replace(os.sep, "/")
                key = "" if rel == "." else rel
                lines_by_dir.setdefault(key, []).extend(_read_lines(Path(directory) / ".gitignore"))
    return IgnoreRules(
        {key: pathspec.GitIgnoreSpec.from_lines(lines) for key, lines in lines_by_dir.items() if lines},
        pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None,
    )


def is_binary(head: bytes) -> bool:
    """``head`` (a file's first bytes, up to the sniff window) holds a NUL or is not UTF-8."""
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut_by_window = len(head) == SNIFF_BYTES and exc.start >= len(head) - 4
        return not cut_by_window  # a multi-byte character the window cut is fine; a whole file's end is not
    return False


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
