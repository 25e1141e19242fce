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
from tests.plugins.context.support import (
    add_file_connector,
    call,
    context_config,
    index_and_wait,
    index_directly,
    the_connector,
)

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


async def test_a_job_cancelled_while_embedding_leaves_no_vector_of_a_replaced_chunk(repo: Path, data_dir: Path) -> None:
    """Shutting down mid-embedding (the job is cancelled after its grace): the changed file's old vectors went with
    its old rows, so no vector is left that no chunk names (they would take dense candidates for ever)."""
    import anyio

    plugin = WordsPlugin()
    config = context_config(embed=True, context={"embed_all": True})
    config["providers"] = {**config["providers"], "embedder": ["words"], "embedder_retry_seconds": 0}
    async with running_gateway(config, data_dir, extra_plugins=[("words", plugin)]) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        service = client.runtime.packs["context"].service
        (repo / "shop" / "money.py").write_text("def round_cents(amount):\n    return round(amount, 3)\n")
        embedding = anyio.Event()

        async def hung(texts: Sequence[str], *, task: str) -> list[list[float]]:
            embedding.set()
            await anyio.sleep(3600)
            return []

        plugin.embedder.embed = hung  # type: ignore[method-assign]
        await call(client, "context.index_control", {"action": "start"})
        with anyio.fail_after(30):
            await embedding.wait()
        await service.jobs.aclose(grace_seconds=0.2)  # what a shutdown does
        vectors, chunks = await _dense_state(service)
    assert vectors <= chunks  # not a vector whose chunk is gone


async def test_a_passing_outage_of_the_source_keeps_what_is_stored(repo: Path, data_dir: Path) -> None:
    """A connector whose reads fail for a while (a wiki's API answering 503): the files stay as they were."""
    from gateway.api import ServiceUnavailable

    class Flaky:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def scan(self) -> Any:
            return await self.inner.scan()

        async def read(self, path: str) -> Any:
            raise ServiceUnavailable("wiki API: 503, retry later")

    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        service, row, connector = await the_connector(client)
        scan = await connector.scan()
        before = await service.store.fetch_all("SELECT path, content_hash FROM ctx_files ORDER BY path")
        outcome = await index_directly(service, row, Flaky(connector), scan.documents)
        after = await service.store.fetch_all("SELECT path, content_hash FROM ctx_files ORDER BY path")
    assert outcome.removed == 0 and len(outcome.failed) == len(before) and after == before
