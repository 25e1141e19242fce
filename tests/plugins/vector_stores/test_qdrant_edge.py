"""What is particular to the ``qdrant-edge`` store: its files, its index settings, when it builds the index, how
it recovers from an interrupted creation or deletion, and the engine quirk it works around."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import anyio
import numpy as np
import pytest
import qdrant_edge as qe
from pydantic import ValidationError

from gateway.api import ProviderUnavailable, VectorPoint
from gateway.contracts.vector_store_contract import COLLECTION, DIM, make_points
from gateway_plugins.vector_stores.common import StoreClosed
from gateway_plugins.vector_stores.edge import QdrantEdgeConfig, QdrantEdgeStore, directory_name

pytestmark = pytest.mark.anyio


def random_points(count: int, dim: int, seed: int = 0) -> list[VectorPoint]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    return [
        VectorPoint(str(uuid.uuid4()), v.tolist(), {"i": i, "lang": "go" if i % 2 else "py"})
        for i, v in enumerate(vectors)
    ]


def shard_config(store: QdrantEdgeStore, name: str) -> dict:
    shard = store.directory / "collections" / directory_name(name) / "shard"
    return json.loads((shard / "edge_config.json").read_text())


async def test_files_live_under_the_data_dir_with_the_spec_settings(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path, QdrantEdgeConfig(hnsw_m=24, hnsw_ef_construct=128))
    try:
        await store.ensure_collection(COLLECTION, dimension=384, indexed_fields={"lang": "keyword", "n": "integer"})
        directory = fast_tmp_path / "collections" / COLLECTION  # a safe name is its own directory
        meta = json.loads((directory / "collection.json").read_text())
        assert meta == {
            "format": 1,
            "name": COLLECTION,
            "dimension": 384,
            "indexed_fields": {"lang": "keyword", "n": "integer"},
        }
        config = shard_config(store, COLLECTION)
        assert config["vectors"][""] == {"size": 384, "distance": "Cosine", "memory": "cached"}
        assert config["hnsw_config"]["m"] == 24 and config["hnsw_config"]["ef_construct"] == 128
        assert config["quantization_config"]["scalar"]["type"] == "int8"
        assert config["quantization_config"]["scalar"]["quantile"] == 0.99
        info = await store.info(COLLECTION)
        assert info.payload_indexes == {"lang": "keyword", "n": "integer"}
        assert (fast_tmp_path / "store.pid").read_text().strip().isdigit()  # the lock names its holder
    finally:
        await store.close()
    assert not (fast_tmp_path / "store.pid").exists()


async def test_payload_indexes_are_really_built_in_the_engine(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path)
    try:
        await store.ensure_collection("c", dimension=4, indexed_fields={"lang": "keyword"})
        await store.ensure_collection("c", dimension=4, indexed_fields={"lang": "keyword", "ok": "bool"})
    finally:
        await store.close()
    shard = qe.EdgeShard.load(str(fast_tmp_path / "collections" / "c" / "shard"))
    try:
        schema = shard.info().payload_schema
        assert {name: info.data_type for name, info in schema.items()} == {
            "lang": qe.PayloadSchemaType.Keyword,
            "ok": qe.PayloadSchemaType.Bool,
        }
    finally:
        shard.close()


@pytest.mark.parametrize(
    ("name", "plain"),
    [
        (COLLECTION, True),
        ("../../escape", False),
        ("a/b", False),
        ("Upper", False),  # case-insensitive file systems would merge it with "upper"
        ("con", False),
        (".hidden", False),
        ("x--looks-encoded", False),
        ("z" * 101, False),
        ("ok.name_1-2", True),
    ],
)
def test_directory_names_are_safe_on_every_file_system(name: str, plain: bool) -> None:
    directory = directory_name(name)
    assert (directory == name) is plain
    assert "/" not in directory and "\\" not in directory and not directory.startswith(".")
    assert len(directory) <= 100 and directory == directory.lower()


async def test_a_name_with_path_components_stays_inside_the_store(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path / "store")
    try:
        await store.ensure_collection("../../escape", dimension=DIM)
        await store.upsert("../../escape", make_points(3))
        assert await store.list_collections() == ["../../escape"]
    finally:
        await store.close()
    assert sorted(p.name for p in fast_tmp_path.iterdir()) == ["store"]


async def test_the_index_is_built_once_enough_vectors_are_not_indexed(fast_tmp_path: Path) -> None:
    # 300 vectors of 64 floats = 75 KB; the engine indexes segments over 20 KB, the store optimizes past 40 KB.
    config = QdrantEdgeConfig(optimize_threshold_kb=40, indexing_threshold_kb=20)
    store = QdrantEdgeStore(fast_tmp_path, config)
    points = random_points(300, 64)
    try:
        await store.ensure_collection("c", dimension=64)
        await store.upsert("c", points[:100])  # 25 KB: below the threshold, searched by brute force
        assert (await store.info("c")).indexed_vectors == 0
        await store.upsert("c", points[100:])
        info = await store.info("c")
        assert info.points == 300 and info.indexed_vectors == 300
        found = await store.query("c", points[123].vector, limit=1)
        assert found[0].id == points[123].id and found[0].score == pytest.approx(1.0, abs=1e-3)
    finally:
        await store.close()


async def test_optimize_on_demand_when_automatic_building_is_off(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path, QdrantEdgeConfig(optimize_threshold_kb=0, indexing_threshold_kb=1))
    points = random_points(200, 32)
    try:
        await store.ensure_collection("c", dimension=32, indexed_fields={"lang": "keyword"})
        await store.upsert("c", points)
        assert (await store.info("c")).indexed_vectors == 0
        assert await store.optimize("c") is True
        assert (await store.info("c")).indexed_vectors == 200
        assert await store.optimize() is False  # nothing left to do in any open collection
        found = await store.query("c", points[7].vector, limit=3, filter={"lang": "go"})
        assert found[0].id == points[7].id and all(p.payload["lang"] == "go" for p in found)
    finally:
        await store.close()


async def test_changed_settings_apply_to_existing_collections_on_reopen(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path)
    await store.ensure_collection("c", dimension=8)
    await store.upsert("c", make_points(5))
    await store.close()
    store = QdrantEdgeStore(fast_tmp_path, QdrantEdgeConfig(hnsw_m=32, quantile=0.95))
    try:
        assert await store.count("c") == 5
        config = shard_config(store, "c")
        assert config["hnsw_config"]["m"] == 32
        assert config["quantization_config"]["scalar"]["quantile"] == 0.95
    finally:
        await store.close()


async def test_an_interrupted_creation_is_redone(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path)
    try:
        half_made = fast_tmp_path / "collections" / "c"
        (half_made / "shard").mkdir(parents=True)
        (half_made / "shard" / "junk").write_text("from a crash before collection.json was written")
        assert await store.list_collections() == []
        with pytest.raises(LookupError):
            await store.count("c")
        await store.ensure_collection("c", dimension=4)
        await store.upsert("c", [VectorPoint(str(uuid.uuid4()), [1.0, 0.0, 0.0, 0.0])])
        assert await store.count("c") == 1
        assert not (half_made / "shard" / "junk").exists()
    finally:
        await store.close()


async def test_an_interrupted_deletion_is_finished_at_the_next_start(fast_tmp_path: Path) -> None:
    trash = fast_tmp_path / "collections" / ".trash-0123"
    (trash / "shard").mkdir(parents=True)
    store = QdrantEdgeStore(fast_tmp_path)
    try:
        assert not trash.exists()
        assert await store.list_collections() == []
    finally:
        await store.close()


async def test_use_after_close_is_an_error(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path)
    await store.ensure_collection("c", dimension=4)
    await store.close()
    with pytest.raises(StoreClosed):
        await store.count("c")
    with pytest.raises(StoreClosed):
        await store.ensure_collection("d", dimension=4)
    with pytest.raises(StoreClosed):
        await store.list_collections()


async def test_closing_while_queries_run_lets_them_finish_or_fail_cleanly(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path)
    points = random_points(500, 16)
    await store.ensure_collection("c", dimension=16)
    await store.upsert("c", points)
    outcomes: list[str] = []

    async def query(i: int) -> None:
        try:
            found = await store.query("c", points[i].vector, limit=1)
            outcomes.append("ok" if found[0].id == points[i].id else "wrong")
        except StoreClosed:
            outcomes.append("closed")

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(query, i)
        tg.start_soon(store.close)
    assert len(outcomes) == 40 and "wrong" not in outcomes


async def test_deleting_a_collection_in_use_fails_its_later_calls_cleanly(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path)
    try:
        await store.ensure_collection("c", dimension=DIM)
        await store.upsert("c", make_points(4))
        await store.delete_collection("c")
        with pytest.raises(LookupError):
            await store.query("c", [1.0] * DIM)
        assert not (fast_tmp_path / "collections" / "c").exists()
    finally:
        await store.close()


def test_config_forbids_unknown_keys_and_bad_values() -> None:
    assert QdrantEdgeConfig().oversampling == 2.0 and QdrantEdgeConfig().rescore is True
    with pytest.raises(ValidationError):
        QdrantEdgeConfig.model_validate({"hnsw_m": 16, "typo": 1})
    with pytest.raises(ValidationError):
        QdrantEdgeConfig(oversampling=0.5)
    with pytest.raises(ValidationError):
        QdrantEdgeConfig(optimize_threshold_kb=-1)


def test_the_engine_still_reads_a_python_bool_as_an_integer() -> None:
    """Canary for the work-around in ``edge_shard._equals``: when qdrant-edge-py reads ``MatchValue(True)`` as a
    boolean, this fails and numpy's ``bool_`` can go."""
    assert type(qe.MatchValue(True).value) is int
    assert type(qe.MatchValue(np.bool_(True)).value) is bool


