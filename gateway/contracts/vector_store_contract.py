"""The contract every :class:`gateway.api.VectorStore` keeps.

Subclass :class:`VectorStoreContract` in a test module (name the subclass ``Test...``) and implement
:meth:`~VectorStoreContract.make_store`: it returns a new store (or an awaitable of one) kept under ``path``;
called again with the same path after the first store is closed, it must see the same data (set
``persistent = False`` for a store that keeps nothing, and the persistence tests are skipped).

What the suite expects beyond the protocol's signatures: point ids are UUID strings and come back in canonical
form; errors a caller can act on are built-in types: :class:`LookupError` for a collection that does not exist,
:class:`ValueError` for a dimension mismatch, a malformed id or an unsupported filter value; scores are cosine
similarities of the original vectors (within 1e-3).
"""

from __future__ import annotations

import abc
import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from gateway.api import ScoredPoint, VectorPoint, VectorStore
from gateway.contracts.vector_reference import (  # COLLECTION, DIM and make_points are imported from here too
    COLLECTION,
    DIM,
    FIELDS,
    FILTERS,
    TOLERANCE,
    assert_ranked_like,
    make_points,
    matches,
    ranking,
)

__all__ = ["COLLECTION", "DIM", "VectorStoreContract", "make_points"]


class VectorStoreContract(abc.ABC):
    """Behaviour shared by every vector store."""

    pytestmark = pytest.mark.anyio
    persistent: ClassVar[bool] = True
    """False for a store that keeps nothing once closed (the persistence tests are then skipped)."""

    @abc.abstractmethod
    def make_store(self, path: Path) -> VectorStore | Awaitable[VectorStore]:
        """A new store kept under ``path`` (a directory that may not exist yet)."""

    async def open_store(self, path: Path) -> VectorStore:
        store = self.make_store(path)
        if inspect.isawaitable(store):
            store = await store
        return store

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def store_path(self, tmp_path: Path) -> Path:
        return tmp_path / "vector-store"

    @pytest.fixture
    async def store(self, store_path: Path) -> AsyncIterator[VectorStore]:
        store = await self.open_store(store_path)
        try:
            yield store
        finally:
            await store.close()

    @pytest.fixture
    async def loaded(self, store: VectorStore) -> tuple[VectorStore, list[VectorPoint]]:
        points = make_points()
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields=FIELDS)
        await store.upsert(COLLECTION, points)
        return store, points

    def _require_persistence(self) -> None:
        if not self.persistent:
            pytest.skip(f"{type(self).__name__} keeps nothing once closed")

    # -- collections ---------------------------------------------------------------------------------------------

    async def test_is_a_vector_store(self, store: VectorStore) -> None:
        assert isinstance(store, VectorStore)

    async def test_ensure_collection_is_idempotent(self, store: VectorStore) -> None:
        assert COLLECTION not in await store.list_collections()
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields=FIELDS)
        await store.upsert(COLLECTION, make_points(5))
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields=FIELDS)
        await store.ensure_collection(COLLECTION, dimension=DIM)
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields={"extra": "keyword"})
        assert await store.list_collections() == [COLLECTION]
        assert await store.count(COLLECTION) == 5

    async def test_ensure_collection_with_another_dimension_fails(self, store: VectorStore) -> None:
        await store.ensure_collection(COLLECTION, dimension=DIM)
        with pytest.raises(ValueError, match=str(DIM)):
            await store.ensure_collection(COLLECTION, dimension=DIM * 2)
        with pytest.raises(ValueError):
            await store.ensure_collection("other", dimension=0)

    async def test_arbitrary_names_are_distinct_and_listed_as_given(self, store: VectorStore) -> None:
        names = [COLLECTION, "Upper", "upper", "with space/and/../slashes", "ünïcödé ✓", "x--abc", ".hidden", "a" * 150]
        for i, name in enumerate(names):
            await store.ensure_collection(name, dimension=DIM)
            await store.upsert(name, make_points(i + 1, seed=i))
        assert await store.list_collections() == sorted(names)
        for i, name in enumerate(names):
            assert await store.count(name) == i + 1

    async def test_collections_are_isolated(self, store: VectorStore) -> None:
        shared = make_points(6)
        await store.ensure_collection("a", dimension=DIM, indexed_fields={"lang": "keyword"})
        await store.ensure_collection("b", dimension=DIM * 2)
        await store.upsert("a", shared)
        await store.upsert("b", [VectorPoint(p.id, list(p.vector) * 2, {"side": "b"}) for p in shared[:3]])
        await store.delete("b", [shared[0].id])
        assert await store.count("a") == 6 and await store.count("b") == 2
        found = await store.query("a", shared[0].vector, limit=1)
        assert found[0].id == shared[0].id and found[0].payload == shared[0].payload
        await store.delete_collection("b")
        assert await store.list_collections() == ["a"]
        assert await store.count("a") == 6
        await store.ensure_collection("b", dimension=DIM)  # recreated, empty, with another dimension
        assert await store.count("b") == 0
        await store.delete_collection("never-created")  # no error
        assert await store.list_collections() == ["a", "b"]

    async def test_unknown_collection_is_a_lookup_error(self, store: VectorStore) -> None:
        point = make_points(1)[0]
        calls = (
            store.query("missing", point.vector),
            store.upsert("missing", [point]),
            store.count("missing"),
            store.list_ids("missing"),
            store.delete("missing", [point.id]),
        )
        for call in calls:
            with pytest.raises(LookupError):
                await call

    # -- points and queries ----------------------------------------------------------------------------------------

    async def test_empty_collection(self, store: VectorStore) -> None:
        await store.ensure_collection(COLLECTION, dimension=DIM)
        assert await store.query(COLLECTION, [1.0] * DIM) == []
        assert await store.count(COLLECTION) == 0
        assert await store.list_ids(COLLECTION) == []

    async def test_round_trip_finds_the_point_with_score_one(self, loaded) -> None:
        store, points = loaded
        for point in points[:5]:
            found = await store.query(COLLECTION, point.vector, limit=3)
            assert found[0].id == point.id
            assert found[0].score == pytest.approx(1.0, abs=TOLERANCE)
            assert found[0].payload == point.payload
            assert isinstance(found[0].id, str)

    async def test_scores_are_cosine_similarities_in_descending_order(self, loaded) -> None:
        store, points = loaded
        probe = np.random.default_rng(99).standard_normal(DIM).tolist()
        found = await store.query(COLLECTION, probe, limit=len(points))
        assert_ranked_like(found, ranking(points, probe))

    async def test_score_threshold(self, loaded) -> None:
        store, points = loaded
        probe = points[3].vector
        expected = ranking(points, probe)
        threshold = (expected[5][1] + expected[6][1]) / 2  # between the 6th and 7th: exactly 6 pass
        found = await store.query(COLLECTION, probe, limit=20, score_threshold=threshold)
        assert_ranked_like(found, expected[:6])
        assert await store.query(COLLECTION, probe, score_threshold=1.5) == []

    @pytest.mark.parametrize("filter", FILTERS, ids=repr)
    async def test_payload_filters(self, loaded, filter: dict[str, Any]) -> None:
        store, points = loaded
        probe = points[0].vector
        expected = ranking(points, probe, filter)
        found = await store.query(COLLECTION, probe, limit=len(points), filter=filter)
        assert_ranked_like(found, expected)
        assert all(matches(p.payload, filter) for p in found)
        assert await store.count(COLLECTION, filter=filter) == len(expected)
        ids = await store.list_ids(COLLECTION, filter=filter)
        assert sorted(ids) == sorted(i for i, _ in expected) and len(ids) == len(set(ids))

    @pytest.mark.parametrize("filter", [{"lang": None}, {"lang": {"eq": "go"}}, {"n": float("nan")}], ids=repr)
    async def test_unsupported_filter_values_are_refused(self, loaded, filter: dict[str, Any]) -> None:
        store, points = loaded
        with pytest.raises(ValueError):
            await store.query(COLLECTION, points[0].vector, filter=filter)

    async def test_limit_and_offset_page_through_one_big_query(self, loaded) -> None:
        store, points = loaded
        probe = points[11].vector
        for filter in (None, {"lang": ["go", "python"]}):
            everything = await store.query(COLLECTION, probe, limit=len(points), filter=filter)
            pages: list[ScoredPoint] = []
            for offset in range(0, len(everything) + 7, 7):
                pages += await store.query(COLLECTION, probe, limit=7, offset=offset, filter=filter)
            assert [p.id for p in pages] == [p.id for p in everything]
            above = await store.query(COLLECTION, probe, limit=5, offset=3, score_threshold=0.0, filter=filter)
            assert [p.id for p in above] == [p.id for p in everything if p.score >= 0.0][3:8]
        assert await store.query(COLLECTION, probe, limit=10, offset=len(points)) == []
        assert await store.query(COLLECTION, probe, limit=0) == []
        for bad in ({"limit": -1}, {"offset": -1}):
            with pytest.raises(ValueError):
                await store.query(COLLECTION, probe, **bad)

    async def test_delete(self, loaded) -> None:
        store, points = loaded
        gone = [p.id for p in points[:10]]
        await store.delete(COLLECTION, [*gone, str(uuid.uuid4())])  # an unknown id is no error
        await store.delete(COLLECTION, [])
        assert await store.count(COLLECTION) == len(points) - 10
        assert set(await store.list_ids(COLLECTION)) == {p.id for p in points[10:]}
        found = await store.query(COLLECTION, points[0].vector, limit=len(points))
        assert not {p.id for p in found} & set(gone)
        assert await store.count(COLLECTION, filter={"n": list(range(10))}) == 0

    async def test_list_ids_pages_through_many_points(self, store: VectorStore) -> None:
        points = make_points(2600, seed=3)
        await store.ensure_collection(COLLECTION, dimension=DIM)
        for start in range(0, len(points), 500):
            await store.upsert(COLLECTION, points[start : start + 500])
        ids = await store.list_ids(COLLECTION)
        assert len(ids) == len(points) and set(ids) == {p.id for p in points}
        assert await store.count(COLLECTION, filter={"lang": "go"}) == len(points) // 4

    async def test_upsert_replaces_vector_and_payload(self, loaded) -> None:
        store, points = loaded
        target = points[4]
        new_vector = [-v for v in points[9].vector]
        await store.upsert(COLLECTION, [VectorPoint(target.id, new_vector, {"lang": "zig"})])
        assert await store.count(COLLECTION) == len(points)
        found = await store.query(COLLECTION, new_vector, limit=1)
        assert found[0].id == target.id and found[0].payload == {"lang": "zig"}
        assert found[0].score == pytest.approx(1.0, abs=TOLERANCE)
        assert await store.count(COLLECTION, filter={"n": 4}) == 0  # the old payload is gone, not merged
        assert await store.list_ids(COLLECTION, filter={"lang": "zig"}) == [target.id]

    async def test_the_last_of_duplicate_ids_in_a_batch_wins(self, store: VectorStore) -> None:
        await store.ensure_collection(COLLECTION, dimension=DIM)
        a, b = make_points(2)
        await store.upsert(COLLECTION, [VectorPoint(a.id, a.vector, {"v": 1}), VectorPoint(a.id, b.vector, {"v": 2})])
        assert await store.count(COLLECTION) == 1
        found = await store.query(COLLECTION, b.vector, limit=1)
        assert found[0].payload == {"v": 2} and found[0].score == pytest.approx(1.0, abs=TOLERANCE)

    async def test_ids_come_back_in_canonical_form(self, store: VectorStore) -> None:
        await store.ensure_collection(COLLECTION, dimension=DIM)
        point_id = uuid.uuid4()
        await store.upsert(COLLECTION, [VectorPoint(str(point_id).upper(), [1.0] * DIM)])
        assert await store.list_ids(COLLECTION) == [str(point_id)]
        assert (await store.query(COLLECTION, [1.0] * DIM))[0].id == str(point_id)
        await store.delete(COLLECTION, [point_id.hex])  # any spelling of the UUID
        assert await store.count(COLLECTION) == 0

    @pytest.mark.parametrize("bad_id", ["not-a-uuid", "", "123"])
    async def test_malformed_ids_are_refused(self, store: VectorStore, bad_id: str) -> None:
        await store.ensure_collection(COLLECTION, dimension=DIM)
        good = make_points(1)[0]
        with pytest.raises(ValueError):
            await store.upsert(COLLECTION, [good, VectorPoint(bad_id, [1.0] * DIM)])
        assert await store.count(COLLECTION) == 0  # the batch is refused as a whole
        with pytest.raises(ValueError):
            await store.delete(COLLECTION, [bad_id])

    @pytest.mark.parametrize("payload", [{"when": object()}, {"x": float("nan")}, {"s": {1, 2}}], ids=repr)
    async def test_payloads_that_are_not_json_are_refused(self, store: VectorStore, payload: dict) -> None:
        await store.ensure_collection(COLLECTION, dimension=DIM)
        with pytest.raises(ValueError):
            await store.upsert(COLLECTION, [make_points(1)[0], VectorPoint(str(uuid.uuid4()), [1.0] * DIM, payload)])
        assert await store.count(COLLECTION) == 0

    async def test_vectors_of_the_wrong_dimension_are_refused(self, loaded) -> None:
        store, points = loaded
        with pytest.raises(ValueError, match=str(DIM)):
            await store.upsert(COLLECTION, [VectorPoint(str(uuid.uuid4()), [1.0] * (DIM + 1))])
        with pytest.raises(ValueError, match=str(DIM)):
            await store.query(COLLECTION, [1.0] * (DIM - 1))
        with pytest.raises(ValueError):
            await store.upsert(COLLECTION, [VectorPoint(str(uuid.uuid4()), [float("nan")] * DIM)])
        assert await store.count(COLLECTION) == len(points)

    async def test_concurrent_upserts_and_queries(self, store: VectorStore) -> None:
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields=FIELDS)
        points = make_points(120, seed=11)
        batches = [points[i : i + 10] for i in range(0, len(points), 10)]

        async def upsert_then_find(batch: list[VectorPoint]) -> None:
            await store.upsert(COLLECTION, batch)
            found = await store.query(COLLECTION, batch[0].vector, limit=1)
            assert found[0].id == batch[0].id

        await asyncio.gather(*(upsert_then_find(b) for b in batches), *(store.count(COLLECTION) for _ in batches))
        assert await store.count(COLLECTION) == len(points)

    # -- persistence -----------------------------------------------------------------------------------------------

    async def test_data_survives_close_and_reopen(self, store_path: Path) -> None:
        self._require_persistence()
        points = make_points()
        replaced = VectorPoint(points[1].id, points[1].vector, {"after": "flush", "ok": True})
        first = await self.open_store(store_path)
        try:
            await first.ensure_collection(COLLECTION, dimension=DIM, indexed_fields=FIELDS)
            await first.ensure_collection("second", dimension=DIM * 2)
            await first.upsert(COLLECTION, points)
            await first.delete(COLLECTION, [points[0].id])
            await first.flush()
            await first.upsert(COLLECTION, [replaced])  # after the flush: close must keep it too
        finally:
            await first.close()
        await first.close()  # closing twice is harmless

        second = await self.open_store(store_path)
        try:
            assert await second.list_collections() == sorted([COLLECTION, "second"])
            assert await second.count(COLLECTION) == len(points) - 1
            assert await second.count(COLLECTION, filter={"lang": "go"}) == sum(
                1 for p in points[2:] if p.payload["lang"] == "go"
            )
            found = await second.query(COLLECTION, points[1].vector, limit=1)
            assert found[0].id == replaced.id and found[0].payload == replaced.payload
            probe = points[5].vector
            expected = ranking([replaced, *points[2:]], probe, {"ok": True})
            assert_ranked_like(await second.query(COLLECTION, probe, limit=50, filter={"ok": True}), expected)
            with pytest.raises(ValueError):
                await second.ensure_collection("second", dimension=DIM)
            await second.ensure_collection(COLLECTION, dimension=DIM, indexed_fields=FIELDS)
        finally:
            await second.close()

    async def test_a_deleted_collection_stays_deleted(self, store_path: Path) -> None:
        self._require_persistence()
        first = await self.open_store(store_path)
        try:
            await first.ensure_collection("keep", dimension=DIM)
            await first.ensure_collection("drop", dimension=DIM)
            await first.upsert("drop", make_points(3))
            await first.delete_collection("drop")
        finally:
            await first.close()
        second = await self.open_store(store_path)
        try:
            assert await second.list_collections() == ["keep"]
            with pytest.raises(LookupError):
                await second.count("drop")
        finally:
            await second.close()
