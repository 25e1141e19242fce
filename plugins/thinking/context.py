"""What the judges see for each scope: the workspace diff, named paths, or a repository overview.

``diff``: ``git diff <HEAD or the empty tree>`` of the workspace plus its untracked, non-ignored files (read, never
added: the repository is not changed). ``paths``: the named files or directories. ``workspace``: a tree listing,
the key files, and source files up to the limits. In every scope, code written in the thought is added.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

import anyio.to_thread

from gateway.api import ReviewFile, source_lines
from gateway_plugins.thinking import diffs, git
from gateway_plugins.thinking.config import ContextLimits
from gateway_plugins.thinking.session_config import SessionConfig
from gateway_plugins.thinking.thought_code import extract
from gateway_plugins.thinking.workspace import KEY_FILES, SOURCE_SUFFIXES, PathRefused, Workspace


@dataclass
class AuditContext:
    files: list[ReviewFile] = field(default_factory=list)
    diff: str = ""
    changed_paths: list[str] = field(default_factory=list)
    overview: str = ""
    warnings: list[str] = field(default_factory=list)
    repo: git.RepoInfo | None = None


class _Budget:
    """Counts files and bytes loaded against the limits, and reports what was left out."""

    def __init__(self, limits: ContextLimits) -> None:
        self.limits = limits
        self.files = 0
        self.bytes = 0
        self.skipped: list[str] = []

    def admit(self, path: str, size: int) -> bool:
        if self.files >= self.limits.max_files or self.bytes + size > self.limits.max_total_bytes:
            self.skipped.append(path)
            return False
        self.files += 1
        self.bytes += size
        return True

    def warning(self) -> str | None:
        if not self.skipped:
            return None
        shown = ", ".join(self.skipped[:5]) + (" ..." if len(self.skipped) > 5 else "")
        return f"{len(self.skipped)} file(s) not reviewed (max_files/max_total_bytes limits): {shown}"


class ContextCollector:
    def __init__(self, workspace: Workspace, limits: ContextLimits) -> None:
        self.workspace = workspace
        self.limits = limits

    async def collect(self, config: SessionConfig, thought: str, *, workspace: bool = True) -> AuditContext:
        """What the judges see; with ``workspace`` false (a caller not allowed to read the workspace), the code of
        the thought alone."""
        timeout = self.limits.git_timeout_seconds
        context = AuditContext()
        budget = _Budget(self.limits)
        if workspace:
            try:
                context.repo = await git.repo_info(self.workspace.root, timeout)
                if config.scope == "diff":
                    await self._diff(context, budget)
                elif config.scope == "paths":
                    await anyio.to_thread.run_sync(self._paths, config.paths, context, budget)
                else:
                    await self._overview(context, budget)
            except git.GitError as error:
                context.warnings.append(f"workspace not read: {error}")
        code = await extract(thought, self.workspace if workspace else None, time_limit=timeout)
        known = {file.path: index for index, file in enumerate(context.files)}
        for applied in code.applied_files:
            if applied.path in known:
                index = known[applied.path]
                existing = context.files[index]
                lines = (  # None is the whole file: adding a diff's lines never narrows it
                    None
                    if existing.changed_lines is None or applied.changed_lines is None
                    else existing.changed_lines | applied.changed_lines
                )
                context.files[index] = replace(existing, changed_lines=lines)
            else:
                context.files.append(applied)
                context.changed_paths.append(applied.path)
        context.files += code.files
        context.diff += code.diff
        context.warnings += code.warnings
        if note := budget.warning():
            context.warnings.append(note)
        if len(context.diff) > self.limits.max_total_bytes:
            context.diff = context.diff[: self.limits.max_total_bytes]
            context.warnings.append("the diff is larger than max_total_bytes; judges see its beginning")
        return context

    async def _diff(self, context: AuditContext, budget: _Budget) -> None:
        repo, root, timeout = context.repo, self.workspace.root, self.limits.git_timeout_seconds
        if repo is None:
            context.warnings.append('scope "diff": the workspace is not a git repository; only code in the thought')
            return
        base = repo.head or await git.empty_tree(root, timeout)
        flags = ("--relative", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "-U3")
        result = await git.git("diff", *flags, base, "--", cwd=root, time_limit=timeout)
        if result.returncode != 0:
            context.warnings.append(f"git diff failed: {result.stderr}")
            return
        text = result.stdout.decode("utf-8", errors="replace")
        listed = await git.git("ls-files", "--others", "--exclude-standard", "-z", cwd=root, time_limit=timeout)
        untracked = [p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
        patches = diffs.parse(text)
        parts = [text]

        def load() -> None:
            for patch in patches:
                if patch.new_path is None or patch.binary:
                    continue
                if self._inside(patch.new_path):  # a refused path is not reviewed, nor cited as changed
                    context.changed_paths.append(patch.new_path)
                self._load(patch.new_path, frozenset(patch.added_lines()), context, budget)
            for path in untracked:
                if self._inside(path):
                    context.changed_paths.append(path)
                loaded = self._load(path, None, context, budget, new_file=True)
                if loaded is not None:
                    parts.append(diffs.new_file_diff(path, loaded.content))

        await anyio.to_thread.run_sync(load)
        context.diff = "".join(parts)

    def _inside(self, path: str) -> bool:
        try:
            self.workspace.confine(path)
        except PathRefused:
            return False
        return True

    def _load(
        self,
        path: str,
        changed: frozenset[int] | None,
        context: AuditContext,
        budget: _Budget,
        *,
        new_file: bool = False,
    ) -> ReviewFile | None:
        try:
            text = self.workspace.read(path)
        except PathRefused as refused:
            context.warnings.append(str(refused))
            return None
        except OSError as error:
            context.warnings.append(f"{path}: cannot be read ({error.strerror})")
            return None
        if text is None or not budget.admit(path, len(text.text)):
            return None
        if new_file:
            changed = frozenset(range(1, len(source_lines(text.text)) + 1))
        file = ReviewFile(path=path, content=text.text, changed_lines=changed, truncated=text.truncated)
        context.files.append(file)
        return file

    def _paths(self, paths: tuple[str, ...], context: AuditContext, budget: _Budget) -> None:
        for requested in paths:
            try:
                target = self.workspace.confine(requested)
            except PathRefused as refused:
                context.warnings.append(f"paths: {refused}")
                continue
            if not target.exists():
                context.warnings.append(f"paths: {requested}: no such file or directory")
                continue
            for path in self.workspace.walk(requested, limit=self.limits.max_files * 4):
                self._load(path, None, context, budget)

    async def _overview(self, context: AuditContext, budget: _Budget) -> None:
        root, timeout = self.workspace.root, self.limits.git_timeout_seconds
        if context.repo is not None:
            listed = await git.git(
                "ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=root, time_limit=timeout
            )
            names = sorted({p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p})
        else:
            names = await anyio.to_thread.run_sync(self.workspace.walk, "", self.limits.max_tree_entries * 20)

        def build() -> None:
            present = [name for name in names if (self.workspace.root / name).is_file()]
            shown = present[: self.limits.max_tree_entries]
            lines = [f"{len(present)} file(s):", *shown]
            if len(present) > len(shown):
                lines.append(f"... and {len(present) - len(shown)} more")
            for key in KEY_FILES:
                if key not in present:
                    continue
                try:
                    text = self.workspace.read(key)
                except PathRefused as refused:  # a link out of the workspace (a monorepo's shared README)
                    context.warnings.append(f"overview: {refused}")
                    continue
                if text is not None:
                    lines += ["", f"== {key} ==", text.text[:2000]]
            context.overview = "\n".join(lines)
            for name in present:
                if PurePosixPath(name).suffix.lower() in SOURCE_SUFFIXES:
                    self._load(name, None, context, budget)

        await anyio.to_thread.run_sync(build)
