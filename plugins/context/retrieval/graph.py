"""The import graph between indexed files: what a file imports and what imports it (the active file's neighbours).

Import specifiers are stored as written (``.sansio.app``, ``./router``, ``flask.globals``, ``net/http``) and
resolved here against the indexed paths of the same connector: relative ones against the importer's directory,
absolute ones by path suffix. Unresolvable specifiers (third-party modules) are ignored.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict

from gateway_plugins.context.retrieval.search_index import SearchIndex

__all__ = ["ImportGraph"]

_CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".java", ".rs")


def _module_keys(path: str) -> list[str]:
    """Keys a file answers to: its path without extension, and its directory for package files."""
    stem, ext = posixpath.splitext(path)
    if ext not in _CODE_SUFFIXES:
        return []
    keys = [stem]
    base = posixpath.basename(stem)
    if base in ("__init__", "index", "mod", "lib"):
        keys.append(posixpath.dirname(stem))
    return keys


class ImportGraph:
    """Resolved import edges between the live files of a :class:`SearchIndex` (rebuilt when it changes)."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self._version = -1
        self._imports: dict[int, set[int]] = {}
        self._importers: dict[int, set[int]] = defaultdict(set)

    def _rebuild(self) -> None:
        by_key: dict[tuple[str, str], int] = {}
        by_suffix: dict[tuple[str, str], list[int]] = defaultdict(list)
        files = self.index.files
        for row, entry in enumerate(files):
            if not entry.alive:
                continue
            for key in _module_keys(entry.path):
                by_key[(entry.connector_id, key)] = row
                parts = key.split("/")
                for i in range(len(parts)):
                    by_suffix[(entry.connector_id, "/".join(parts[i:]))].append(row)
        self._imports = {}
        self._importers = defaultdict(set)
        for row, entry in enumerate(files):
            if not entry.alive or not entry.imports:
                continue
            targets: set[int] = set()
            for spec in entry.imports:
                for target in self._resolve(entry.connector_id, entry.path, entry.language, spec, by_key, by_suffix):
                    if target != row:
                        targets.add(target)
            self._imports[row] = targets
            for target in targets:
                self._importers[target].add(row)
        self._version = self.index.version

    @staticmethod
    def _resolve(
        connector: str,
        path: str,
        language: str,
        spec: str,
        by_key: dict[tuple[str, str], int],
        by_suffix: dict[tuple[str, str], list[int]],
    ) -> list[int]:
        here = posixpath.dirname(path)
        if language == "python" and spec.startswith("."):
            dots = len(spec) - len(spec.lstrip("."))
            base = here
            for _ in range(dots - 1):
                base = posixpath.dirname(base)
            rest = spec[dots:].replace(".", "/")
            key = posixpath.normpath(posixpath.join(base, rest)) if rest else base
            row = by_key.get((connector, key))
            return [row] if row is not None else []
        if spec.startswith(("./", "../")):
            row = by_key.get((connector, posixpath.normpath(posixpath.join(here, spec))))
            if row is None:
                row = by_key.get((connector, posixpath.splitext(posixpath.normpath(posixpath.join(here, spec)))[0]))
            return [row] if row is not None else []
        if language == "rust":
            spec = spec.replace("crate::", "").replace("self::", posixpath.basename(here) + "::").replace("::", "/")
        elif language in ("python", "java"):
            spec = spec.replace(".", "/")
        rows = by_suffix.get((connector, spec.strip("/")), [])
        return rows if len(rows) <= 3 else []  # ambiguous names (a common module name) say nothing

    def neighbours(self, file_row: int) -> tuple[set[int], set[int]]:
        """(files ``file_row`` imports, files that import it)."""
        if self._version != self.index.version:
            self._rebuild()
        return self._imports.get(file_row, set()), self._importers.get(file_row, set())
