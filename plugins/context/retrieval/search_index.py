"""The in-memory search index of the pack: chunk rows, their lexical fields, and per-file facts.

Rebuilt at start-up from the relational store (the store is the truth; this is derived), then kept current as files
are indexed or removed, by this process or, through the chunk sequence, by another. Rows are append-only: a new
version of a file gets new rows and its old rows become tombstones, so the arrays never shift under a search.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath

import numpy as np

from gateway_plugins.context import paths
from gateway_plugins.context.retrieval.lexical import BM25Field
from gateway_plugins.context.tokens import identifier_parts, stem, tokenize

__all__ = ["KIND_CLASS", "KIND_MODULE", "ChunkEntry", "FileEntry", "SearchIndex"]

KIND_OTHER, KIND_CLASS, KIND_MODULE = 0, 1, 2
_KIND_CODES = {"class": KIND_CLASS, "module": KIND_MODULE}


@dataclass(frozen=True, slots=True)
class ChunkEntry:
    """What a search needs of one chunk, besides its text (fetched from the store for the results only)."""

    id: str
    file_row: int
    kind: str
    symbol: str | None
    start_line: int
    end_line: int
    strings: tuple[str, ...] = ()


@dataclass
class FileEntry:
    file_id: str
    connector_id: str
    path: str
    language: str
    last_modified: float
    imports: tuple[str, ...]
    source_type: str = "file"
    rows: list[int] = field(default_factory=list)
    alive: bool = True

    @property
    def last_modified_at(self) -> datetime:
        return datetime.fromtimestamp(self.last_modified, UTC)

    is_test: bool = field(init=False)
    is_example: bool = field(init=False)
    is_doc: bool = field(init=False)

    def __post_init__(self) -> None:
        hosted = self.source_type != "file"  # an issue or a thread is the content itself, not a repository's prose
        self.is_test = not hosted and paths.is_test(self.path)
        self.is_example = not hosted and paths.is_example(self.path)
        self.is_doc = not hosted and paths.is_doc(self.path)


def symbol_tokens(symbol: str | None) -> list[str]:
    """Tokens of a qualified name's last component (``Client._send_handling_redirects`` -> send, handl,
    redirect, and the whole name), the part that says what the definition does."""
    if not symbol:
        return []
    last = re.split(r"[.:#\[\]]+", symbol.strip("[]"))
    last = [part for part in last if part and part not in ("prototype", "exports", "method")]
    if not last:
        return []
    return tokenize(last[-1])


def path_tokens(path: str) -> list[str]:
    """Tokens of a path's file stem and its directory names (extension and ``src`` left out)."""
    pure = PurePosixPath(path)
    parts = [pure.stem, *pure.parent.parts[-2:]]
    out: list[str] = []
    for part in parts:
        if part in ("src", "lib", ".", ""):
            continue
        out.extend(tokenize(part))
    return out


