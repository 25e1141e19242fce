"""Connector records (persisted per tenant) and their live instances, built through the host's provider door.

A connector row keeps ``type``, ``name`` and the type's options; the instance is built with
``PackContext.instantiate("connector", type, options)``, so any installed connector plugin works the same way as
the built-in ``file``.

A connector has two ids. ``public_id`` is the one its tenant sees and addresses: ``<type>-<slugged name>`` (a number
is appended when taken), unique within the tenant, so two tenants may each have a ``file-backend`` and neither can
tell the other exists. ``id`` is the internal key that files, chunks, vectors and the search index refer to: unique
across tenants (the public id with a random suffix) and never shown. Every lookup goes through the caller's tenant,
so one tenant never sees or touches another's connectors.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from gateway.api import (
    CONNECTOR,
    Connector,
    NotFound,
    PackContext,
    RelationalStore,
    StoreIntegrityError,
    ToolError,
    ValidationFailed,
)
from gateway_plugins.context.repository import Repository
from gateway_plugins.context.tenant_policy import TenantConnectorPolicy

__all__ = ["ConnectorRegistry", "split_config"]

_RESERVED = ("type", "name")


def split_config(config: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(type, name, the type's options) of a ``connector_config``; a missing field is a validation error."""
    errors = []
    kind, name = config.get("type"), config.get("name")
    if not isinstance(kind, str) or not kind:
        errors.append({"field": "connector_config.type", "message": "required: a connector type such as 'file'"})
    if not isinstance(name, str) or not name.strip():
        errors.append({"field": "connector_config.name", "message": "required: a name for the connector"})
    if errors:
        raise ValidationFailed("; ".join(f"{e['field']}: {e['message']}" for e in errors), details={"errors": errors})
    options = {k: v for k, v in config.items() if k not in _RESERVED}
    return str(kind), str(name).strip(), options


def _name_taken(name: str) -> ToolError:
    return ToolError(
        f"a connector named {name!r} already exists",
        code="conflict",
        http_status=409,
        details={"errors": [{"field": "connector_config.name", "message": "already exists"}]},
    )


def _prefixed(error: ValidationFailed) -> ValidationFailed:
    """The instantiation error with fields named from the tool's point of view (``connector_config.root``)."""
    errors = [dict(e, field=f"connector_config.{e['field']}") for e in error.details.get("errors", [])]
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or error.message
    return ValidationFailed(f"invalid connector_config: {summary}", details={"errors": errors})


