"""Relational persistence of the GIM pack: the statements on issues, items, vectors, votes, events and locks
(the usage-statistics queries live in :mod:`gateway_plugins.gim.usage`).

Statements are portable between the ``sqlite`` and ``postgres`` stores (named parameters, ``ON CONFLICT``,
``RETURNING``; lists in ``IN`` clauses are expanded into one parameter each). Functions that take a ``db`` accept
either the store or an open transaction, so callers compose them inside one transaction when they must be atomic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from pydantic import Field

from gateway.api.stores import Row
from gateway_plugins.gim.models import FixBundle, MasterIssue
from gateway_plugins.gim.ranking import SearchRow

__all__ = ["Db", "Repository", "StoredMaster"]

_MASTER_COLUMNS = (
    "id, canonical_title, root_cause_category, description, root_cause, fix_bundle, affected_models, "
    "model_specific_notes, environment_coverage, environments, child_issue_count, verification_count, "
    "failure_count, confidence_score, last_confirmed_at, status, created_at, updated_at"
)


_SEARCH_COLUMNS = tuple(field.name for field in dataclasses.fields(SearchRow))

_INSERT_MASTER = (
    f"INSERT INTO gim_masters ({_MASTER_COLUMNS}) VALUES (:id, :canonical_title, :root_cause_category, "
    ":description, :root_cause, :fix_bundle, :affected_models, :model_specific_notes, :environment_coverage, "
    ":environments, :child_issue_count, :verification_count, :failure_count, :confidence_score, "
    ":last_confirmed_at, :status, :created_at, :updated_at)"
)
_INSERT_ITEM = (
    "INSERT INTO gim_items (id, master_id, role, state, index_seq, exception_type, signature, texts, tokens, "
    "terms, created_at) VALUES (:id, :master_id, :role, 'pending', NULL, :exception_type, :signature, :texts, "
    ":tokens, :terms, :created_at)"
)
_ACTIVE_WITHOUT_VECTORS = (
    "i.state = 'active' AND NOT EXISTS (SELECT 1 FROM gim_vectors v WHERE v.item_id = i.id "
    "AND v.embedder_id = :embedder AND v.generation = :gen)"
)
"""Active items (``gim_items i``) lacking a vector of ``:embedder`` in generation ``:gen``."""
_RECORD_VECTOR = (
    "INSERT INTO gim_vectors (item_id, embedder_id, generation) VALUES (:item, :embedder, :gen) "
    "ON CONFLICT (embedder_id, generation, item_id) DO NOTHING"
)


class Db(Protocol):
    async def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int: ...

    async def fetch_one(self, sql: str, params: Mapping[str, Any] | None = None) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[Row]: ...


def _in(prefix: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``(:p0, :p1, ...)`` and its parameters (an empty list matches nothing)."""
    if not values:
        return "(NULL)", {}
    names = [f"{prefix}{i}" for i in range(len(values))]
    return "(" + ", ".join(f":{n}" for n in names) + ")", dict(zip(names, values, strict=True))


class StoredMaster(MasterIssue):
    """A master as stored: the spec's model plus the environment values seen (for search boosts)."""

    environments: dict[str, list[str]] = Field(default_factory=dict)


def master_from_row(row: Row) -> StoredMaster:
    return StoredMaster.model_validate(
        {
            **row,
            "description": row.get("description"),
            "status": row["status"] if row["status"] in ("active", "superseded", "invalid") else "active",
        }
    )


