"""Relational persistence of the context pack: connectors, file versions with their chunks, removals, jobs.

Statements are portable between the ``sqlite`` and ``postgres`` stores. Every change to the indexed content (a file
version written, a file or connector removed) takes the next number of one change sequence (``ctx_state.seq``, a
row update that serialises writers), so another process follows the changes in order with :meth:`changes_after`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from gateway.api import RelationalStore, Transaction

__all__ = ["Repository"]

Db = RelationalStore | Transaction

_CONNECTOR_COLUMNS = (
    "id, public_id, tenant, type, name, config, origin, status, created_at, updated_at, last_sync, last_error, "
    "documents, skipped"
)
_FILE_COLUMNS = (
    "id, connector_id, path, content_hash, size, language, source_type, last_modified, imports, chunk_count, embedded, "
    "seq, indexed_at"
)
_CHUNK_COLUMNS = "id, file_id, ordinal, kind, symbol, start_line, end_line, content, tokens, strings"
_JOB_COLUMNS = (
    "id, tenant, kind, status, connectors, completed, total, current_connector, documents_processed, started_at, "
    "finished_at, heartbeat_at, owner, stop_requested, error"
)


def _now() -> datetime:
    return datetime.now(UTC)


def _in(prefix: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    if not values:
        return "(NULL)", {}
    names = [f"{prefix}{i}" for i in range(len(values))]
    return "(" + ", ".join(f":{n}" for n in names) + ")", dict(zip(names, values, strict=True))


class Repository:
    """The pack's SQL, given a store or an open transaction per call."""

    # -- change sequence ---------------------------------------------------------------------------------------

    async def next_seq(self, tx: Transaction, n: int = 1) -> int:
        """Reserve ``n`` sequence numbers; returns the last one."""
        row = await tx.fetch_one("UPDATE ctx_state SET value = value + :n WHERE name = 'seq' RETURNING value", {"n": n})
        if row is None:
            raise RuntimeError("ctx_state has no seq row: the context migrations did not run")
        return int(row["value"])

    async def current_seq(self, db: Db) -> int:
        row = await db.fetch_one("SELECT value FROM ctx_state WHERE name = 'seq'")
        return int(row["value"]) if row else 0

    # -- connectors --------------------------------------------------------------------------------------------

    async def insert_connector(self, db: Db, row: Mapping[str, Any]) -> None:
        await db.execute(
            f"INSERT INTO ctx_connectors ({_CONNECTOR_COLUMNS}) VALUES (:id, :public_id, :tenant, :type, :name, "
            ":config, :origin, :status, :created_at, :updated_at, :last_sync, :last_error, :documents, :skipped)",
            row,
        )

    async def update_connector(self, db: Db, connector_id: str, values: Mapping[str, Any]) -> None:
        sets = ", ".join(f"{key} = :{key}" for key in values)
        await db.execute(f"UPDATE ctx_connectors SET {sets} WHERE id = :id", {**values, "id": connector_id})

    async def release_indexing_connectors(self, db: Db, tenant: str, reason: str) -> None:
        """The tenant's connectors still marked ``indexing`` become ``stopped`` with ``reason`` (their job died)."""
        await db.execute(
            "UPDATE ctx_connectors SET status = 'stopped', last_error = :reason "
            "WHERE tenant = :tenant AND status = 'indexing'",
            {"tenant": tenant, "reason": reason},
        )

    async def get_connector(self, db: Db, connector_id: str) -> dict[str, Any] | None:
        return await db.fetch_one(
            f"SELECT {_CONNECTOR_COLUMNS} FROM ctx_connectors WHERE id = :id", {"id": connector_id}
        )

    async def connector_by_public_id(self, db: Db, tenant: str, public_id: str) -> dict[str, Any] | None:
        """The tenant's connector that the tenant calls ``public_id`` (the id it sees)."""
        return await db.fetch_one(
            f"SELECT {_CONNECTOR_COLUMNS} FROM ctx_connectors WHERE tenant = :tenant AND public_id = :public_id",
            {"tenant": tenant, "public_id": public_id},
        )

    async def connector_by_name(self, db: Db, tenant: str, name: str) -> dict[str, Any] | None:
        return await db.fetch_one(
            f"SELECT {_CONNECTOR_COLUMNS} FROM ctx_connectors WHERE tenant = :tenant AND name = :name",
            {"tenant": tenant, "name": name},
        )

    async def list_connectors(self, db: Db, tenant: str | None = None) -> list[dict[str, Any]]:
        if tenant is None:
            return await db.fetch_all(f"SELECT {_CONNECTOR_COLUMNS} FROM ctx_connectors ORDER BY created_at, id")
        return await db.fetch_all(
            f"SELECT {_CONNECTOR_COLUMNS} FROM ctx_connectors WHERE tenant = :tenant ORDER BY created_at, id",
            {"tenant": tenant},
        )

    async def delete_connector(self, tx: Transaction, connector_id: str) -> int:
        """Remove a connector and every file version of it (as removals in the change sequence)."""
        files = await tx.fetch_all("SELECT id FROM ctx_files WHERE connector_id = :c", {"c": connector_id})
        await self.remove_files(tx, [f["id"] for f in files])
        return await tx.execute("DELETE FROM ctx_connectors WHERE id = :id", {"id": connector_id})

    # -- files and chunks --------------------------------------------------------------------------------------

    async def file_states(
        self, db: Db, connector_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """path -> {id, content_hash, embedded} of every indexed file of a connector (or of the given paths)."""
        if paths is None:
            rows = await db.fetch_all(
                "SELECT id, path, content_hash, embedded FROM ctx_files WHERE connector_id = :c", {"c": connector_id}
            )
        else:
            clause, params = _in("p", list(paths))
            rows = await db.fetch_all(
                f"SELECT id, path, content_hash, embedded FROM ctx_files WHERE connector_id = :c AND path IN {clause}",
                {"c": connector_id, **params},
            )
        return {row["path"]: row for row in rows}

    async def touch_files(self, db: Db, file_ids: Sequence[str]) -> None:
        """Mark file versions as confirmed now (a hosted document offered again, unchanged, by a full sync)."""
        clause, params = _in("f", list(file_ids))
        await db.execute(f"UPDATE ctx_files SET indexed_at = :now WHERE id IN {clause}", {"now": _now(), **params})

    async def write_file(
        self,
        tx: Transaction,
        file_row: dict[str, Any],
        chunk_rows: Sequence[Mapping[str, Any]],
        replaces: str | None,
        *,
        document_row: Mapping[str, Any] | None = None,
        link_rows: Sequence[Mapping[str, Any]] = (),
    ) -> list[str]:
        """Store a file version with its chunks (and, for a hosted document, its facts and links), replacing the
        previous version ``replaces`` (a file id). Returns the chunk ids of the replaced version (their vectors are
        to be deleted)."""
        removed = await self.remove_files(tx, [replaces]) if replaces else []
        if document_row is not None:
            await tx.execute(
                "INSERT INTO ctx_documents (file_id, connector_id, kind, title, url, state, author) "
                "VALUES (:file_id, :connector_id, :kind, :title, :url, :state, :author)",
                document_row,
            )
        if link_rows:
            await tx.execute_many(
                "INSERT INTO ctx_links (file_id, connector_id, relation, value) "
                "VALUES (:file_id, :connector_id, :relation, :value)",
                link_rows,
            )
        file_row["seq"] = await self.next_seq(tx)
        await tx.execute(
            f"INSERT INTO ctx_files ({_FILE_COLUMNS}) VALUES (:id, :connector_id, :path, :content_hash, :size, "
            ":language, :source_type, :last_modified, :imports, :chunk_count, :embedded, :seq, :indexed_at)",
            file_row,
        )
        if chunk_rows:
            await tx.execute_many(
                f"INSERT INTO ctx_chunks ({_CHUNK_COLUMNS}) VALUES (:id, :file_id, :ordinal, :kind, :symbol, "
                ":start_line, :end_line, :content, :tokens, :strings)",
                chunk_rows,
            )
        return removed

    async def remove_files(self, tx: Transaction, file_ids: Sequence[str]) -> list[str]:
        """Delete file versions and their chunks, recording each as a removal. Returns the removed chunk ids."""
        removed: list[str] = []
        for file_id in file_ids:
            chunks = await tx.fetch_all("SELECT id FROM ctx_chunks WHERE file_id = :f", {"f": file_id})
            ids = [c["id"] for c in chunks]
            removed.extend(ids)
            await tx.execute("DELETE FROM ctx_chunks WHERE file_id = :f", {"f": file_id})
            await tx.execute("DELETE FROM ctx_links WHERE file_id = :f", {"f": file_id})
            await tx.execute("DELETE FROM ctx_documents WHERE file_id = :f", {"f": file_id})
            deleted = await tx.execute("DELETE FROM ctx_files WHERE id = :f", {"f": file_id})
            if deleted:
                seq = await self.next_seq(tx)
                await tx.execute(
                    "INSERT INTO ctx_removals (seq, file_id, chunk_ids) VALUES (:seq, :f, :ids)",
                    {"seq": seq, "f": file_id, "ids": " ".join(ids)},
                )
        return removed

    async def embedded_sets(self, db: Db) -> list[set[str]]:
        """Each distinct set of embedder ids files have vectors of (files embedded by none left out)."""
        rows = await db.fetch_all("SELECT DISTINCT embedded FROM ctx_files WHERE embedded <> ''")
        return [set(str(row["embedded"]).split()) for row in rows]

    async def mark_embedded(self, db: Db, file_id: str, embedder_ids: Sequence[str]) -> None:
        await db.execute(
            "UPDATE ctx_files SET embedded = :e WHERE id = :id", {"e": " ".join(sorted(embedder_ids)), "id": file_id}
        )

    async def files_after(self, db: Db, seq: int, limit: int) -> list[dict[str, Any]]:
        return await db.fetch_all(
            f"SELECT {_FILE_COLUMNS} FROM ctx_files WHERE seq > :seq ORDER BY seq LIMIT :limit",
            {"seq": seq, "limit": limit},
        )

    async def removals_after(self, db: Db, seq: int) -> list[dict[str, Any]]:
        return await db.fetch_all(
            "SELECT seq, file_id, chunk_ids FROM ctx_removals WHERE seq > :seq ORDER BY seq", {"seq": seq}
        )

    async def chunks_of_files(self, db: Db, file_ids: Sequence[str], *, with_content: bool = False) -> list[dict]:
        columns = (
            _CHUNK_COLUMNS
            if with_content
            else "id, file_id, ordinal, kind, symbol, start_line, end_line, tokens, strings"
        )
        clause, params = _in("f", list(file_ids))
        return await db.fetch_all(
            f"SELECT {columns} FROM ctx_chunks WHERE file_id IN {clause} ORDER BY file_id, ordinal", params
        )

    async def chunks_by_id(self, db: Db, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        clause, params = _in("c", list(chunk_ids))
        rows = await db.fetch_all(f"SELECT id, file_id, content FROM ctx_chunks WHERE id IN {clause}", params)
        return {row["id"]: row for row in rows}

    async def files_by_id(self, db: Db, file_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        clause, params = _in("f", list(file_ids))
        rows = await db.fetch_all(f"SELECT {_FILE_COLUMNS} FROM ctx_files WHERE id IN {clause}", params)
        return {row["id"]: row for row in rows}

    async def file_by_path(self, db: Db, connector_id: str, path: str) -> dict[str, Any] | None:
        return await db.fetch_one(
            f"SELECT {_FILE_COLUMNS} FROM ctx_files WHERE connector_id = :c AND path = :p",
            {"c": connector_id, "p": path},
        )

    async def count_chunks(self, db: Db, connector_id: str) -> int:
        row = await db.fetch_one(
            "SELECT COUNT(*) AS n FROM ctx_chunks c JOIN ctx_files f ON f.id = c.file_id WHERE f.connector_id = :c",
            {"c": connector_id},
        )
        return int(row["n"]) if row else 0

    async def paths_under(self, db: Db, connector_id: str, prefix: str, after: str, limit: int) -> list[dict]:
        """Indexed paths of a connector starting with ``prefix``, in order, after ``after`` (paging)."""
        return await db.fetch_all(
            "SELECT path, size, language FROM ctx_files WHERE connector_id = :c AND path > :after "
            "AND substr(path, 1, :n) = :prefix ORDER BY path LIMIT :limit",
            {"c": connector_id, "after": after, "prefix": prefix, "n": len(prefix), "limit": limit},
        )

    # -- hosted documents: sync state, facts, links -----------------------------------------------------------

    async def sync_state(self, db: Db, connector_id: str) -> dict[str, Any]:
        row = await db.fetch_one("SELECT sync_state FROM ctx_connectors WHERE id = :id", {"id": connector_id})
        state = row["sync_state"] if row else None
        return state if isinstance(state, dict) else {}

    async def set_sync_state(self, db: Db, connector_id: str, state: Mapping[str, Any]) -> None:
        await db.execute(
            "UPDATE ctx_connectors SET sync_state = :s WHERE id = :id", {"s": dict(state), "id": connector_id}
        )

    async def linked(
        self, db: Db, connector_ids: Sequence[str], relations: Sequence[str], values: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Links of the given relations whose value is one of ``values``, among documents of ``connector_ids``."""
        if not values or not connector_ids:
            return []
        values_in, value_params = _in("v", list(values))
        rel_in, rel_params = _in("r", list(relations))
        conn_in, conn_params = _in("c", list(connector_ids))
        return await db.fetch_all(
            f"SELECT file_id, connector_id, relation, value FROM ctx_links WHERE value IN {values_in} "
            f"AND relation IN {rel_in} AND connector_id IN {conn_in}",
            {**value_params, **rel_params, **conn_params},
        )

    async def links_of(self, db: Db, file_ids: Sequence[str]) -> list[dict[str, Any]]:
        clause, params = _in("f", list(file_ids))
        return await db.fetch_all(
            f"SELECT file_id, connector_id, relation, value FROM ctx_links WHERE file_id IN {clause}", params
        )

    async def document_titles(self, db: Db, connector_ids: Sequence[str]) -> list[str]:
        """The titles of the hosted documents of ``connector_ids`` (issues, pull requests, tickets, threads)."""
        if not connector_ids:
            return []
        clause, params = _in("c", list(connector_ids))
        rows = await db.fetch_all(f"SELECT DISTINCT title FROM ctx_documents WHERE connector_id IN {clause}", params)
        return [row["title"] for row in rows if row["title"]]

    async def documents_by_file(self, db: Db, file_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Facts of hosted documents (with their path, source type and modification time) by file id."""
        clause, params = _in("f", list(file_ids))
        rows = await db.fetch_all(
            "SELECT d.file_id, d.connector_id, d.kind, d.title, d.url, d.state, d.author, f.path, f.source_type, "
            f"f.last_modified FROM ctx_documents d JOIN ctx_files f ON f.id = d.file_id WHERE d.file_id IN {clause}",
            params,
        )
        return {row["file_id"]: row for row in rows}

    # -- jobs --------------------------------------------------------------------------------------------------

    async def insert_job(self, db: Db, row: Mapping[str, Any]) -> None:
        await db.execute(
            f"INSERT INTO ctx_jobs ({_JOB_COLUMNS}) VALUES (:id, :tenant, :kind, :status, :connectors, :completed, "
            ":total, :current_connector, :documents_processed, :started_at, :finished_at, :heartbeat_at, :owner, "
            ":stop_requested, :error)",
            row,
        )

    async def update_job(self, db: Db, job_id: str, values: Mapping[str, Any]) -> None:
        sets = ", ".join(f"{key} = :{key}" for key in values)
        await db.execute(f"UPDATE ctx_jobs SET {sets} WHERE id = :id", {**values, "id": job_id})

    async def get_job(self, db: Db, job_id: str) -> dict[str, Any] | None:
        return await db.fetch_one(f"SELECT {_JOB_COLUMNS} FROM ctx_jobs WHERE id = :id", {"id": job_id})

    async def jobs_of(self, db: Db, tenant: str, statuses: Sequence[str], limit: int = 1) -> list[dict[str, Any]]:
        clause, params = _in("s", list(statuses))
        return await db.fetch_all(
            f"SELECT {_JOB_COLUMNS} FROM ctx_jobs WHERE tenant = :tenant AND status IN {clause} "
            "ORDER BY started_at DESC LIMIT :limit",
            {"tenant": tenant, "limit": limit, **params},
        )

    # -- settings, result sets, secrets ------------------------------------------------------------------------

    async def settings_of(self, db: Db, tenant: str) -> dict[str, Any]:
        """The settings ``tenant`` changed, by dotted name (values are stored as ``{"v": value}``)."""
        rows = await db.fetch_all("SELECT name, value FROM ctx_settings WHERE tenant = :tenant", {"tenant": tenant})
        return {row["name"]: row["value"]["v"] for row in rows}

    async def save_settings(self, tx: Transaction, tenant: str, values: Mapping[str, Any], now: Any) -> None:
        """Store ``values`` (by dotted name) for ``tenant``; a ``None`` value goes back to the default."""
        for name, value in values.items():
            await tx.execute(
                "DELETE FROM ctx_settings WHERE tenant = :tenant AND name = :name", {"tenant": tenant, "name": name}
            )
            if value is not None:
                await tx.execute(
                    "INSERT INTO ctx_settings (tenant, name, value, updated_at) VALUES (:tenant, :name, :value, :now)",
                    {"tenant": tenant, "name": name, "value": {"v": value}, "now": now},
                )

    async def insert_result_set(self, store: RelationalStore, row: Mapping[str, Any], now: Any) -> None:
        """Keep a ranked result list for its cursor (and drop the expired ones)."""
        async with store.transaction() as tx:
            await tx.execute("DELETE FROM ctx_result_sets WHERE expires_at < :now", {"now": now})
            await tx.execute(
                "INSERT INTO ctx_result_sets (id, tenant, results, created_at, expires_at) "
                "VALUES (:id, :tenant, :results, :created_at, :expires_at)",
                row,
            )

    async def result_set(self, db: Db, set_id: str) -> dict[str, Any] | None:
        return await db.fetch_one(
            "SELECT id, tenant, results, created_at, expires_at FROM ctx_result_sets WHERE id = :id", {"id": set_id}
        )

    async def secret(self, db: Db, name: str, fresh: str) -> str:
        """The stored secret ``name``; ``fresh`` is stored first when there is none (the first process wins)."""
        await db.execute(
            "INSERT INTO ctx_secrets (name, value) VALUES (:name, :value) ON CONFLICT (name) DO NOTHING",
            {"name": name, "value": fresh},
        )
        row = await db.fetch_one("SELECT value FROM ctx_secrets WHERE name = :name", {"name": name})
        assert row is not None
        return str(row["value"])
