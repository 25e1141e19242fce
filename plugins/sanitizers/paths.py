"""Absolute file paths: which part names a deployment (replaced) and which names a library (kept).

A path under an operating-system root (``/usr/lib``, ``/etc``, ``/proc``, ``C:\\Windows``) is the same on
every machine and stays whole. Any other absolute path (``/srv/app``, ``/home/alice``, ``C:\\Users\\bob``,
``~/work``) carries a user, project or deployment name. Of it, :func:`redacted_span` keeps what identifies a
library, from its package root on (``site-packages/langchain/tools.py``, ``node_modules/express/…``,
``lib/python3.11/asyncio/…``, ``.m2/repository/…``, ``pkg/mod/github.com/…``), or else the file name
(``agent.py``), and gives the rest to be replaced: ``/srv/app/agent.py`` reads ``<PATH_1>/agent.py`` and
``/srv/app/.venv/lib/python3.11/site-packages/langchain/tools.py`` reads
``<PATH_2>/lib/python3.11/site-packages/langchain/tools.py``. Search keeps what it matches on (GIM's error
signatures keep the library-relative part and the file name of each path, and drop the rest anyway).

Every step is a scan of the path's segments: linear in the path's length.
"""

from __future__ import annotations

import re

from gateway_plugins.sanitizers.heuristics import GENERIC_ACCOUNTS

__all__ = ["redacted_span"]

_SEGMENT = re.compile(r"[^\\/]+")
_DRIVE = re.compile(r"[A-Za-z]:\Z")
_PYTHON_DIR = re.compile(r"python\d+(?:\.\d+)?\Z", re.IGNORECASE)
_EXTENSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_~-")

_SYSTEM_ROOTS: tuple[tuple[str, ...], ...] = tuple(
    tuple(root.lower().split("/"))
    for root in (
        *"""usr/lib usr/lib32 usr/lib64 usr/libexec usr/include usr/bin usr/sbin usr/share usr/local/lib
        usr/local/lib64 usr/local/include usr/local/bin usr/local/sbin usr/local/share usr/local/Cellar
        usr/local/opt usr/local/go usr/local/cuda usr/local/bundle usr/local/cargo usr/local/rustup go/pkg/mod
        bin sbin lib lib32 lib64 libx32 etc dev proc sys run boot
        var/run var/log var/lib var/cache opt/homebrew opt/conda opt/hostedtoolcache opt/python System Library
        nix/store snap rustc _ Windows ProgramData hostedtoolcache""".split(),
        "Program Files",
        "Program Files (x86)",
    )
)
"""Operating-system and toolchain roots: the same paths on every machine of a kind (``/_/`` is where
deterministic .NET builds put their sources, ``/rustc/<sha>/`` Rust's standard library)."""
_SYSTEM_BY_FIRST: dict[str, tuple[tuple[str, ...], ...]] = {
    first: tuple(root for root in _SYSTEM_ROOTS if root[0] == first) for first in {root[0] for root in _SYSTEM_ROOTS}
}
_NOT_SYSTEM: tuple[tuple[str, ...], ...] = (("var", "lib", "jenkins"), ("usr", "share", "nginx"))
"""Under a system root, yet holding projects."""
_HOME_ROOTS = frozenset({"home", "users"})
_LONGEST_PATH = 4096
"""PATH_MAX on Linux; Windows allows 32,767 UTF-16 units but no tool prints such paths."""
_FS_ROOTS = frozenset(
    """home users srv opt var usr app apps workspace workspaces data mnt media tmp private root builds build code
    src project projects github runner runners volumes repo repos work export net scratch shared deploy
    deployments service services www web site sites jenkins azp agent storage backup backups u nfs cloud
    content drone bitbucket gitlab source sources dev ~""".split()
)
"""First segments of absolute paths that name a place on a disk rather than a URL route (``/api/v1``)."""
_PACKAGE_DIRS = frozenset(
    """site-packages dist-packages node_modules bower_components jspm_packages vendor gems .m2 .gradle .cargo
    .rustup .nuget .pub-cache .cache .npm .yarn .pnpm-store .ivy2 .sbt .conda .pyenv .nvm .rbenv .sdkman
    .gem .local .config hostedtoolcache""".split()
)
"""Directories from which on a path names a package manager's store, then the package."""
_SOURCE_EXTENSIONS = frozenset(
    """py pyc pyx pyi js mjs cjs ts tsx jsx go rs java kt kts scala clj rb php c cc cpp cxx h hpp cs fs swift m mm
    dart lua pl pm r jl ex exs erl hs ml sh bash zsh ps1 json yaml yml toml ini cfg conf env lock txt log md csv
    xml html css scss vue svelte sql proto gradle properties jar war so dylib dll exe whl egg ipynb""".split()
)


