"""What the ``qdrant-edge`` store's owner and its clients say to each other over the local socket.

Each request is ``{"id": n, "op": name, "args": {...}}`` and each answer ``{"id": n, "ok": result}`` or
``{"id": n, "error": {"kind", "message"}}``; answers may come in any order. The owner greets each connection
with :func:`hello` before anything else.

A client checks what it sends the way the store would (ids, payloads, vectors, filters, limits), so a caller gets
the same :class:`ValueError` as from a local store and nothing JSON would change (a NaN payload, a set) ever
travels; the owner checks again what only it can (dimensions, collections).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from gateway.api import (
    Filter,
    ProviderUnavailable,
    ScoredPoint,
    ServiceUnavailable,
    VectorPoint,
    canonical_point_id,
    check_limit_and_offset,
    checked_payload,
    filter_conditions,
)
from gateway_plugins.vector_stores.common import (
    StoreClosed,
    checked_array,
)
from gateway_plugins.vector_stores.edge_shard import CollectionInfo
from gateway_plugins.vector_stores.edge_sync import SyncEdgeStore

log = structlog.get_logger(__name__)

PROTOCOL = 1
"""Bumped whenever a message changes: an owner and a client of different versions refuse each other."""

Handler = Callable[[SyncEdgeStore, dict[str, Any]], Any]


class OwnerGone(ConnectionError):
    """The process that owns the store closed the connection (it exited, was killed, or is closing the store)."""


class IncompatibleOwner(ConnectionError):
    """The process behind the socket speaks another protocol version, or serves another directory."""


class OwnerUnavailable(ServiceUnavailable, ProviderUnavailable):
    """The store cannot be reached: its owner does not answer, or no process took it over in time.

    A :class:`ProviderUnavailable` where a provider is being built (start-up), and a retryable
    ``service_unavailable`` tool error where a tool call meets it, so an assistant sees this message.
    """

    def __init__(self, provider: str, reason: str) -> None:
        message = f"{provider}: {reason}"
        Exception.__init__(self, message)  # the two bases' constructors do not cooperate
        self.message = message
        self.details = {"provider": provider, "retry_after": 1}
        self.provider = provider
        self.reason = reason


def hello(directory: Path) -> dict[str, Any]:
    """The owner's greeting: protocol version, its pid, and which directory it serves (by device and inode)."""
    info = os.stat(directory)
    return {"protocol": PROTOCOL, "pid": os.getpid(), "dev": info.st_dev, "ino": info.st_ino}


def check_hello(message: Any, directory: Path) -> int:
    """The owner's pid, once its greeting shows it speaks this protocol about ``directory``."""
    if not isinstance(message, dict) or message.get("protocol") != PROTOCOL:
        got = message.get("protocol") if isinstance(message, dict) else message
        raise IncompatibleOwner(f"the store's owner speaks protocol {got!r}, this process {PROTOCOL}")
    info = os.stat(directory)
    if (message.get("dev"), message.get("ino")) != (info.st_dev, info.st_ino):
        raise IncompatibleOwner(f"the process behind the socket serves another directory than {directory}")
    return int(message["pid"])


# -- what a client sends ------------------------------------------------------------------------------------------


def _vector(name: str, vector: Sequence[float]) -> np.ndarray:
    return np.ascontiguousarray(checked_array(name, vector, None))


def upsert_args(name: str, points: Sequence[VectorPoint]) -> dict[str, Any]:
    wire = []
    for point in points:
        point_id = canonical_point_id(point.id)
        wire.append([point_id, _vector(name, point.vector), checked_payload(point_id, point.payload)])
    return {"name": name, "points": wire}


def filter_args(filter: Filter | None) -> dict[str, list[Any]] | None:
    found = filter_conditions(filter)
    return {c.key: list(c.values) for c in found} if found else None


def query_args(
    name: str, vector: Sequence[float], limit: int, offset: int, score_threshold: float | None, filter: Filter | None
) -> dict[str, Any]:
    check_limit_and_offset(limit, offset)
    return {
        "name": name,
        "vector": _vector(name, vector),
        "limit": limit,
        "offset": offset,
        "score_threshold": score_threshold,
        "filter": filter_args(filter),
    }


def scored(raw: list[list[Any]]) -> list[ScoredPoint]:
    return [ScoredPoint(id=point_id, score=score, payload=payload) for point_id, score, payload in raw]


def collection_info(raw: Mapping[str, Any]) -> CollectionInfo:
    return CollectionInfo(**raw)


