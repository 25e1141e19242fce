"""Code written in the thought itself: fenced blocks, and diffs (fenced or not) against workspace files.

A fenced block becomes ``thought/block-<n>.<ext>``. A diff is resolved against the workspace: when it applies
to the current file, the patched text is reviewed as ``thought/<path>``; when it is already applied, the file on
disk is reviewed with the diff's lines marked changed; a new file is rebuilt whole; otherwise the hunks alone are
reviewed as a fragment (lines outside them blank, so line numbers stay those of the new file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

import anyio.to_thread

from gateway.api import PROCESS_CHARS, ReviewFile, off_loop, parse_python
from gateway_plugins.thinking import diffs, git
from gateway_plugins.thinking.triggers import fenced_blocks, has_diff_markers, looks_like_code, outside_fences
from gateway_plugins.thinking.workspace import PathRefused, Workspace

_SUFFIX = {
    "py": ".py", "python": ".py", "python3": ".py", "js": ".js", "javascript": ".js", "jsx": ".jsx", "ts": ".ts",
    "typescript": ".ts", "tsx": ".tsx", "go": ".go", "golang": ".go", "rust": ".rs", "rs": ".rs", "java": ".java",
    "kotlin": ".kt", "kt": ".kt", "ruby": ".rb", "rb": ".rb", "php": ".php", "c": ".c", "cpp": ".cpp", "c++": ".cpp",
    "cs": ".cs", "csharp": ".cs", "swift": ".swift", "sh": ".sh", "bash": ".sh", "shell": ".sh", "sql": ".sql",
    "scala": ".scala", "markdown": ".md", "md": ".md", "json": ".json", "yaml": ".yaml", "yml": ".yaml",
    "toml": ".toml",
}  # fmt: skip
_DIFF_LANGUAGES = {"diff", "patch", "udiff"}
_PYTHON_HINT = re.compile(r"^[^\S\n]*(def|class|import|from|async def)\s", re.MULTILINE)
"""A line starting with a Python keyword. The indent may not run on over line ends: from every line start of a
long blank stretch, ``\\s*`` would rescan the rest of it."""


@dataclass
class ThoughtCode:
    files: list[ReviewFile] = field(default_factory=list)
    applied_files: list[ReviewFile] = field(default_factory=list)
    """Workspace files a thought diff is already applied to (merged with the workspace diff by the caller)."""
    diff: str = ""
    warnings: list[str] = field(default_factory=list)


def _guess_suffix(text: str) -> str:
    if _PYTHON_HINT.search(text):
        try:
            parse_python(text)
        except (SyntaxError, ValueError, RecursionError):
            return ".txt"
        return ".py"
    return ".txt"


def render_patch(patch: diffs.FilePatch) -> str:
    """One file patch as text ``git apply`` accepts."""
    old = f"a/{patch.old_path}" if patch.old_path else "/dev/null"
    new = f"b/{patch.new_path}" if patch.new_path else "/dev/null"
    out = [f"--- {old}", f"+++ {new}"]
    for hunk in patch.hunks:
        out.append(f"@@ -{hunk.old_start},{hunk.old_length} +{hunk.new_start},{hunk.new_length} @@")
        out.extend(hunk.lines)
    return "\n".join(out) + "\n"


async def extract(thought: str, workspace: Workspace | None, *, time_limit: float) -> ThoughtCode:
    """The reviewable code of ``thought``."""
    found = ThoughtCode()
    files, patches = await off_loop(partial(_scan, thought), size=len(thought), process_from=PROCESS_CHARS)
    found.files += files
    for patch in patches:
        await _resolve(patch, workspace, found, time_limit)
    return found


def _scan(thought: str) -> tuple[list[ReviewFile], list[diffs.FilePatch]]:
    """The code blocks of ``thought`` as files, and its diffs: passes over the whole thought, and ``ast.parse`` to
    tell Python from text, so it runs in a worker thread when the thought is long, in a worker process when
    ``ast.parse`` could keep the GIL for long."""
    files: list[ReviewFile] = []
    diff_texts: list[str] = []
    number = 0
    for block in fenced_blocks(thought):
        language = block.language
        if language == "gan-config" or not block.body.strip():
            continue
        if language in _DIFF_LANGUAGES or (has_diff_markers(block.body) and diffs.parse(block.body)):
            diff_texts.append(block.body)
            continue
        number += 1
        suffix = _SUFFIX.get(language) or _guess_suffix(block.body)
        files.append(ReviewFile(path=f"thought/block-{number}{suffix}", content=block.body, origin="thought"))
    prose = outside_fences(thought)
    if has_diff_markers(prose):
        diff_texts.append(prose)
    elif not files and not diff_texts and looks_like_code(prose):
        files.append(ReviewFile(path=f"thought/thought{_guess_suffix(prose)}", content=prose, origin="thought"))
    return files, [patch for text in diff_texts for patch in diffs.parse(text)]


async def _resolve(patch: diffs.FilePatch, workspace: Workspace | None, found: ThoughtCode, time_limit: float) -> None:
    problem = next((p for p in map(diffs.path_problem, diffs.touched_paths([patch])) if p), None)
    if problem or patch.new_path is None or patch.binary or not patch.hunks:
        if problem:
            found.warnings.append(f"diff in the thought: {problem}; not reviewed")
        return
    text = render_patch(patch)
    found.diff += text
    added = frozenset(patch.added_lines())
    path = patch.new_path
    current = None
    if workspace is not None and patch.old_path is not None:
        try:
            current = await anyio.to_thread.run_sync(workspace.read, patch.old_path)
        except PathRefused as refused:
            found.warnings.append(f"diff in the thought: {refused}; not reviewed")
            return
    if current is not None and not current.truncated:
        source = {patch.old_path or path: current.text}
        try:
            patched = await git.apply_in_memory(source, text, time_limit=time_limit)
            applied = (
                patch.old_path == path
                and patched is None
                and await git.apply_in_memory(source, text, time_limit=time_limit, reverse=True)
            )
        except git.GitError as error:
            found.warnings.append(f"diff in the thought: {error}; reviewed as a fragment")
            patched, applied = None, None
        if patched is not None and path in patched:
            found.files.append(
                ReviewFile(path=f"thought/{path}", content=patched[path], origin="thought", changed_lines=added)
            )
            return
        if applied:
            found.applied_files.append(ReviewFile(path=path, content=current.text, changed_lines=added))
            return
    if patch.old_path is None:
        content = "".join(line + "\n" for _, line in sorted(patch.new_side().items()))
        found.files.append(ReviewFile(path=f"thought/{path}", content=content, origin="thought", changed_lines=None))
        return
    shown = patch.new_side()
    content = "".join(shown.get(line, "") + "\n" for line in range(1, max(shown, default=0) + 1))
    found.files.append(
        ReviewFile(path=f"thought/{path}", content=content, origin="thought", changed_lines=added, fragment=True)
    )