def _segments(path: str) -> list[re.Match[str]]:
    return list(_SEGMENT.finditer(path))


def _is_system(names: list[str]) -> bool:
    lowered = tuple(name.lower() for name in names[:3])
    if any(lowered[: len(excluded)] == excluded for excluded in _NOT_SYSTEM):
        return False
    if any(lowered[: len(root)] == root for root in _SYSTEM_BY_FIRST.get(lowered[0], ())):
        return True
    return _PYTHON_DIR.match(lowered[0]) is not None  # C:\Python311


def _package_root(names: list[str]) -> int:
    """Index of the first segment from which the path names a library, -1 when none does."""
    for index, name in enumerate(names):
        lowered = name.lower()
        if lowered in _PACKAGE_DIRS:
            return index
        following = names[index + 1].lower() if index + 1 < len(names) else ""
        if lowered in ("lib", "lib64") and (_PYTHON_DIR.match(following) or following == "ruby"):
            return index
        if lowered == "lib" and index > 0 and _PYTHON_DIR.match(names[index - 1]):
            return index  # C:\Python311\Lib\asyncio
        if lowered == "pkg" and following == "mod":
            return index
    return -1


def _is_file_name(name: str) -> bool:
    """``agent.py``, ``index.d.ts``, ``.env``: a name with an extension (not a version such as ``3.11``)."""
    stem, dot, extension = name.rpartition(".")
    if not dot or not 1 <= len(extension) <= 12 or not _EXTENSION_CHARS.issuperset(extension):
        return False
    return not stem or not stem.replace(".", "").isdigit()


def redacted_span(path: str) -> tuple[int, int] | None:
    """The part of the absolute ``path`` (``/…``, ``~/…``, ``C:\\…``) to replace, as offsets into it; None
    when nothing is to be replaced (a system path, a URL route, a bare ``/name``)."""
    if len(path) > _LONGEST_PATH:
        return (0, len(path))  # longer than any file system allows: not a path to read, and not to keep
    segments = _segments(path)
    if not segments:
        return None
    first = segments[0].group(0)
    drive = _DRIVE.match(first) is not None
    rooted = segments[1:] if drive else segments
    names = [s.group(0) for s in rooted]
    if not names or _is_system(names):
        return None
    if not drive and first != "~" and not _looks_on_disk(names):
        return None
    package = _package_root(names)
    if package == 0:
        return None
    if package > 0:
        end = rooted[package].start()
    elif len(rooted) >= 2 and _is_file_name(names[-1]):
        end = rooted[-1].start()
    elif len(rooted) >= 2:
        end = len(path)
    else:
        return None
    while end > 0 and path[end - 1] in "\\/":
        end -= 1
    if _names_no_one([name.lower() for name in _SEGMENT.findall(path[:end]) if not _DRIVE.match(name)]):
        return None
    return (0, end)


def _names_no_one(head: list[str]) -> bool:
    """``~``, ``/root``, ``/home``, ``/home/ubuntu``, ``C:\\Users\\runner``: a home that every machine of a
    kind has (CI runners, images), so nothing specific lies before the kept part."""
    if head in (["~"], ["root"]) or (len(head) == 1 and head[0] in _HOME_ROOTS):
        return True
    return len(head) == 2 and head[0] in _HOME_ROOTS and head[1] in GENERIC_ACCOUNTS


def _looks_on_disk(names: list[str]) -> bool:
    """A POSIX absolute path rather than a URL route: it starts at a known disk root, holds a package
    directory, or ends with a source or data file three segments deep or more."""
    if names[0].lower() in _FS_ROOTS or _package_root(names) >= 0:
        return True
    if len(names) < 3:
        return False
    extension = names[-1].rsplit(".", 1)[-1].lower() if "." in names[-1] else ""
    return extension in _SOURCE_EXTENSIONS