# -- what the owner does with it ----------------------------------------------------------------------------------


def _upsert(store: SyncEdgeStore, args: dict[str, Any]) -> None:
    points = [VectorPoint(point_id, vector, payload) for point_id, vector, payload in args["points"]]
    store.upsert(args["name"], points)


def _query(store: SyncEdgeStore, args: dict[str, Any]) -> list[list[Any]]:
    found = store.query(
        args["name"], args["vector"], args["limit"], args["offset"], args["score_threshold"], args["filter"]
    )
    return [[p.id, p.score, p.payload] for p in found]


HANDLERS: Mapping[str, Handler] = {
    "ensure_collection": lambda s, a: s.ensure_collection(a["name"], a["dimension"], a["indexed_fields"]),
    "list_collections": lambda s, a: s.list_collections(),
    "delete_collection": lambda s, a: s.delete_collection(a["name"]),
    "upsert": _upsert,
    "delete": lambda s, a: s.delete(a["name"], a["ids"]),
    "query": _query,
    "count": lambda s, a: s.count(a["name"], a["filter"]),
    "list_ids": lambda s, a: s.list_ids(a["name"], a["filter"]),
    "flush": lambda s, a: s.flush(),
    "optimize": lambda s, a: s.optimize(a["name"]),
    "info": lambda s, a: dataclasses.asdict(s.info(a["name"])),
}
"""Each operation as a blocking call on the owner's :class:`SyncEdgeStore`, returning what JSON can hold."""


ARGUMENTS: Mapping[str, frozenset[str]] = {
    "ensure_collection": frozenset({"name", "dimension", "indexed_fields"}),
    "list_collections": frozenset(),
    "delete_collection": frozenset({"name"}),
    "upsert": frozenset({"name", "points"}),
    "delete": frozenset({"name", "ids"}),
    "query": frozenset({"name", "vector", "limit", "offset", "score_threshold", "filter"}),
    "count": frozenset({"name", "filter"}),
    "list_ids": frozenset({"name", "filter"}),
    "flush": frozenset(),
    "optimize": frozenset({"name"}),
    "info": frozenset({"name"}),
}


def checked_request(request: Any) -> tuple[str, dict[str, Any]]:
    """The operation and arguments of a request; :class:`ValueError` for anything a client of ours never sends."""
    op = request.get("op") if isinstance(request, dict) else None
    if op not in HANDLERS:
        raise ValueError(f"unknown vector store operation {op!r}")
    args = request.get("args")
    if not isinstance(args, dict) or not ARGUMENTS[op] <= args.keys():
        missing = sorted(ARGUMENTS[op] - (args.keys() if isinstance(args, dict) else set()))
        raise ValueError(f"a {op} request lacks {', '.join(missing) or 'its arguments'}")
    return op, args


def runs_short(store: SyncEdgeStore, op: str, args: dict[str, Any]) -> bool:
    """Whether the owner may run this request on its server thread rather than a worker thread."""
    if op == "query":
        return store.runs_short(args["name"])
    if op == "upsert":
        return store.runs_short(args["name"], len(args["points"]))
    return False


# -- errors -------------------------------------------------------------------------------------------------------


def encode_error(exc: BaseException, op: str) -> dict[str, str]:
    """What the client needs of an exception: its kind (the built-in type a caller catches) and its message."""
    if isinstance(exc, LookupError):
        kind = "lookup"
    elif isinstance(exc, ValueError):
        kind = "value"
    elif isinstance(exc, StoreClosed):
        kind = "closed"
    elif isinstance(exc, ProviderUnavailable):
        kind = "unavailable"
    else:
        kind = "internal"
        log.error("vector store request from another process failed", op=op, exc_info=exc)
    return {"kind": kind, "message": str(exc)}


def decode_error(error: Mapping[str, Any], owner_pid: int, provider: str) -> Exception:
    """The exception a local store would have raised (``OwnerGone`` when the owner is closing the store)."""
    kind, message = error.get("kind"), str(error.get("message"))
    if kind == "lookup":
        return LookupError(message)
    if kind == "value":
        return ValueError(message)
    if kind == "closed":
        return OwnerGone(f"the store's owner (pid {owner_pid}) is closing it")
    if kind == "unavailable":
        return ProviderUnavailable(provider, f"the store's owner (pid {owner_pid}): {message}")
    return RuntimeError(f"the vector store failed in its owner process (pid {owner_pid}): {message}")