class SearchIndex:
    """Chunks and files of every connector of one deployment, with three BM25 fields."""

    def __init__(self) -> None:
        self.chunks: list[ChunkEntry] = []
        self._alive = np.zeros(0, dtype=bool)
        self._file_of = np.zeros(0, dtype=np.int32)
        self._kinds = np.zeros(0, dtype=np.int8)
        self.files: list[FileEntry] = []
        self.file_by_id: dict[str, int] = {}
        self.file_by_path: dict[tuple[str, str], int] = {}
        self.row_by_chunk: dict[str, int] = {}
        self.content = BM25Field(b=0.5)
        """Chunk content. Length normalisation is milder than prose's usual 0.75: a function chunk runs from two lines
        to hundreds, and the long ones are a code base's central routines (a parser's main loop, a command's
        argument handling), not verbose documents repeating a word."""
        self.names = BM25Field(b=0.3)
        self.paths = BM25Field(b=0.3)
        self.symbols: dict[str, list[int]] = {}
        """Exact qualified name -> rows; also the last component with a ``~`` prefix (case kept: identifiers are
        case-sensitive, and ``user.name`` in a question is not the class ``Name``)."""
        self.version = 0
        self._file_arrays: dict[str, np.ndarray] = {}
        self._file_arrays_version = -1
        self._masks: dict[frozenset[str], np.ndarray] = {}

    def __len__(self) -> int:
        return int(self.alive.sum())

    @property
    def size(self) -> int:
        return len(self.chunks)

    @property
    def alive(self) -> np.ndarray:
        return self._alive[: self.size]

    @property
    def file_of(self) -> np.ndarray:
        return self._file_of[: self.size]

    @property
    def kind_codes(self) -> np.ndarray:
        return self._kinds[: self.size]

    def _grow(self, extra: int) -> None:
        """Room for ``extra`` more rows (capacity doubles: loading 100k chunks file by file stays linear)."""
        needed = self.size + extra
        if needed <= len(self._alive):
            return
        capacity = max(needed, 2 * len(self._alive), 1024)
        for name in ("_alive", "_file_of", "_kinds"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def add_file(self, entry: FileEntry, chunks: Sequence[tuple[ChunkEntry, Sequence[str]]]) -> None:
        """Index one file with its chunks and their content tokens (a file already present is replaced)."""
        if entry.file_id in self.file_by_id:
            self.remove_file(entry.file_id)
        file_row = len(self.files)
        self.files.append(entry)
        self.file_by_id[entry.file_id] = file_row
        self.file_by_path[(entry.connector_id, entry.path)] = file_row
        self.paths.add(file_row, path_tokens(entry.path))
        start = len(self.chunks)
        self._grow(len(chunks))
        for offset, (chunk, tokens) in enumerate(chunks):
            row = start + offset
            chunk = ChunkEntry(
                chunk.id, file_row, chunk.kind, chunk.symbol, chunk.start_line, chunk.end_line, chunk.strings
            )
            self.chunks.append(chunk)
            self.row_by_chunk[chunk.id] = row
            self._alive[row] = True
            self._file_of[row] = file_row
            self._kinds[row] = _KIND_CODES.get(chunk.kind, KIND_OTHER)
            entry.rows.append(row)
            self.content.add(row, tokens)
            names = symbol_tokens(chunk.symbol)
            self.names.add(row, names)
            if chunk.symbol:
                self.symbols.setdefault(chunk.symbol, []).append(row)
                last = re.split(r"[.:#]+", chunk.symbol)[-1]
                self.symbols.setdefault("~" + last, []).append(row)
        self.version += 1

    def remove_file(self, file_id: str) -> None:
        file_row = self.file_by_id.pop(file_id, None)
        if file_row is None:
            return
        entry = self.files[file_row]
        entry.alive = False
        if self.file_by_path.get((entry.connector_id, entry.path)) == file_row:
            del self.file_by_path[(entry.connector_id, entry.path)]
        self.paths.remove(file_row)
        for row in entry.rows:
            self._alive[row] = False
            self.content.remove(row)
            self.names.remove(row)
            self.row_by_chunk.pop(self.chunks[row].id, None)
        self.version += 1

    def remove_connector(self, connector_id: str) -> None:
        for file_id in [f.file_id for f in self.files if f.alive and f.connector_id == connector_id]:
            self.remove_file(file_id)

    def rows_with_symbol(self, name: str) -> list[int]:
        """Live rows defining ``name`` (exact qualified name, or its last component when no exact match)."""
        rows = self.symbols.get(name) or self.symbols.get("~" + re.split(r"[.:#]+", name)[-1], [])
        return [row for row in rows if self.alive[row]]

    def file_arrays(self) -> dict[str, np.ndarray]:
        """Per-file arrays (alive, test, example, doc, last_modified), rebuilt when the index changed."""
        if self._file_arrays_version != self.version:
            files = self.files
            self._file_arrays = {
                "alive": np.array([f.alive for f in files], dtype=bool),
                "test": np.array([f.is_test for f in files], dtype=bool),
                "example": np.array([f.is_example for f in files], dtype=bool),
                "doc": np.array([f.is_doc for f in files], dtype=bool),
                "modified": np.array([f.last_modified for f in files], dtype=np.float64),
            }
            self._masks = {}
            self._file_arrays_version = self.version
        return self._file_arrays

    def row_mask(
        self,
        connector_ids: Iterable[str],
        *,
        source_types: Iterable[str] | None = None,
        modified_from: float | None = None,
        modified_to: float | None = None,
    ) -> np.ndarray:
        """Rows whose file belongs to one of ``connector_ids`` and passes the filters (the unfiltered mask of a
        connector set is kept until the index changes: most searches ask for it)."""
        arrays = self.file_arrays()
        wanted = frozenset(connector_ids)
        types = set(source_types) if source_types is not None else None
        plain = types is None and modified_from is None and modified_to is None
        if plain and wanted in self._masks:
            return self._masks[wanted]
        keep = np.array(
            [f.alive and f.connector_id in wanted and (types is None or f.source_type in types) for f in self.files],
            dtype=bool,
        )
        if modified_from is not None:
            keep &= arrays["modified"] >= modified_from
        if modified_to is not None:
            keep &= arrays["modified"] <= modified_to
        mask = keep[self.file_of] & self.alive if len(keep) else np.zeros(self.size, dtype=bool)
        if plain:
            self._masks[wanted] = mask
        return mask

    def live_files(self, connector_ids: Iterable[str] | None = None) -> list[FileEntry]:
        wanted = set(connector_ids) if connector_ids is not None else None
        return [f for f in self.files if f.alive and (wanted is None or f.connector_id in wanted)]


def stemmed_parts(identifier: str) -> list[str]:
    return [stem(part) for part in identifier_parts(identifier)]