async def test_numpy_arrays_are_accepted_as_vectors(fast_tmp_path: Path) -> None:
    store = QdrantEdgeStore(fast_tmp_path)
    try:
        await store.ensure_collection("c", dimension=4)
        vector = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)
        point_id = str(uuid.uuid4())
        await store.upsert("c", [VectorPoint(point_id, vector)])
        found = await store.query("c", vector.astype(np.float64))
        assert found[0].id == point_id and found[0].score == pytest.approx(1.0, abs=1e-6)
        with pytest.raises(ValueError, match="one-dimensional"):
            await store.upsert("c", [VectorPoint(point_id, np.ones((2, 2)))])
    finally:
        await store.close()


async def test_damaged_vector_files_make_the_collection_unavailable_naming_it(fast_tmp_path: Path) -> None:
    """A truncated vector file (a crash mid-write, a disk fault): the engine opens the shard and fails each read;
    callers get a retryable outage naming the collection's directory, not an internal error."""
    store = QdrantEdgeStore(fast_tmp_path)
    try:
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields={})
        await store.upsert(COLLECTION, random_points(20, DIM))
    finally:
        await store.close()
    directory = fast_tmp_path / "collections" / directory_name(COLLECTION)
    damaged = list(directory.glob("shard/segments/*/vector_storage/vectors/chunk_0.mmap"))
    assert damaged
    for path in damaged:
        path.write_bytes(b"")
    store = QdrantEdgeStore(fast_tmp_path)
    try:
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields={})
        with pytest.raises(ProviderUnavailable) as failed:
            await store.query(COLLECTION, [1.0] * DIM, limit=3)
    finally:
        await store.close()
    assert failed.value.provider == "vector_store/qdrant-edge"
    assert str(directory) in failed.value.reason and "delete that directory" in failed.value.reason
