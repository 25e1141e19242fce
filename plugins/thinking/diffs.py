"""Unified diffs: parsing (git and traditional headers, quoted paths), changed lines, writing, and the path
checks a patch must pass before it may touch the workspace. Diffs between two versions of a file come from git
(:func:`gateway_plugins.thinking.git.diff`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath

from gateway.api import source_lines

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"^diff --git (?P<rest>.+)$")
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_EXTENDED = frozenset({"new", "deleted", "old", "index", "rename", "copy", "similarity", "dissimilarity"})
_RISKY_HEADERS = ("rename from", "rename to", "copy from", "copy to", "old mode", "new mode", "deleted file mode")


@dataclass
class Hunk:
    old_start: int
    old_length: int
    new_start: int
    new_length: int
    lines: list[str] = field(default_factory=list)
    """Body lines with their ``' '``/``'-'``/``'+'``/``'\\'`` prefix, without line endings."""


@dataclass
class FilePatch:
    old_path: str | None
    """Without the ``a/`` prefix; ``None`` for ``/dev/null`` (a new file)."""
    new_path: str | None
    """Without the ``b/`` prefix; ``None`` for ``/dev/null`` (a deleted file)."""
    hunks: list[Hunk] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    """Extended git header lines (``new file mode 100644``, ``rename from x``...)."""
    binary: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    def added_lines(self) -> set[int]:
        """New-file line numbers of the ``+`` lines."""
        added: set[int] = set()
        for hunk in self.hunks:
            line = hunk.new_start
            for text in hunk.lines:
                if text.startswith("+"):
                    added.add(line)
                    line += 1
                elif text.startswith(" "):
                    line += 1
        return added

    def new_side(self) -> dict[int, str]:
        """The new-file lines the hunks show (context and added), by line number."""
        shown: dict[int, str] = {}
        for hunk in self.hunks:
            line = hunk.new_start
            for text in hunk.lines:
                if text.startswith(("+", " ")):
                    shown[line] = text[1:]
                    line += 1
        return shown


def unquote(path: str) -> str:
    """Undo git's C-quoting of a path (``"a/caf\\303\\251"`` → ``a/café``)."""
    if not (len(path) >= 2 and path.startswith('"') and path.endswith('"')):
        return path
    raw = bytearray()
    body = path[1:-1]
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            nxt = body[index + 1]
            if nxt in "01234567" and re.match(r"[0-7]{3}", body[index + 1 : index + 4]):
                raw.append(int(body[index + 1 : index + 4], 8))
                index += 4
                continue
            raw += _ESCAPES.get(nxt, nxt).encode()
            index += 2
            continue
        raw += char.encode()
        index += 1
    return raw.decode("utf-8", errors="surrogateescape")


def _header_path(value: str, prefix: str) -> str | None:
    value = value.split("\t", 1)[0].rstrip() if not value.startswith('"') else value.rstrip()
    value = unquote(value)
    if value == "/dev/null":
        return None
    return value[len(prefix) :] if value.startswith(prefix) else value


def _git_header_paths(rest: str) -> tuple[str | None, str | None]:
    if rest.startswith('"'):
        end = rest.index('"', 1) + 1 if '"' in rest[1:] else len(rest)
        return _header_path(rest[:end], "a/"), _header_path(rest[end:].strip(), "b/")
    half = (len(rest) - 1) // 2
    if rest[half] == " " and rest[:half].removeprefix("a/") == rest[half + 1 :].removeprefix("b/"):
        return _header_path(rest[:half], "a/"), _header_path(rest[half + 1 :], "b/")
    parts = rest.split(" b/", 1)
    return (_header_path(parts[0], "a/"), _header_path("b/" + parts[1], "b/")) if len(parts) == 2 else (None, None)


def parse(text: str) -> list[FilePatch]:
    """Every file patch in ``text``. Lines that belong to no patch (prose around a diff) are skipped."""
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    lines = text.split("\n")  # as git reads a patch: str.splitlines() also breaks at \f, \x1c, \u2028...
    if lines and not lines[-1]:
        lines.pop()
    index = 0
    while index < len(lines):
        line = lines[index]
        git = _GIT_HEADER.match(line)
        if git:
            old, new = _git_header_paths(git.group("rest"))
            current = FilePatch(old, new)
            patches.append(current)
        elif line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            old, new = _header_path(line[4:], "a/"), _header_path(lines[index + 1][4:], "b/")
            if current is None or current.hunks or (current.headers and current.headers[-1] == "---"):
                current = FilePatch(old, new)
                patches.append(current)
            else:
                current.old_path, current.new_path = old, new
            current.headers.append("---")
            index += 1
        elif (hunk := _HUNK.match(line)) and current is not None:
            index = _read_hunk(lines, index, hunk, current)
            continue
        elif current is not None and not current.hunks and line.startswith(("Binary files", "GIT binary patch")):
            current.binary = True
        elif current is not None and not current.hunks and line.split(" ", 1)[0] in _EXTENDED:
            current.headers.append(line)
        index += 1
    return patches


