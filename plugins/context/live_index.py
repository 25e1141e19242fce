"""The search index kept current with the store: loaded at start-up, fed with this process's writes as they happen,
and caught up with other processes' changes through the change sequence (at most every ``refresh`` seconds)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gateway.api import RelationalStore
from gateway_plugins.context.repository import Repository
from gateway_plugins.context.retrieval.search_index import ChunkEntry, FileEntry, SearchIndex

__all__ = ["LiveIndex"]

_BATCH = 2000


def _entries(file_row: dict[str, Any], chunk_rows: Sequence[dict[str, Any]]) -> tuple[FileEntry, list]:
    modified = file_row["last_modified"]
    if isinstance(modified, str):
        modified = datetime.fromisoformat(modified)
    entry = FileEntry(
        file_id=file_row["id"],
        connector_id=file_row["connector_id"],
        path=file_row["path"],
        language=file_row["language"],
        last_modified=modified.timestamp(),
        imports=tuple(i for i in (file_row.get("imports") or "").split("\n") if i),
        source_type=file_row.get("source_type") or "file",
    )
    chunks = []
    for row in chunk_rows:
        strings = row.get("strings") or []
        chunk = ChunkEntry(row["id"], 0, row["kind"], row["symbol"], row["start_line"], row["end_line"], tuple(strings))
        tokens = row["tokens"].split() if isinstance(row["tokens"], str) else list(row["tokens"])
        chunks.append((chunk, tokens))
    return entry, chunks


class LiveIndex:
    def __init__(self, store: RelationalStore, repo: Repository, *, refresh_seconds: float = 1.0) -> None:
        self.store = store
        self.repo = repo
        self.index = SearchIndex()
        self.refresh_seconds = refresh_seconds
        self.last_seq = 0
        self._caught_up_at = float("-inf")
        self._gone: set[str] = set()
        """File versions removed by this process: a catch-up that read them just before must not bring them back."""

    def written(self, file_row: dict[str, Any], chunk_rows: Sequence[dict[str, Any]]) -> None:
        """A file version this process just wrote."""
        entry, chunks = _entries(file_row, chunk_rows)
        self.index.add_file(entry, chunks)

    def removed(self, file_id: str) -> None:
        self.index.remove_file(file_id)
        self._gone.add(file_id)

    async def catch_up(self, *, max_age: float | None = None) -> None:
        """Apply the changes committed since the last call (removals first: the files table holds only live
        versions). ``max_age``: skip when the last catch-up is younger than that."""
        now = time.monotonic()
        if max_age is not None and now - self._caught_up_at < max_age:
            return
        self._caught_up_at = now
        target = await self.repo.current_seq(self.store)
        if target <= self.last_seq:
            return
        for removal in await self.repo.removals_after(self.store, self.last_seq):
            if removal["seq"] <= target:
                self.index.remove_file(removal["file_id"])
        seq = self.last_seq
        while True:
            files = [f for f in await self.repo.files_after(self.store, seq, _BATCH) if f["seq"] <= target]
            fresh = [f for f in files if f["id"] not in self.index.file_by_id]
            if fresh:
                chunks = await self.repo.chunks_of_files(self.store, [f["id"] for f in fresh])
                by_file: dict[str, list[dict[str, Any]]] = {}
                for chunk in chunks:
                    by_file.setdefault(chunk["file_id"], []).append(chunk)
                for file_row in fresh:
                    if file_row["id"] in self._gone or file_row["id"] in self.index.file_by_id:
                        continue  # removed, or written by this process, while the chunks were read
                    entry, entries = _entries(file_row, by_file.get(file_row["id"], []))
                    self.index.add_file(entry, entries)
            if len(files) < _BATCH:
                break
            seq = int(files[-1]["seq"])
        self.last_seq = target
        self._gone.clear()  # removals up to ``target`` are in the store now: the next catch-up sees none of them
