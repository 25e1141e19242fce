"""The ``file`` connector: a local directory, with ``.gitignore`` rules, and git history when it is a work tree.

What is offered: every regular file under ``root`` except hidden ones (``.git``, ``.env``...), those the
``.gitignore`` files (at any depth, plus ``.git/info/exclude``) or ``exclude`` patterns ignore, binaries (a NUL byte
or invalid UTF-8 in the first 8 KiB) and files over ``max_file_bytes``. Symbolic links are never followed out of the
root: a link to a file inside it is offered under the link's path, one leading outside is skipped, and linked
directories are not descended (no loops). ``scan`` reports every skip with its reason. ``read`` applies the same
rules to one path, and refuses ``..``, absolute paths and links out of the root.
"""

from __future__ import annotations

import mimetypes
import os
import posixpath
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pathspec
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from gateway.api import (
    DocumentContent,
    Forbidden,
    HistoryEntry,
    NotFound,
    ProviderContext,
    ScanResult,
    SkippedDocument,
    SkipReason,
    SourceDocument,
    ToolError,
    ValidationFailed,
)

__all__ = ["FileConnector", "FileConnectorConfig", "safe_relative_path"]

_SNIFF_BYTES = 8192
_MIME_OVERRIDES = {
    ".py": "text/x-python",
    ".md": "text/markdown",
    ".rst": "text/x-rst",
    ".ts": "text/x-typescript",
    ".go": "text/x-go",
    ".rs": "text/x-rust",
    ".java": "text/x-java",
    ".toml": "application/toml",
}


_PATH_MAX = 4096
"""Linux's ``PATH_MAX``: no longer path names a directory."""


class FileConnectorConfig(BaseModel):
    """``connector_config`` of a ``file`` connector (besides ``type`` and ``name``)."""

    model_config = ConfigDict(extra="forbid")

    root: Path = Field(description="The directory to index (absolute, or relative to the config file).")
    max_file_bytes: int = Field(1_000_000, ge=1, le=100_000_000, description="Larger files are skipped.")
    include_hidden: bool = Field(False, description="Offer hidden files and directories (never .git).")
    respect_gitignore: bool = Field(True, description="Skip what .gitignore files and .git/info/exclude ignore.")
    exclude: list[str] = Field(default_factory=list, description="Extra gitignore-style patterns to skip.")
    history: bool = Field(True, description="Read git history when the root is inside a git work tree.")

    @field_validator("root")
    @classmethod
    def _usable_root(cls, value: Path, info: ValidationInfo) -> Path:
        base = (info.context or {}).get("config_dir") if info.context else None
        shown = str(value) if len(str(value)) <= 300 else f"{str(value)[:200]}...({len(str(value))} characters)"
        if len(str(value)) > _PATH_MAX:  # resolving it would look up each of its (up to 100,000) components
            raise ValueError(f"{shown} is longer than a path can be ({_PATH_MAX} characters)")
        try:
            path = value.expanduser()
            if not path.is_absolute():
                path = (Path(base) if base else Path.cwd()) / path
            path = path.resolve()
            exists, is_dir = path.exists(), path.is_dir()
        except (OSError, RuntimeError) as exc:  # too long a name, a symlink loop...
            raise ValueError(f"{shown} cannot be used: {getattr(exc, 'strerror', None) or exc}") from None
        if not exists:
            raise ValueError(f"{shown} does not exist")
        if not is_dir:
            raise ValueError(f"{shown} is not a directory")
        if not os.access(path, os.R_OK | os.X_OK):
            raise ValueError(f"{shown} is not readable")
        return path


def safe_relative_path(path: str) -> str:
    """``path`` as a normalised root-relative POSIX path; :class:`ValidationFailed` for an absolute path or one
    that climbs out with ``..``."""
    raw = path.replace("\\", "/")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise ValidationFailed(
            f"path {path!r} must be relative to the indexed root",
            details={"errors": [{"field": "path", "message": "absolute path"}]},
        )
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValidationFailed(
            f"path {path!r} leaves the indexed root",
            details={"errors": [{"field": "path", "message": "'..' is not allowed"}]},
        )
    return "/".join(parts)


@dataclass
class _IgnoreRules:
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


