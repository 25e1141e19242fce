"""``force_reindex`` with an embedder that fails: every file keeps the version it had, dense vectors included, and
searches keep their dense part; the next successful run replaces them."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gateway.api import ProviderUnavailable, hookimpl
from gateway.testing import running_gateway
from gateway_plugins.context.vectors import collection_name
from tests.plugins.context.support import add_file_connector, call, context_config, index_and_wait

pytestmark = [pytest.mark.anyio]


class WordsEmbedder:
    """Feature hashing of words; raises :class:`ProviderUnavailable` while ``down``."""

    id = "words/hashing/32"
    dimension = 32
    max_batch = 64
    max_input_chars = 2000

    def __init__(self) -> None:
        self.down = False

    async def embed(self, texts: Sequence[str], *, task: str) -> list[list[float]]:
        if self.down:
            raise ProviderUnavailable(self.id, "the service is down")
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in text.lower().split():
            vector[hashlib.blake2b(word.encode(), digest_size=4).digest()[0] % self.dimension] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector] if any(vector) else [1.0] + [0.0] * (self.dimension - 1)

    async def aclose(self) -> None:
        pass


class WordsPlugin:
    def __init__(self) -> None:
        self.embedder = WordsEmbedder()

    @hookimpl
    def gateway_register_providers(self, register: Any) -> None:
        register("embedder", "words", lambda context: self.embedder)


async def _dense_state(service: Any) -> tuple[set[str], set[str]]:
    """The chunk ids that have a vector, and every stored chunk id."""
    vectors = set(await service.vectors.store.list_ids(collection_name(WordsEmbedder.id)))
    chunks = {r["id"] for r in await service.store.fetch_all("SELECT id FROM ctx_chunks")}
    return vectors, chunks


async def test_a_forced_reindex_whose_embedder_fails_keeps_the_vectors_it_had(repo: Path, data_dir: Path) -> None:
    plugin = WordsPlugin()
    config = context_config(embed=True, context={"embed_all": True})  # every chunk has its vectors
    config["providers"] = {**config["providers"], "embedder": ["words"], "embedder_retry_seconds": 0}
    async with running_gateway(config, data_dir, extra_plugins=[("words", plugin)]) as client:
        shop = await add_file_connector(client, repo)
        await index_and_wait(client)
        service = client.runtime.packs["context"].service
        vectors, chunks = await _dense_state(service)
        assert chunks and vectors == chunks

        plugin.embedder.down = True
        await index_and_wait(client, [shop], action="force_reindex")
        (info,) = (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        assert info["status"] == "error" and "no embedder could embed" in info["stats"]["last_error"]
        assert await _dense_state(service) == (vectors, chunks)  # the old versions, vectors and all

        plugin.embedder.down = False
        hits = await call(client, "context.search", {"query": "charge the card", "top_k": 3})
        assert hits["query_metadata"]["embedder"] == WordsEmbedder.id and hits["results"]
        await index_and_wait(client, [shop], action="force_reindex")
        new_vectors, new_chunks = await _dense_state(service)
        assert new_vectors == new_chunks and not new_chunks & chunks  # re-chunked, re-embedded, old vectors gone
