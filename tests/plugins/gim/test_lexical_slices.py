"""A lexical lookup of thousands of terms hands the event loop back between slices, and is not disturbed by items
indexed meanwhile."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from gateway_plugins.gim import lexical
from gateway_plugins.gim.lexical import LexicalIndex

pytestmark = pytest.mark.anyio


def _index(items: int = 300) -> LexicalIndex:
    index = LexicalIndex()
    for number in range(items):
        index.add(f"i{number}", f"m{number % 50}", [f"t{number % 97}", f"t{number % 13}", "error"], seq=number + 1)
    return index


QUERY = [f"t{number}" for number in range(2000)] + ["error"]
"""Two thousand distinct terms: the shape of a 200 kB query of distinct words."""


@pytest.fixture
def every_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A slice ends at every clock check (every 32 terms), whatever the machine's speed."""
    monkeypatch.setattr(lexical, "SLICE_SECONDS", 0.0)


async def test_other_tasks_run_during_a_long_lookup(every_slice: None) -> None:
    index = _index()
    turns_taken = 0
    done = anyio.Event()

    async def other_request() -> None:
        nonlocal turns_taken
        while not done.is_set():
            turns_taken += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(other_request)
        await anyio.lowlevel.checkpoint()
        hits = await index.search_sliced(QUERY, limit=10)
        during = turns_taken
        done.set()
    assert during > 10, "the other task got turns while the lookup ran"
    assert hits == index.search(QUERY, limit=10)


async def test_items_indexed_during_a_lookup_are_left_out(every_slice: None) -> None:
    index, before = _index(), _index()
    added = 0

    async def submissions() -> None:
        nonlocal added
        while added < 40:  # matching every query term, so their rows reach the postings being read
            index.add(f"new{added}", "new", [f"t{added}", "error"], seq=1000 + added)
            added += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(submissions)  # its first turn comes at the lookup's first slice
        hits = await index.search_sliced(QUERY, limit=20)
    assert added == 40
    assert hits == before.search(QUERY, limit=20), "the lookup saw the index as it was when it began"
    assert any(hit.item_id.startswith("new") for hit in index.search(QUERY, limit=400)), "the next one sees them"