class ConnectorRegistry:
    def __init__(self, context: PackContext, store: RelationalStore, repo: Repository) -> None:
        self.context = context
        self.store = store
        self.repo = repo
        self._instances: dict[str, tuple[str, Connector]] = {}

    def build(self, kind: str, options: Mapping[str, Any]) -> Connector:
        """A connector instance (validated options); bad options name the field."""
        try:
            return self.context.instantiate(CONNECTOR, kind, options)
        except ValidationFailed as exc:
            raise _prefixed(exc) from None
        except NotFound as exc:
            raise ValidationFailed(
                f"connector_config.type: {exc.message}",
                details={"errors": [{"field": "connector_config.type", "message": exc.message}]},
            ) from None

    async def instance(self, row: Mapping[str, Any]) -> Connector:
        """The live instance of a stored connector (rebuilt when its config changed)."""
        key = repr(sorted(row["config"].items()))
        cached = self._instances.get(row["id"])
        if cached is not None and cached[0] == key:
            return cached[1]
        if cached is not None:
            await cached[1].aclose()
        connector = self.build(row["type"], row["config"])
        self._instances[row["id"]] = (key, connector)
        return connector

    async def get(self, tenant: str, connector_id: str) -> dict[str, Any]:
        """The tenant's connector with the public id ``connector_id`` (:class:`NotFound` otherwise)."""
        row = await self.repo.connector_by_public_id(self.store, tenant, connector_id)
        if row is None:
            raise NotFound(
                f"no connector {connector_id!r}",
                details={"field": "connector_id", "connector_id": connector_id},
            )
        return row

    async def new_id(self, tenant: str, kind: str, name: str) -> tuple[str, str]:
        """(public id, internal id) for a new connector of ``tenant``."""
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "source"
        base = f"{kind}-{slug}"[:100]
        candidate, number = base, 1
        while await self.repo.connector_by_public_id(self.store, tenant, candidate) is not None:
            number += 1
            candidate = f"{base}-{number}"
        return candidate, f"{candidate}~{secrets.token_hex(6)}"

    async def add(
        self,
        tenant: str,
        config: Mapping[str, Any],
        *,
        origin: str = "tool",
        policy: TenantConnectorPolicy | None = None,
    ) -> dict[str, Any]:
        """Store a new connector of ``tenant``; ``policy``: what it may name (None: anything, as config may)."""
        kind, name, options = split_config(config)
        if policy is not None:
            policy.check(tenant, options)  # before building: a refused secret is never looked up
        connector = self.build(kind, options)  # validates before anything is stored
        await connector.aclose()
        if await self.repo.connector_by_name(self.store, tenant, name) is not None:
            raise _name_taken(name)
        now = datetime.now(UTC)
        public_id, internal_id = await self.new_id(tenant, kind, name)
        row = {
            "id": internal_id,
            "public_id": public_id,
            "tenant": tenant,
            "type": kind,
            "name": name,
            "config": _jsonable(options),
            "origin": origin,
            "status": "configured",
            "created_at": now,
            "updated_at": now,
            "last_sync": None,
            "last_error": None,
            "documents": 0,
            "skipped": {},
        }
        try:
            await self.repo.insert_connector(self.store, row)
        except StoreIntegrityError:  # the same name (or id) added concurrently
            raise _name_taken(name) from None
        return row

    async def update(
        self,
        tenant: str,
        connector_id: str,
        config: Mapping[str, Any],
        *,
        policy: TenantConnectorPolicy | None = None,
    ) -> tuple[dict, bool]:
        """Apply a new name and/or options; returns (row, whether the indexed content may change). ``policy``: what
        the connector may name once changed (None: anything)."""
        row = await self.get(tenant, connector_id)
        kind = config.get("type", row["type"])
        if kind != row["type"]:
            raise ValidationFailed(
                "a connector's type cannot change; remove it and add a new one",
                details={"errors": [{"field": "connector_config.type", "message": "cannot change"}]},
            )
        name = config.get("name", row["name"])
        problem = "must be a string" if not isinstance(name, str) else "must not be empty" if not name.strip() else ""
        if problem:
            raise ValidationFailed(
                f"connector_config.name: {problem}",
                details={"errors": [{"field": "connector_config.name", "message": problem}]},
            )
        name = name.strip()
        clash = await self.repo.connector_by_name(self.store, tenant, name)
        if clash is not None and clash["id"] != row["id"]:
            raise _name_taken(name)
        options = {k: v for k, v in config.items() if k not in _RESERVED}
        merged = {**row["config"], **_jsonable(options)}
        if policy is not None:
            policy.check(tenant, merged)
        connector = self.build(kind, merged)
        await connector.aclose()
        values = {"name": name, "config": merged, "updated_at": datetime.now(UTC)}
        await self.repo.update_connector(self.store, row["id"], values)
        return {**row, **values}, merged != row["config"]

    async def remove(self, tenant: str, connector_id: str) -> list[str]:
        """Delete the connector and its indexed files; returns the removed chunk ids (for the vector store)."""
        internal = (await self.get(tenant, connector_id))["id"]
        async with self.store.transaction() as tx:
            files = await tx.fetch_all("SELECT id FROM ctx_files WHERE connector_id = :c", {"c": internal})
            removed = await self.repo.remove_files(tx, [f["id"] for f in files])
            await tx.execute("DELETE FROM ctx_connectors WHERE id = :id", {"id": internal})
        cached = self._instances.pop(internal, None)
        if cached is not None:
            await cached[1].aclose()
        return removed

    async def aclose(self) -> None:
        for _, connector in self._instances.values():
            await connector.aclose()
        self._instances.clear()


def _jsonable(options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: (str(v) if not isinstance(v, str | int | float | bool | list | dict | type(None)) else v)
        for k, v in options.items()
    }
