"""A vector collection belongs to one exact embedder id: ids that read alike once sanitised never share vectors,
and a search whose embedder has no vectors of the sources says so (lexical answers, a note, no embedder named)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from example_providers.embedder import HashingEmbedder
from gateway.api import EMBEDDER, VECTOR_STORE, hookimpl
from gateway.testing import running_gateway
from gateway_plugins.context.vectors import collection_name
from tests.plugins.context.support import add_file_connector, call, context_config, index_and_wait

pytestmark = [pytest.mark.anyio]

QUERY = "where is an expired card refused?"


class NamedConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str


class NamedEmbedder(HashingEmbedder):
    """The example plugin's hashing embedder under a chosen id (a model renamed, or another with the same size)."""

    def __init__(self, embedder_id: str) -> None:
        super().__init__(dimension=64)
        self._id = embedder_id

    @property
    def id(self) -> str:
        return self._id


class NamedEmbedderPlugin:
    @hookimpl
    def gateway_register_providers(self, register: Any) -> None:
        register(EMBEDDER, "named", lambda ctx: NamedEmbedder(ctx.config.id), config_model=NamedConfig)


def _config(embedder_id: str) -> dict[str, Any]:
    config = context_config(embed=True, context={"embed_all": True})
    config["providers"]["embedder"] = ["named"]
    config["plugins"]["embedder"] = {"named": {"id": embedder_id}}
    return config


def _running(embedder_id: str, data_dir: Path) -> Any:
    return running_gateway(_config(embedder_id), data_dir, extra_plugins=[("named_embedder", NamedEmbedderPlugin())])


async def _search(client: Any) -> dict[str, Any]:
    return (await call(client, "context.search", {"query": QUERY}))["query_metadata"]


def test_a_plain_id_keeps_the_collection_name_it_always_had() -> None:
    """Letters, digits and hyphens between slashes: the name maps back to that id alone, so it carries no digest
    and the vectors an existing deployment stored stay its own."""
    assert collection_name("local/all-MiniLM-L6-v2-int8/384") == "context__local_all-MiniLM-L6-v2-int8_384"
    assert collection_name("a//b") != collection_name("a/b") != collection_name("a_b")


async def test_ids_alike_once_sanitised_never_share_a_collection(repo: Path, data_dir: Path) -> None:
    first, second = "rev/v1.0/64", "rev/v1_0/64"
    assert collection_name(first) != collection_name(second)
    async with _running(first, data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        assert (await _search(client))["embedder"] == first
    async with _running(second, data_dir) as client:
        meta = await _search(client)  # the first id's vectors are not the second's: dense has nothing to use
        assert meta["embedder"] is None and f"embedder '{second}' has no vectors" in meta["note"]
        await index_and_wait(client, action="force_reindex")
        assert (await _search(client))["embedder"] == second
        store = client.runtime.packs["context"].service.context.provider(VECTOR_STORE)
        assert await store.count(collection_name(second)) > 0
        assert await store.count(collection_name(first)) == 0  # the replaced chunks' vectors went everywhere


async def test_a_search_whose_embedder_has_no_vectors_says_so(repo: Path, data_dir: Path) -> None:
    async with _running("rev/words/64", data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
    async with _running("rev/other/64", data_dir) as client:
        meta = await _search(client)
        assert meta["embedder"] is None and meta["index_status"] == "ready"
        assert "results come from lexical ranking only" in meta["note"] and "--force" in meta["note"]
        found = await call(client, "context.search", {"query": QUERY})
        assert found["results"][0]["metadata"]["path"] == "shop/billing.py"  # lexical ranking still answers
        await index_and_wait(client, action="force_reindex")
        meta = await _search(client)
        assert meta["embedder"] == "rev/other/64" and meta["note"] is None