class FileConnector:
    """A local directory as a connector (see the module docstring)."""

    type = "file"

    def __init__(self, config: FileConnectorConfig) -> None:
        self.config = config
        self.root = config.root.resolve()
        self._rules: _IgnoreRules | None = None
        self._repo: Any = None
        self._repo_checked = False

    # -- rules -------------------------------------------------------------------------------------------------

    def _load_rules(self) -> _IgnoreRules:
        lines_by_dir: dict[str, list[str]] = {"": []}
        if self.config.respect_gitignore:
            lines_by_dir[""] += _read_lines(self.root / ".git" / "info" / "exclude")
            for directory, dirnames, filenames in os.walk(self.root):
                dirnames[:] = [d for d in dirnames if d != ".git"]
                if ".gitignore" in filenames:
                    rel = os.path.relpath(directory, self.root).replace(os.sep, "/")
                    key = "" if rel == "." else rel
                    lines_by_dir.setdefault(key, []).extend(_read_lines(Path(directory) / ".gitignore"))
        return _IgnoreRules(
            {key: pathspec.GitIgnoreSpec.from_lines(lines) for key, lines in lines_by_dir.items() if lines},
            pathspec.GitIgnoreSpec.from_lines(self.config.exclude) if self.config.exclude else None,
        )

    def _classify(self, rel: str, full: Path, rules: _IgnoreRules) -> SkipReason | None:
        """Why ``rel`` is not offered, or None."""
        parts = rel.split("/")
        if ".git" in parts or (not self.config.include_hidden and any(p.startswith(".") for p in parts)):
            return "hidden"
        if os.path.islink(full):
            target = os.path.realpath(full)
            if not (target == str(self.root) or target.startswith(str(self.root) + os.sep)):
                return "symlink"
        # every ancestor directory, then the file itself
        for i in range(1, len(parts)):
            if rules.ignored("/".join(parts[:i]), True):
                return "ignored"
        if rules.ignored(rel, False):
            return "ignored"
        try:
            stat = full.stat()
        except OSError:
            return "unreadable"
        if stat.st_size > self.config.max_file_bytes:
            return "too_large"
        try:
            with open(full, "rb") as handle:
                head = handle.read(_SNIFF_BYTES)
        except OSError:
            return "unreadable"
        if _binary(head):
            return "binary"
        return None

    # -- connector protocol ------------------------------------------------------------------------------------

    async def scan(self) -> ScanResult:
        return await anyio.to_thread.run_sync(self._scan)

    def _scan(self) -> ScanResult:
        rules = self._rules = self._load_rules()
        documents: list[SourceDocument] = []
        skipped: list[SkippedDocument] = []
        stack = [self.root]
        while stack:
            directory = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as exc:
                if directory == self.root:  # unmounted, deleted, permissions changed: not "the source is empty"
                    raise ToolError(
                        f"the directory {self.root} cannot be read ({exc.strerror or exc}); nothing was removed "
                        "from the index: restore it, or point the connector at its new place",
                        code="source_unavailable",
                        retryable=True,
                        details={"root": str(self.root)},
                    ) from None
                skipped.append(SkippedDocument(directory.relative_to(self.root).as_posix() + "/", "unreadable"))
                continue
            for entry in entries:
                full = Path(entry.path)
                rel = full.relative_to(self.root).as_posix()
                if entry.is_dir(follow_symlinks=False):
                    if entry.name == ".git" or (not self.config.include_hidden and entry.name.startswith(".")):
                        skipped.append(SkippedDocument(rel + "/", "hidden"))
                    elif rules.ignored(rel, True):
                        skipped.append(SkippedDocument(rel + "/", "ignored"))
                    else:
                        stack.append(full)
                    continue
                if entry.is_symlink() and entry.is_dir():
                    skipped.append(SkippedDocument(rel + "/", "symlink"))
                    continue
                if not entry.is_file():
                    continue
                reason = self._classify(rel, full, rules)
                if reason is not None:
                    skipped.append(SkippedDocument(rel, reason))
                    continue
                stat = full.stat()
                documents.append(SourceDocument(rel, stat.st_size, datetime.fromtimestamp(stat.st_mtime, UTC), "file"))
        return ScanResult(documents=documents, skipped=skipped)

    def resolve(self, path: str) -> tuple[str, Path]:
        """The normalised relative path and the absolute path of ``path`` inside the root (links out refused)."""
        rel = safe_relative_path(path)
        full = self.root / rel if rel else self.root
        real = Path(os.path.realpath(full))
        if real != self.root and self.root not in real.parents:
            raise Forbidden(f"{path!r} leads outside the indexed root", details={"field": "path", "reason": "symlink"})
        return rel, full

    async def read(self, path: str) -> DocumentContent:
        rel, full = self.resolve(path)
        return await anyio.to_thread.run_sync(self._read, rel, full)

    def _read(self, rel: str, full: Path) -> DocumentContent:
        if not full.exists():
            raise NotFound(f"no file {rel!r} under the indexed root", details={"field": "path"})
        if full.is_dir():
            raise Forbidden(f"{rel!r} is a directory", details={"field": "path", "reason": "directory"})
        rules = self._rules or self._load_rules()
        reason = self._classify(rel, full, rules)
        if reason is not None:
            raise Forbidden(
                f"{rel!r} is not offered by this connector ({reason})", details={"field": "path", "reason": reason}
            )
        data = full.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Forbidden(f"{rel!r} is binary", details={"field": "path", "reason": "binary"}) from None
        suffix = posixpath.splitext(rel)[1].lower()
        mime = _MIME_OVERRIDES.get(suffix) or mimetypes.guess_type(rel)[0] or "text/plain"
        modified = datetime.fromtimestamp(full.stat().st_mtime, UTC)
        return DocumentContent(path=rel, text=text, mime_type=mime, last_modified=modified)

    async def history(self, path: str | None = None, *, limit: int = 20) -> list[HistoryEntry]:
        if not self.config.history:
            return []
        rel = safe_relative_path(path) if path else None
        return await anyio.to_thread.run_sync(self._history, rel, limit)

    def _git(self) -> Any:
        if not self._repo_checked:
            self._repo_checked = True
            from dulwich.errors import NotGitRepository
            from dulwich.repo import Repo

            try:
                self._repo = Repo.discover(str(self.root))
            except NotGitRepository:
                self._repo = None
        return self._repo

    def _history(self, rel: str | None, limit: int) -> list[HistoryEntry]:
        repo = self._git()
        if repo is None:
            return []
        prefix = os.path.relpath(self.root, repo.path).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix + "/"
        try:
            head = repo.head()
        except KeyError:  # no commit yet
            return []
        paths = [(prefix + rel).encode()] if rel else ([prefix.rstrip("/").encode()] if prefix else None)
        entries: list[HistoryEntry] = []
        for walk_entry in repo.get_walker(include=[head], paths=paths, max_entries=limit):
            commit = walk_entry.commit
            changed: list[str] = []
            try:
                for change in walk_entry.changes():
                    for item in change if isinstance(change, list) else [change]:
                        name = _changed_path(item)
                        if name.startswith(prefix):
                            changed.append(name[len(prefix) :])
            except KeyError:  # an object missing from a shallow clone: the paths read so far
                pass
            entries.append(
                HistoryEntry(
                    id=commit.id.decode(),
                    author=commit.author.decode("utf-8", "replace"),
                    timestamp=datetime.fromtimestamp(commit.author_time, UTC),
                    message=commit.message.decode("utf-8", "replace").strip(),
                    paths=tuple(changed[:50]),
                )
            )
        return entries

    async def aclose(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None


def _changed_path(change: Any) -> str:
    """The path a commit's change touched: the new one, or the old one of a deletion (whose new side is empty)."""
    for side in (getattr(change, "new", None), getattr(change, "old", None)):
        path = getattr(side, "path", None)
        if path:
            return path.decode("utf-8", "replace")
    return ""


def _binary(head: bytes) -> bool:
    """``head`` (a file's first bytes, up to the sniff window) holds a NUL or is not UTF-8."""
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut_by_window = len(head) == _SNIFF_BYTES and exc.start >= len(head) - 4
        return not cut_by_window  # a multi-byte character the window cut is fine; a whole file's end is not
    return False


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def file_connector_factory(context: ProviderContext) -> FileConnector:
    assert isinstance(context.config, FileConnectorConfig)
    return FileConnector(context.config)
