"""The contract every :class:`gateway.api.RelationalStore` keeps.

Subclass :class:`StoreContract` in a test module and provide the ``open_store`` fixture: a callable that returns a
new, not yet used store on the *same* database every time it is called (the suite opens a second one to check
persistence). Only the portable column types of :mod:`gateway_plugins.stores` are used.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from gateway.api import GatewayError, Migration, RelationalStore, StoreIntegrityError

OpenStore = Callable[[], RelationalStore]

ITEMS = Migration(
    1,
    "items",
    """
    CREATE TABLE items (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        qty INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE tags (
        item_id INTEGER NOT NULL REFERENCES items (id),
        tag TEXT NOT NULL,
        PRIMARY KEY (item_id, tag)
    )
    """,
)
COUNTER = Migration(
    2, "counter", "CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0)"
)
TYPES = Migration(
    1,
    "types",
    """
    CREATE TABLE typed (
        id INTEGER PRIMARY KEY,
        i INTEGER, b BIGINT, f DOUBLE PRECISION, t TEXT, flag BOOLEAN, ts TIMESTAMPTZ, doc JSONB, raw BYTEA
    )
    """,
)


class StoreContract:
    """Behaviour shared by every relational store, run against each backend."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def open_store(self) -> OpenStore:
        raise NotImplementedError("a subclass provides `open_store`")

    @pytest.fixture
    async def store(self, open_store: OpenStore) -> AsyncIterator[RelationalStore]:
        store = open_store()
        try:
            yield store
        finally:
            await store.close()

    @pytest.fixture
    async def items(self, store: RelationalStore) -> RelationalStore:
        await store.migrate("contract", [ITEMS, COUNTER])
        return store

    # -- migrations ---------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_is_a_relational_store(self, store: RelationalStore) -> None:
        assert isinstance(store, RelationalStore)
        assert store.dialect in ("sqlite", "postgres")

    @pytest.mark.anyio
    async def test_migrations_apply_in_version_order_and_are_recorded(self, store: RelationalStore) -> None:
        before = datetime.now(UTC)
        await store.migrate("contract", [COUNTER, ITEMS])  # listed out of order: 1 must still run first
        rows = await store.fetch_all(
            "SELECT version, name, applied_at FROM schema_migrations WHERE namespace = :ns ORDER BY version",
            {"ns": "contract"},
        )
        assert [(row["version"], row["name"]) for row in rows] == [(1, "items"), (2, "counter")]
        for row in rows:
            assert isinstance(row["applied_at"], datetime)
            assert before - timedelta(seconds=5) <= row["applied_at"] <= datetime.now(UTC) + timedelta(seconds=5)
        assert await store.fetch_one("SELECT n FROM counter WHERE id = 1") == {"n": 0}

    @pytest.mark.anyio
    async def test_migrate_is_idempotent_and_adds_only_new_versions(self, store: RelationalStore) -> None:
        await store.migrate("contract", [ITEMS])
        await store.migrate("contract", [ITEMS])
        await store.migrate("contract", [ITEMS, COUNTER])
        await store.migrate("contract", [ITEMS, COUNTER])
        assert await store.fetch_all("SELECT id, n FROM counter") == [{"id": 1, "n": 0}]  # inserted exactly once
        rows = await store.fetch_all("SELECT version FROM schema_migrations WHERE namespace = 'contract'")
        assert sorted(row["version"] for row in rows) == [1, 2]

    @pytest.mark.anyio
    async def test_namespaces_are_independent(self, store: RelationalStore) -> None:
        await store.migrate("first", [Migration(1, "a", "CREATE TABLE first_a (x INTEGER)")])
        await store.migrate("second", [Migration(1, "a", "CREATE TABLE second_a (x INTEGER)")])
        rows = await store.fetch_all("SELECT namespace, version FROM schema_migrations ORDER BY namespace")
        assert [(row["namespace"], row["version"]) for row in rows] == [("first", 1), ("second", 1)]

    @pytest.mark.anyio
    async def test_a_failing_migration_leaves_nothing_behind(self, store: RelationalStore) -> None:
        broken = Migration(2, "broken", "CREATE TABLE half (x INTEGER); INSERT INTO no_such_table VALUES (1)")
        with pytest.raises(Exception, match="no_such_table"):
            await store.migrate("contract", [ITEMS, broken])
        applied = await store.fetch_all("SELECT version FROM schema_migrations WHERE namespace = 'contract'")
        assert [row["version"] for row in applied] == [1]
        fixed = Migration(2, "broken", "CREATE TABLE half (x INTEGER)")  # "half" was rolled back: can be created
        await store.migrate("contract", [ITEMS, fixed])
        assert await store.fetch_all("SELECT x FROM half") == []

    @pytest.mark.anyio
    async def test_per_dialect_sql(self, store: RelationalStore) -> None:
        migration = Migration(
            1,
            "dialects",
            {
                "sqlite": "CREATE TABLE seq (id INTEGER PRIMARY KEY, v TEXT)",
                "postgres": "CREATE TABLE seq (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v TEXT)",
            },
        )
        await store.migrate("dialects", [migration])
        first = await store.fetch_all("INSERT INTO seq (v) VALUES (:v) RETURNING id", {"v": "a"})
        second = await store.fetch_all("INSERT INTO seq (v) VALUES (:v) RETURNING id", {"v": "b"})
        assert first[0]["id"] < second[0]["id"]

    @pytest.mark.anyio
    async def test_inconsistent_migrations_are_refused(self, store: RelationalStore) -> None:
        await store.migrate("contract", [ITEMS])
        with pytest.raises(GatewayError, match="items"):
            await store.migrate("contract", [Migration(1, "renamed", ITEMS.sql)])
        with pytest.raises(GatewayError, match="share version"):
            await store.migrate("other", [Migration(1, "a", "SELECT 1"), Migration(1, "b", "SELECT 1")])

    # -- reads and writes ---------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_crud_round_trip(self, items: RelationalStore) -> None:
        assert await items.execute("INSERT INTO items (id, name, qty) VALUES (:id, :name, :qty)", _item(1, "a", 5)) == 1
        await items.execute("INSERT INTO items (id, name, qty) VALUES (:id, :name, :qty)", _item(2, "b", 7))
        assert await items.fetch_one("SELECT id, name, qty FROM items WHERE name = :name", {"name": "b"}) == {
            "id": 2,
            "name": "b",
            "qty": 7,
        }
        assert await items.execute("UPDATE items SET qty = qty + :d WHERE qty > :min", {"d": 1, "min": 0}) == 2
        rows = await items.fetch_all("SELECT name, qty FROM items ORDER BY id")
        assert rows == [{"name": "a", "qty": 6}, {"name": "b", "qty": 8}]
        assert await items.execute("DELETE FROM items WHERE id = :id", {"id": 1}) == 1
        assert await items.execute("DELETE FROM items WHERE id = :id", {"id": 1}) == 0
        assert [row["name"] for row in await items.fetch_all("SELECT name FROM items")] == ["b"]

    @pytest.mark.anyio
    async def test_fetch_one_of_nothing_is_none(self, items: RelationalStore) -> None:
        assert await items.fetch_one("SELECT id FROM items WHERE id = :id", {"id": 404}) is None
        async with items.transaction() as tx:
            assert await tx.fetch_one("SELECT id FROM items WHERE id = :id", {"id": 404}) is None
            assert await tx.fetch_all("SELECT id FROM items") == []

    @pytest.mark.anyio
    async def test_literal_percent_and_colons_inside_strings(self, items: RelationalStore) -> None:
        await items.execute("INSERT INTO items (id, name) VALUES (1, :name)", {"name": "100%:done"})
        row = await items.fetch_one(
            "SELECT name, 'a:b %' AS lit FROM items WHERE name LIKE :prefix || '%'", {"prefix": "100"}
        )
        assert row == {"name": "100%:done", "lit": "a:b %"}

    @pytest.mark.anyio
    async def test_execute_many_and_returning(self, items: RelationalStore) -> None:
        async with items.transaction() as tx:
            await tx.execute_many(
                "INSERT INTO items (id, name, qty) VALUES (:id, :name, :qty)", [_item(i, f"n{i}", i) for i in range(10)]
            )
            row = await tx.fetch_one(
                "INSERT INTO items (id, name) VALUES (:id, :name) RETURNING id, qty", {"id": 99, "name": "r"}
            )
        assert row == {"id": 99, "qty": 0}
        assert (await items.fetch_one("SELECT COUNT(*) AS n FROM items")) == {"n": 11}

    @pytest.mark.anyio
    async def test_on_conflict_do_nothing(self, items: RelationalStore) -> None:
        sql = "INSERT INTO items (id, name) VALUES (:id, :name) ON CONFLICT (name) DO NOTHING"
        assert await items.execute(sql, {"id": 1, "name": "x"}) == 1
        assert await items.execute(sql, {"id": 2, "name": "x"}) == 0

    @pytest.mark.anyio
    async def test_portable_types_round_trip(self, store: RelationalStore) -> None:
        await store.migrate("types", [TYPES])
        moment = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=timezone(timedelta(hours=2)))
        values = {
            "id": 1,
            "i": -(2**31),
            "b": 2**62 + 7,
            "f": 0.1,
            "t": "é ü 日本 '\"; -- %s :x",
            "flag": True,
            "ts": moment,
            "doc": {"nested": {"list": [1, 2.5, "x", None, True]}, "unicode": "ø"},
            "raw": bytes(range(256)),
        }
        columns = ", ".join(values)
        await store.execute(f"INSERT INTO typed ({columns}) VALUES ({', '.join(':' + k for k in values)})", values)
        await store.execute(
            "INSERT INTO typed (id, flag, doc) VALUES (:id, :flag, :doc)", {"id": 2, "flag": False, "doc": [1, "a"]}
        )
        await store.execute("INSERT INTO typed (id) VALUES (3)")
        rows = await store.fetch_all(f"SELECT {columns} FROM typed ORDER BY id")
        first = rows[0]
        assert first == values
        assert first["ts"].utcoffset() == timedelta(0)  # returned in UTC, the same instant
        assert first["ts"] == moment
        assert type(first["flag"]) is bool and type(first["b"]) is int and type(first["f"]) is float
        assert type(first["raw"]) is bytes
        assert rows[1]["flag"] is False and rows[1]["doc"] == [1, "a"]
        assert rows[2] == {key: (3 if key == "id" else None) for key in values}
        found = await store.fetch_all(
            "SELECT id FROM typed WHERE ts > :after AND flag = :flag",
            {"after": moment - timedelta(seconds=1), "flag": True},
        )
        assert found == [{"id": 1}]

    @pytest.mark.anyio
    async def test_naive_datetimes_are_refused(self, store: RelationalStore) -> None:
        await store.migrate("types", [TYPES])
        with pytest.raises(ValueError, match="naive"):
            await store.execute("INSERT INTO typed (id, ts) VALUES (1, :ts)", {"id": 1, "ts": datetime(2024, 1, 1)})

    # -- transactions -------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_transaction_commits_at_the_end_of_the_block(self, items: RelationalStore) -> None:
        async with items.transaction() as tx:
            await tx.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
            await tx.execute("INSERT INTO tags (item_id, tag) VALUES (1, 't')")
            assert await tx.fetch_one("SELECT name FROM items WHERE id = 1") == {"name": "a"}
        assert await items.fetch_all("SELECT tag FROM tags") == [{"tag": "t"}]

    @pytest.mark.anyio
    async def test_an_exception_inside_a_transaction_leaves_nothing_behind(self, items: RelationalStore) -> None:
        with pytest.raises(KeyError, match="boom"):
            async with items.transaction() as tx:
                await tx.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
                await tx.execute("UPDATE counter SET n = n + 1")
                raise KeyError("boom")
        assert await items.fetch_all("SELECT id FROM items") == []
        assert await items.fetch_one("SELECT n FROM counter") == {"n": 0}

    @pytest.mark.anyio
    async def test_a_unique_violation_is_a_store_integrity_error(self, items: RelationalStore) -> None:
        await items.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
        with pytest.raises(StoreIntegrityError):
            await items.execute("INSERT INTO items (id, name) VALUES (2, 'a')")
        with pytest.raises(StoreIntegrityError):
            async with items.transaction() as tx:
                await tx.execute("INSERT INTO items (id, name) VALUES (3, 'c')")
                await tx.execute("INSERT INTO items (id, name) VALUES (4, 'a')")
        assert await items.fetch_all("SELECT id FROM items") == [{"id": 1}]
        await items.execute("INSERT INTO items (id, name) VALUES (3, 'c')")  # the store is still usable

    @pytest.mark.anyio
    async def test_a_foreign_key_violation_is_a_store_integrity_error(self, items: RelationalStore) -> None:
        with pytest.raises(StoreIntegrityError):
            await items.execute("INSERT INTO tags (item_id, tag) VALUES (42, 'orphan')")
        assert await items.fetch_all("SELECT tag FROM tags") == []

    @pytest.mark.anyio
    async def test_a_caught_integrity_error_still_rolls_the_transaction_back(self, items: RelationalStore) -> None:
        await items.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
        async with items.transaction() as tx:
            await tx.execute("INSERT INTO items (id, name) VALUES (2, 'b')")
            with pytest.raises(StoreIntegrityError):
                await tx.execute("INSERT INTO items (id, name) VALUES (3, 'a')")
            with pytest.raises(RuntimeError, match="rolled back"):
                await tx.execute("INSERT INTO items (id, name) VALUES (4, 'd')")
        assert await items.fetch_all("SELECT id FROM items") == [{"id": 1}]

    @pytest.mark.anyio
    async def test_transactions_do_not_nest(self, items: RelationalStore) -> None:
        async with items.transaction() as tx:
            await tx.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
            with pytest.raises(RuntimeError, match="do not nest"):
                async with items.transaction():
                    pass
            with pytest.raises(RuntimeError, match="do not nest"):
                await items.execute("INSERT INTO items (id, name) VALUES (2, 'b')")
        assert await items.fetch_all("SELECT id FROM items") == [{"id": 1}]
        with pytest.raises(RuntimeError, match="over"):
            await tx.execute("SELECT 1")

    @pytest.mark.anyio
    async def test_a_cancelled_transaction_leaves_nothing_behind(self, items: RelationalStore) -> None:
        inside = asyncio.Event()

        async def hang() -> None:
            async with items.transaction() as tx:
                await tx.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
                inside.set()
                await asyncio.Event().wait()

        task = asyncio.create_task(hang())
        await asyncio.wait_for(inside.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await items.fetch_all("SELECT id FROM items") == []
        async with items.transaction() as tx:
            await tx.execute("INSERT INTO items (id, name) VALUES (2, 'b')")
        assert await items.fetch_all("SELECT id FROM items") == [{"id": 2}]

    @pytest.mark.anyio
    async def test_concurrent_writers_from_many_tasks(self, items: RelationalStore) -> None:
        tasks, per_task = 40, 5

        async def writer(n: int) -> None:
            async with items.transaction() as tx:
                for k in range(per_task):
                    await tx.execute(
                        "INSERT INTO items (id, name, qty) VALUES (:id, :name, :n)",
                        {"id": n * per_task + k, "name": f"w{n}-{k}", "n": n},
                    )
                    await asyncio.sleep(0)  # let the other writers in, if the store would let them
                await tx.execute("UPDATE counter SET n = n + 1 WHERE id = 1")

        async def reader() -> int:
            row = await items.fetch_one("SELECT COUNT(*) AS n FROM items")
            assert row is not None
            return int(row["n"])

        results = await asyncio.gather(*(writer(n) for n in range(tasks)), *(reader() for _ in range(10)))
        assert all(count % per_task == 0 for count in results[tasks:])  # readers never see half a transaction
        assert await items.fetch_one("SELECT COUNT(*) AS n FROM items") == {"n": tasks * per_task}
        assert await items.fetch_one("SELECT n FROM counter WHERE id = 1") == {"n": tasks}

    @pytest.mark.anyio
    async def test_data_persists_across_reopening(self, open_store: OpenStore) -> None:
        first = open_store()
        try:
            await first.migrate("contract", [ITEMS])
            await first.execute("INSERT INTO items (id, name) VALUES (1, 'kept')")
        finally:
            await first.close()
        second = open_store()
        try:
            await second.migrate("contract", [ITEMS, COUNTER])
            assert await second.fetch_all("SELECT name FROM items") == [{"name": "kept"}]
            assert await second.fetch_one("SELECT n FROM counter") == {"n": 0}
        finally:
            await second.close()


def _item(id_: int, name: str, qty: int) -> dict[str, object]:
    return {"id": id_, "name": name, "qty": qty}