def _read_hunk(lines: list[str], index: int, match: re.Match[str], patch: FilePatch) -> int:
    old_len = int(match.group(2)) if match.group(2) is not None else 1
    new_len = int(match.group(4)) if match.group(4) is not None else 1
    hunk = Hunk(int(match.group(1)), old_len, int(match.group(3)), new_len)
    patch.hunks.append(hunk)
    old_left, new_left = old_len, new_len
    index += 1
    while index < len(lines) and (old_left > 0 or new_left > 0 or lines[index].startswith("\\")):
        text = lines[index]
        if text.startswith("\\"):
            hunk.lines.append(text)
        elif text.startswith("+"):
            new_left -= 1
            hunk.lines.append(text)
        elif text.startswith("-"):
            old_left -= 1
            hunk.lines.append(text)
        elif text.startswith(" ") or text == "":
            old_left -= 1
            new_left -= 1
            hunk.lines.append(" " + text[1:])
        else:
            break
        index += 1
    return index


def touched_paths(patches: list[FilePatch]) -> list[str]:
    """Every path a patch reads or writes (old and new names)."""
    return sorted({path for patch in patches for path in (patch.old_path, patch.new_path) if path})


def path_problem(path: str) -> str | None:
    """Why ``path`` may not appear in a patch for the workspace, or ``None`` when it is a plain relative path."""
    if not path or "\x00" in path:
        return "empty path"
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute() or PureWindowsPath(path).drive:
        return f"{path}: absolute path"
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if ".." in parts:
        return f"{path}: leaves the workspace (..)"
    if ".git" in parts:
        return f"{path}: inside .git"
    return None


def patch_problems(patches: list[FilePatch]) -> list[str]:
    """Reasons to refuse a patch outright: unsafe paths, binary content, renames, copies or mode changes."""
    problems = [problem for path in touched_paths(patches) if (problem := path_problem(path))]
    for patch in patches:
        if patch.binary:
            problems.append(f"{patch.path}: binary patch")
        risky = [header for header in patch.headers if header.startswith(_RISKY_HEADERS)]
        if risky:
            problems.append(f"{patch.path}: {risky[0]} is not allowed")
        if any(header.endswith(" 120000") for header in patch.headers):
            problems.append(f"{patch.path}: a symbolic link is not allowed")
    if not patches:
        problems.append("no file patch found")
    return problems


def new_file_diff(path: str, content: str) -> str:
    """The diff that creates ``path`` with ``content`` (how untracked files enter the reviewed diff)."""
    lines = source_lines(content, keepends=True)
    if not lines:
        return f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
    body = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
    header = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return header + f"@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + line for line in body)


def carry_lines(patch: FilePatch | None, lines: frozenset[int] | None) -> frozenset[int] | None:
    """Carry a set of lines of a file over to its new version, through ``patch`` (the diff between the two, or
    ``None`` when they are equal): lines it deletes go, lines it adds join. ``None`` (every line) stays ``None``.

    Linear in the patch and the set (a sequence matcher, which would find the same alignment, is cubic on a
    file of repeated lines: 30 s for 2,000 lines).
    """
    if lines is None or patch is None:
        return lines
    carried: set[int] = set()
    wanted = sorted(lines)
    index = 0  # into ``wanted``
    old_line = new_line = 1  # the first line after the previous hunk, in each version
    for hunk in patch.hunks:
        start = hunk.old_start if hunk.old_length else hunk.old_start + 1
        shift = (hunk.new_start if hunk.new_length else hunk.new_start + 1) - start
        while index < len(wanted) and wanted[index] < start:  # unchanged lines before the hunk
            carried.add(wanted[index] + shift)
            index += 1
        old_line, new_line = start, start + shift
        for text in hunk.lines:
            if text.startswith(" "):
                if index < len(wanted) and wanted[index] == old_line:
                    carried.add(new_line)
                    index += 1
                old_line, new_line = old_line + 1, new_line + 1
            elif text.startswith("-"):
                if index < len(wanted) and wanted[index] == old_line:
                    index += 1
                old_line += 1
            elif text.startswith("+"):
                carried.add(new_line)
                new_line += 1
    carried.update(line + new_line - old_line for line in wanted[index:])
    return frozenset(carried)
