"""The embedding is running in its worker thread before the lexical lookup takes the event loop
(:mod:`gateway_plugins.gim.overlap`), for a search's query.

The check is deterministic: the lookup is wrapped to wait, blocking the event loop, until the embedding has begun in
its thread. An embedding dispatched before the lookup gets there without the loop; one that was not cannot start
while the loop is blocked, and the wait times out.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from gateway_plugins.embedders.local import LocalEmbedder
from gateway_plugins.gim.lexical import LexicalIndex
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, submission

pytestmark = pytest.mark.anyio

_PATIENCE_SECONDS = 10.0


class EmbeddingWatch:
    """Wraps the local embedder and the lexical index: each lookup notes whether an embedding had begun."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.begun = threading.Event()
        self.lookups: list[bool] = []
        embed_sync, search = LocalEmbedder.embed_sync, LexicalIndex.search_sliced
        watch = self

        def watched_embed(embedder: LocalEmbedder, texts: Sequence[str], *rest: Any) -> Any:
            watch.begun.set()
            return embed_sync(embedder, texts, *rest)

        async def watched_search(index: LexicalIndex, tokens: Sequence[str], *, limit: int) -> Any:
            watch.lookups.append(watch.begun.wait(_PATIENCE_SECONDS))
            return await search(index, tokens, limit=limit)

        monkeypatch.setattr(LocalEmbedder, "embed_sync", watched_embed)
        monkeypatch.setattr(LexicalIndex, "search_sliced", watched_search)

    def reset(self) -> None:
        self.begun.clear()
        self.lookups.clear()


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch) -> EmbeddingWatch:
    return EmbeddingWatch(monkeypatch)


async def test_a_search_embeds_its_query_while_it_looks_up_lexical_candidates(gim: Any, watch: EmbeddingWatch) -> None:
    await call(gim, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    watch.reset()
    found = await call(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
    assert found["issues"], "the search still finds the issue"
    assert watch.lookups == [True], "the query embedding had begun when the lexical lookup started"
