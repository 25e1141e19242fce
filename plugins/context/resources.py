"""``engine://files/<path>``: the indexed file system as MCP resources.

``resources/list`` pages through every indexed file of the caller's connectors; reading a directory URI
(``engine://files/src/``, or ``engine://files/`` for the top) returns its entries as JSON; reading a file returns
its text with its MIME type. Files are read through their connector, which refuses ``..``, absolute paths, links out
of the root, paths through a linked directory and binaries. When several connectors hold the same path, the oldest
connector's file is served, and listed (once).
Only file-shaped connectors are browsed: issues, tickets and threads of hosted connectors are found with
``context.search`` and ``context.get_related_info`` (their results carry the document's URL).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from gateway.api import (
    CallContext,
    Forbidden,
    IncrementalConnector,
    NotFound,
    ResourceContent,
    ResourceEntry,
    ResourcePage,
)
from gateway_plugins.context.file_connector import safe_relative_path
from gateway_plugins.context.service import DEFAULT_TENANT, ContextService

__all__ = ["PREFIX", "list_files", "read_path"]

PREFIX = "engine://files/"


def tenant_of(ctx: CallContext) -> str:
    return ctx.principal.tenant or DEFAULT_TENANT


def uri_of(path: str) -> str:
    return PREFIX + quote(path, safe="/")


async def file_connectors(service: ContextService, tenant: str) -> list[dict[str, Any]]:
    """The caller's file-shaped connectors (hosted ones have no file system to browse)."""
    assert service.connectors is not None
    rows = await service.repo.list_connectors(service.store, tenant)
    return [row for row in rows if not isinstance(await service.connectors.instance(row), IncrementalConnector)]


async def list_files(service: ContextService, cursor: str | None, ctx: CallContext) -> ResourcePage:
    """One page of indexed files, each path once: under the oldest connector holding it (the one that serves it).
    The cursor is ``<connector number>|<last path>``."""
    connectors = await file_connectors(service, tenant_of(ctx))
    number, after = 0, ""
    if cursor:
        head, _, after = cursor.partition("|")
        number = int(head) if head.isdigit() else 0
    size = service.config.resources_page
    entries: list[ResourceEntry] = []
    while number < len(connectors) and len(entries) < size:
        wanted = size - len(entries)
        rows = await service.repo.paths_under(service.store, connectors[number]["id"], "", after, wanted)
        paths = [row["path"] for row in rows]
        served: set[str] = set()  # the paths an older connector holds: read_path serves its copy
        for older in connectors[:number] if paths else []:
            served |= set(await service.repo.file_states(service.store, older["id"], paths))
        entries += [
            ResourceEntry(uri=uri_of(row["path"]), name=row["path"], size=row["size"], mime_type="text/plain")
            for row in rows
            if row["path"] not in served
        ]
        if len(rows) < wanted:
            number, after = number + 1, ""
        else:
            after = rows[-1]["path"]
    more = number < len(connectors)
    return ResourcePage(entries=entries, next_cursor=f"{number}|{after}" if more and entries else None)


async def read_path(service: ContextService, variables: Mapping[str, str], ctx: CallContext) -> ResourceContent:
    assert service.connectors is not None
    raw = unquote(variables.get("path", ""))
    path = safe_relative_path(raw) if raw.strip("/") else ""
    connectors = await file_connectors(service, tenant_of(ctx))
    if not connectors:
        raise NotFound("no connector is configured, so no file is indexed", details={"field": "uri"})
    prefix = f"{path}/" if path else ""
    children: dict[str, str] = {}
    for row in connectors:
        if path and await service.repo.file_by_path(service.store, row["id"], path) is not None:
            connector = await service.connectors.instance(row)
            content = await connector.read(path)
            return ResourceContent(text=content.text, mime_type=content.mime_type)
        for entry in await service.repo.paths_under(service.store, row["id"], prefix, "", 100_000):
            rest = entry["path"][len(prefix) :]
            head, slash, _ = rest.partition("/")
            children.setdefault(head, "directory" if slash else "file")
    if children:
        listing = [
            {"name": name, "type": kind, "uri": uri_of(prefix + name) + ("/" if kind == "directory" else "")}
            for name, kind in sorted(children.items())
        ]
        return ResourceContent(text=json.dumps({"directory": path or "/", "entries": listing}, indent=1))
    for row in connectors:  # not indexed: say why (escape, binary, ignored...) or that it does not exist
        connector = await service.connectors.instance(row)
        try:
            await connector.read(path)
        except NotFound:
            continue
        except Forbidden:
            raise
        raise NotFound(
            f"{path!r} exists but is not indexed yet: run context.index_control start",
            details={"field": "uri", "path": path},
        )
    raise NotFound(f"no indexed file or directory {path!r}", details={"field": "uri", "path": path})