class Repository:
    """Queries of the pack, given a :class:`Db` (store or transaction) per call."""

    # -- issues --------------------------------------------------------------------------------------------------

    async def insert_master(self, db: Db, row: Mapping[str, Any]) -> None:
        await db.execute(_INSERT_MASTER, row)

    async def insert_masters(self, tx: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        """Many masters in one statement batch (``tx`` is a transaction: it has ``execute_many``)."""
        await tx.execute_many(_INSERT_MASTER, rows)

    async def insert_child(self, db: Db, row: Mapping[str, Any]) -> None:
        await db.execute(
            "INSERT INTO gim_children (id, master_issue_id, contribution_type, environment, symptoms, model_info, "
            "validation_result, sanitized_error, sanitized_context, root_cause, fix_bundle, created_at) VALUES "
            "(:id, :master_issue_id, :contribution_type, :environment, :symptoms, :model_info, :validation_result, "
            ":sanitized_error, :sanitized_context, :root_cause, :fix_bundle, :created_at)",
            row,
        )

    async def insert_item(self, db: Db, row: Mapping[str, Any]) -> None:
        await db.execute(_INSERT_ITEM, row)

    async def insert_items(self, tx: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        await tx.execute_many(_INSERT_ITEM, rows)

    async def activate_many(self, tx: Any, item_ids: Sequence[str]) -> int:
        """Activate items in order with consecutive sequence numbers; returns the last one."""
        row = await tx.fetch_one(
            "UPDATE gim_state SET value = value + :n WHERE name = 'index_seq' RETURNING value", {"n": len(item_ids)}
        )
        if row is None:
            raise RuntimeError("gim_state has no index_seq row: the gim migrations did not run")
        last = int(row["value"])
        first = last - len(item_ids) + 1
        await tx.execute_many(
            "UPDATE gim_items SET state = 'active', index_seq = :seq WHERE id = :id",
            [{"seq": first + n, "id": item_id} for n, item_id in enumerate(item_ids)],
        )
        return last

    async def activate(self, tx: Any, item_id: str) -> int:
        """Mark an item active with the next activation sequence number (call under the dedup lock)."""
        return await self.activate_many(tx, [item_id])

    async def master_row(self, db: Db, master_id: str, *, active_only: bool = True) -> Row | None:
        state = " AND i.state = 'active'" if active_only else ""
        return await db.fetch_one(
            f"SELECT {', '.join('m.' + c.strip() for c in _MASTER_COLUMNS.split(','))} FROM gim_masters m "
            f"JOIN gim_items i ON i.id = m.id WHERE m.id = :id{state}",
            {"id": master_id},
        )

    async def masters(self, db: Db, master_ids: Sequence[str]) -> dict[str, StoredMaster]:
        """Active masters by id (unknown or pending ids are left out)."""
        clause, params = _in("m", list(master_ids))
        rows = await db.fetch_all(
            f"SELECT {', '.join('m.' + c.strip() for c in _MASTER_COLUMNS.split(','))} FROM gim_masters m "
            f"JOIN gim_items i ON i.id = m.id WHERE i.state = 'active' AND m.id IN {clause}",
            params,
        )
        return {row["id"]: master_from_row(row) for row in rows}

    async def fix_bundles(self, db: Db, master_ids: Sequence[str]) -> dict[str, FixBundle]:
        """The fixes of the active masters among ``master_ids``, in one light query (no whole master is built)."""
        clause, params = _in("m", list(master_ids))
        active = f"JOIN gim_items i ON i.id = m.id WHERE i.state = 'active' AND m.id IN {clause}"
        rows = await db.fetch_all(f"SELECT m.id, m.fix_bundle FROM gim_masters m {active}", params)
        return {str(row["id"]): FixBundle.model_validate(row["fix_bundle"]) for row in rows}

    async def search_rows(self, db: Db, master_ids: Sequence[str]) -> dict[str, SearchRow]:
        """What a search ranks and shows of the active masters among ``master_ids``, in one light query."""
        clause, params = _in("m", list(master_ids))
        rows = await db.fetch_all(
            f"SELECT m.id, {', '.join('m.' + name for name in _SEARCH_COLUMNS)} FROM gim_masters m "
            f"JOIN gim_items i ON i.id = m.id WHERE i.state = 'active' AND m.id IN {clause}",
            params,
        )
        return {str(r["id"]): SearchRow(**{name: r[name] for name in _SEARCH_COLUMNS}) for r in rows}

    async def resolve_master_id(self, db: Db, issue_id: str) -> str | None:
        """The master of an active item (a master is its own master), ``None`` if unknown."""
        row = await db.fetch_one(
            "SELECT master_id FROM gim_items WHERE id = :id AND state = 'active'", {"id": issue_id}
        )
        return None if row is None else str(row["master_id"])

    async def update_master_enrichment(self, db: Db, master_id: str, values: Mapping[str, Any]) -> None:
        await db.execute(
            "UPDATE gim_masters SET affected_models = :affected_models, environment_coverage = :environment_coverage, "
            "environments = :environments, model_specific_notes = :model_specific_notes, "
            "child_issue_count = child_issue_count + 1, updated_at = :updated_at WHERE id = :id",
            {**values, "id": master_id},
        )

    async def item_exception_types(self, db: Db, master_ids: Sequence[str]) -> dict[str, set[str | None]]:
        clause, params = _in("m", list(master_ids))
        rows = await db.fetch_all(
            f"SELECT master_id, exception_type FROM gim_items WHERE state = 'active' AND master_id IN {clause}",
            params,
        )
        out: dict[str, set[str | None]] = {}
        for row in rows:
            out.setdefault(row["master_id"], set()).add(row["exception_type"])
        return out

    async def active_items_after(self, db: Db, after_seq: int, limit: int) -> list[Row]:
        return await db.fetch_all(
            "SELECT id, master_id, tokens, terms, index_seq FROM gim_items "
            "WHERE state = 'active' AND index_seq > :after ORDER BY index_seq LIMIT :limit",
            {"after": after_seq, "limit": limit},
        )

    async def pending_items(self, db: Db) -> list[Row]:
        return await db.fetch_all("SELECT id, master_id, role FROM gim_items WHERE state = 'pending'")

    async def delete_items(self, db: Db, items: Iterable[Row]) -> None:
        """Remove pending items and their master/child rows (children first, for the foreign key)."""
        items = list(items)
        for item in sorted(items, key=lambda r: r["role"] != "child"):
            await db.execute("DELETE FROM gim_vectors WHERE item_id = :id", {"id": item["id"]})
            table = "gim_children" if item["role"] == "child" else "gim_masters"
            await db.execute(f"DELETE FROM {table} WHERE id = :id", {"id": item["id"]})
            await db.execute("DELETE FROM gim_items WHERE id = :id", {"id": item["id"]})

    async def count_items(self, db: Db) -> int:
        row = await db.fetch_one("SELECT COUNT(*) AS n FROM gim_items WHERE state = 'active'")
        return int(row["n"]) if row else 0

    # -- vectors bookkeeping ---------------------------------------------------------------------------------------

    async def record_vectors(self, tx: Any, item_ids: Sequence[str], embedder_id: str, generation: int) -> None:
        """Note that the items have vectors of ``embedder_id`` in ``generation`` (``tx``: a transaction)."""
        if item_ids:
            await tx.execute_many(
                _RECORD_VECTOR, [{"item": item, "embedder": embedder_id, "gen": generation} for item in item_ids]
            )

    async def forget_vectors(self, db: Db, item_ids: Sequence[str], embedder_id: str, generation: int) -> None:
        clause, params = _in("i", list(item_ids))
        await db.execute(
            f"DELETE FROM gim_vectors WHERE embedder_id = :embedder AND generation = :gen AND item_id IN {clause}",
            {**params, "embedder": embedder_id, "gen": generation},
        )

    async def vector_item_ids(self, db: Db, embedder_id: str, generation: int) -> set[str]:
        rows = await db.fetch_all(
            "SELECT item_id FROM gim_vectors WHERE embedder_id = :embedder AND generation = :gen",
            {"embedder": embedder_id, "gen": generation},
        )
        return {str(r["item_id"]) for r in rows}

    async def dangling_vector_item_ids(self, db: Db, embedder_id: str, generation: int) -> set[str]:
        """Items ``gim_vectors`` lists that are not active (rows a failed write or a takeover left behind)."""
        rows = await db.fetch_all(
            "SELECT v.item_id FROM gim_vectors v LEFT JOIN gim_items i ON i.id = v.item_id AND i.state = 'active' "
            "WHERE v.embedder_id = :embedder AND v.generation = :gen AND i.id IS NULL",
            {"embedder": embedder_id, "gen": generation},
        )
        return {str(r["item_id"]) for r in rows}

    async def count_vectors(self, db: Db, embedder_id: str, generation: int) -> int:
        sql = "SELECT COUNT(*) AS n FROM gim_vectors WHERE embedder_id = :embedder AND generation = :gen"
        row = await db.fetch_one(sql, {"embedder": embedder_id, "gen": generation})
        return int(row["n"]) if row else 0

    async def count_items_without_vectors(self, db: Db, embedder_id: str, generation: int) -> int:
        """How many active items lack a vector of ``embedder_id`` in ``generation``."""
        row = await db.fetch_one(
            f"SELECT COUNT(*) AS n FROM gim_items i WHERE {_ACTIVE_WITHOUT_VECTORS}",
            {"embedder": embedder_id, "gen": generation},
        )
        return int(row["n"]) if row else 0

    async def items_without_vectors(
        self, db: Db, embedder_id: str, generation: int, *, after_id: str = "", limit: int, masters: Any = None
    ) -> list[Row]:
        """Active items lacking a vector of ``embedder_id`` in ``generation``, in id order from ``after_id`` (those of
        the master ids ``masters`` only, when given)."""
        among, params = _in("m", list(masters)) if masters is not None else ("", {})
        of_masters = f"AND i.master_id IN {among} " if masters is not None else ""
        return await db.fetch_all(
            f"SELECT i.id, i.master_id, i.texts FROM gim_items i WHERE {_ACTIVE_WITHOUT_VECTORS} AND i.id > :after "
            f"{of_masters}ORDER BY i.id LIMIT :limit",
            {"embedder": embedder_id, "gen": generation, "after": after_id, "limit": limit, **params},
        )

    async def items_texts(self, db: Db, item_ids: Sequence[str]) -> list[Row]:
        clause, params = _in("i", list(item_ids))
        return await db.fetch_all(
            f"SELECT id, master_id, texts FROM gim_items WHERE state = 'active' AND id IN {clause}", params
        )

    # -- generations ---------------------------------------------------------------------------------------------

    async def generations(self, db: Db) -> dict[str, Row]:
        rows = await db.fetch_all(
            "SELECT embedder_id, active_generation, building_generation, dimension FROM gim_generations"
        )
        return {str(r["embedder_id"]): r for r in rows}

    async def ensure_generation(self, db: Db, embedder_id: str, dimension: int) -> None:
        await db.execute(
            "INSERT INTO gim_generations (embedder_id, active_generation, building_generation, dimension) "
            "VALUES (:embedder, 0, NULL, :dimension) ON CONFLICT (embedder_id) DO NOTHING",
            {"embedder": embedder_id, "dimension": dimension},
        )

    async def set_building(self, db: Db, embedder_id: str, generation: int | None) -> None:
        await db.execute(
            "UPDATE gim_generations SET building_generation = :gen WHERE embedder_id = :embedder",
            {"embedder": embedder_id, "gen": generation},
        )

    async def switch_generation(self, db: Db, embedder_id: str, generation: int) -> None:
        await db.execute(
            "UPDATE gim_generations SET active_generation = :gen, building_generation = NULL "
            "WHERE embedder_id = :embedder",
            {"embedder": embedder_id, "gen": generation},
        )

    async def drop_generation_rows(self, db: Db, embedder_id: str, generation: int) -> None:
        await db.execute(
            "DELETE FROM gim_vectors WHERE embedder_id = :embedder AND generation = :gen",
            {"embedder": embedder_id, "gen": generation},
        )

    # -- votes ---------------------------------------------------------------------------------------------------

    async def lock_master(self, db: Db, master_id: str, now: datetime) -> bool:
        """Take the master's row lock for the rest of the transaction (serialises confirmations of one issue)."""
        return (
            await db.execute("UPDATE gim_masters SET updated_at = :now WHERE id = :id", {"now": now, "id": master_id})
            > 0
        )

    async def upsert_vote(self, db: Db, row: Mapping[str, Any]) -> None:
        await db.execute(
            "INSERT INTO gim_votes (issue_id, voter, success, environment, notes, session_id, created_at, updated_at) "
            "VALUES (:issue_id, :voter, :success, :environment, :notes, :session_id, :now, :now) "
            "ON CONFLICT (issue_id, voter) DO UPDATE SET success = :success, environment = :environment, "
            "notes = :notes, session_id = :session_id, updated_at = :now",
            row,
        )

    async def tally(self, db: Db, master_id: str) -> tuple[int, int]:
        rows = await db.fetch_all("SELECT success FROM gim_votes WHERE issue_id = :id", {"id": master_id})
        successes = sum(1 for r in rows if r["success"])
        return successes, len(rows) - successes

    async def update_confidence(
        self, db: Db, master_id: str, *, successes: int, failures: int, confidence: float, confirmed_at: datetime | None
    ) -> None:
        await db.execute(
            "UPDATE gim_masters SET verification_count = :s, failure_count = :f, confidence_score = :c, "
            "last_confirmed_at = COALESCE(:at, last_confirmed_at) WHERE id = :id",
            {"s": successes, "f": failures, "c": confidence, "at": confirmed_at, "id": master_id},
        )

    # -- usage ---------------------------------------------------------------------------------------------------

    async def latest_event(
        self, db: Db, event_type: str, principal: str, issue_id: str | None, start: datetime, end: datetime
    ) -> str | None:
        """The id of ``principal``'s latest ``event_type`` event about ``issue_id`` (any issue when None) between
        ``start`` and ``end``."""
        issue = "" if issue_id is None else " AND issue_id = :issue"
        row = await db.fetch_one(
            "SELECT id FROM gim_usage_events WHERE event_type = :type AND principal = :principal "
            f"AND ts >= :start AND ts <= :end{issue} ORDER BY ts DESC LIMIT 1",
            {"type": event_type, "principal": principal, "start": start, "end": end, "issue": issue_id},
        )
        return str(row["id"]) if row else None

    async def insert_event(self, db: Db, row: Mapping[str, Any]) -> None:
        await db.execute(
            "INSERT INTO gim_usage_events (id, event_type, issue_id, session_id, principal, model, provider, success, "
            "ts) VALUES (:id, :event_type, :issue_id, :session_id, :principal, :model, :provider, :success, :ts)",
            row,
        )
