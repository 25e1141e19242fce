"""The ``file`` connector: a local directory, with ``.gitignore`` rules, and git history when it is a work tree.

What is offered: every regular file under ``root`` except hidden ones (``.git``, ``.env``...), those the
``.gitignore`` files (at any depth, plus ``.git/info/exclude``) or ``exclude`` patterns ignore, binaries (a NUL byte
or invalid UTF-8 in the first 8 KiB: a text file with a stray byte further on is read with U+FFFD in its place) and
files over ``max_file_bytes``. Symbolic links are never followed out of the root: a link to a file inside it is
offered under the link's path when that file would be offered under its own (a link cannot expose a hidden, ignored
or excluded file); one leading outside, to a directory (not descended: no loops), into a loop or to nothing is
skipped. ``scan`` reports every skip with its reason. ``read`` applies the same rules to one path, and refuses
``..``, absolute paths, links out of the root and paths through a linked directory.
"""

from __future__ import annotations

import mimetypes
import os
import posixpath
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
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
from gateway_plugins.context.file_rules import SNIFF_BYTES, IgnoreRules, is_binary, load_ignore_rules

__all__ = ["FileConnector", "FileConnectorConfig", "safe_relative_path"]

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


class FileConnector:
    """A local directory as a connector (see the module docstring)."""

    type = "file"

    def __init__(self, config: FileConnectorConfig) -> None:
        self.config = config
        self.root = config.root.resolve()
        self._rules: IgnoreRules | None = None
        self._repo: Any = None
        self._repo_checked = False

    # -- rules -------------------------------------------------------------------------------------------------

    def _load_rules(self) -> IgnoreRules:
        return load_ignore_rules(
            self.root, respect_gitignore=self.config.respect_gitignore, exclude=self.config.exclude
        )

    def _named_out(self, rel: str, rules: IgnoreRules) -> SkipReason | None:
        """Why the name ``rel`` (or a directory on its way) is not offered, or None."""
        parts = rel.split("/")
        if ".git" in parts or (not self.config.include_hidden and any(p.startswith(".") for p in parts)):
            return "hidden"
        return "ignored" if rules.ignored_on_the_way(rel) else None

    def _link_out(self, full: Path, rules: IgnoreRules) -> SkipReason | None:
        """Why the symbolic link ``full`` is not offered: it leads out of the root, to a directory, into a loop or to
        nothing (``symlink``), or to a file not offered under its own name (that file's reason). None if offered."""
        if not full.is_file():  # False, not an error, for a loop (ELOOP) or a dangling link
            return "symlink"
        target = Path(os.path.realpath(full))
        if self.root not in target.parents:
            return "symlink"
        return self._named_out(target.relative_to(self.root).as_posix(), rules)

    def _classify(self, rel: str, full: Path, rules: IgnoreRules) -> SkipReason | None:
        """Why ``rel`` is not offered, or None."""
        reason = self._named_out(rel, rules)
        if reason is None and os.path.islink(full):
            reason = self._link_out(full, rules)
        if reason is not None:
            return reason
        try:
            stat = full.stat()
        except OSError:
            return "unreadable"
        if stat.st_size > self.config.max_file_bytes:
            return "too_large"
        try:
            with open(full, "rb") as handle:
                head = handle.read(SNIFF_BYTES)
        except OSError:
            return "unreadable"
        if is_binary(head):
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
                link = entry.is_symlink()
                if not link and not entry.is_file(follow_symlinks=False):
                    continue  # a socket, a FIFO, a device
                reason = self._classify(rel, full, rules)
                if reason is None:
                    try:
                        stat = full.stat()
                    except OSError:  # gone since it was classified
                        reason = "unreadable"
                if reason is not None:
                    skipped.append(SkippedDocument(rel + "/" if link and os.path.isdir(full) else rel, reason))
                    continue
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
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if os.path.islink(self.root.joinpath(*parts[:i])):
                raise Forbidden(
                    f"{rel!r} is reached through the symbolic link {'/'.join(parts[:i])!r}: linked directories are "
                    "not descended, so nothing under them is indexed or served (use the path of the real directory)",
                    details={"field": "path", "reason": "symlink"},
                )
        link = os.path.islink(full)
        if not link and not full.exists():
            raise NotFound(f"no file {rel!r} under the indexed root", details={"field": "path"})
        if not link and full.is_dir():
            raise Forbidden(f"{rel!r} is a directory", details={"field": "path", "reason": "directory"})
        rules = self._rules or self._load_rules()
        reason = self._classify(rel, full, rules)
        if reason is not None:
            why = f": it is a symbolic link {_leads_to(full)}" if link else ""
            raise Forbidden(
                f"{rel!r} is not offered by this connector ({reason}){why}", details={"field": "path", "reason": reason}
            )
        # the head passed the sniff: a stray byte further on reads as U+FFFD, as in editors and ripgrep
        text = full.read_bytes().decode("utf-8", errors="replace")
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


def _leads_to(link: Path) -> str:
    """Where a refused symbolic link leads, in words."""
    if os.path.isdir(link):
        return "to a directory (linked directories are not descended)"
    if not os.path.exists(link):
        return "to nothing, or into a loop"
    return "to a file this connector does not offer"


def file_connector_factory(context: ProviderContext) -> FileConnector:
    assert isinstance(context.config, FileConnectorConfig)
    return FileConnector(context.config)
