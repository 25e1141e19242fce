"""``POST /search`` with cursor pagination: one ranking per query, paged through with a signed, opaque cursor.

The first request ranks up to the tenant's ``search.max_results`` chunks and answers the first page. When more
remain, the ranked ids (chunk ids and scores, with the query's metadata) are kept in the store (``ctx_result_sets``,
for ``result_set_seconds``) and ``next_cursor`` points into them. Later pages read that list instead of ranking
again, so the pages of one query never overlap or skip a result whatever is indexed meanwhile (a result whose chunk
was removed since is left out), and any replica can serve them.

A cursor is ``<payload>.<signature>`` in base64url: the payload names the result set, the offset and a digest of
the query, its filters and work context; the signature is an HMAC-SHA256 of the caller's tenant and the payload
with a key kept in the store (``ctx_secrets``, shared by every replica). A cursor changed in any way, sent with
another query, filters or work context, sent by another tenant, or expired, is refused with 400 naming
``pagination.cursor``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gateway.api import ValidationFailed
from gateway_plugins.context.models import QueryMetadata, SearchInput
from gateway_plugins.context.rest_models import PageInfo, RestSearchInput, RestSearchOutput
from gateway_plugins.context.search import rank, results_of
from gateway_plugins.context.settings import search_settings

if TYPE_CHECKING:
    from gateway_plugins.context.service import ContextService

__all__ = ["CursorCodec", "query_digest", "search_page"]

CURSOR_FIELD = "pagination.cursor"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _refused(reason: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        f"{CURSOR_FIELD}: {message}",
        details={"errors": [{"field": CURSOR_FIELD, "message": message, "reason": reason}]},
    )


class CursorCodec:
    """Signs cursor payloads for a tenant and checks them."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("the cursor key needs at least 32 bytes")
        self._key = key

    def _signature(self, tenant: str, body: str) -> bytes:
        return hmac.new(self._key, f"{tenant}\n{body}".encode(), hashlib.sha256).digest()

    def encode(self, tenant: str, payload: dict[str, Any]) -> str:
        body = _b64(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
        return f"{body}.{_b64(self._signature(tenant, body))}"

    def decode(self, tenant: str, cursor: str) -> dict[str, Any]:
        """The payload of a cursor this deployment signed for ``tenant``; :class:`ValidationFailed` otherwise."""
        body, dot, signature = cursor.partition(".")
        try:
            valid = bool(dot) and hmac.compare_digest(_unb64(signature), self._signature(tenant, body))
            payload = json.loads(_unb64(body)) if valid else None
        except (ValueError, binascii.Error, UnicodeDecodeError):
            payload = None
        if not isinstance(payload, dict):
            raise _refused("invalid", "not a cursor this API issued to you (it was changed, or belongs to another)")
        return payload


def query_digest(args: SearchInput) -> str:
    """What a cursor is bound to: the query, its filters and work context (not the page size)."""
    bound = args.model_dump(mode="json", by_alias=True, include={"query", "filters", "work_context"})
    return hashlib.sha256(json.dumps(bound, sort_keys=True).encode()).hexdigest()[:32]


async def search_page(service: ContextService, tenant: str, args: RestSearchInput) -> RestSearchOutput:
    started = time.perf_counter()
    with service.search_stats.timed(tenant):
        settings = await search_settings(service, tenant)
        pagination = args.pagination
        if pagination is not None and pagination.limit is not None:
            size = pagination.limit
        else:
            size = args.top_k if "top_k" in args.model_fields_set else settings.default_top_k
        if pagination is not None and pagination.cursor:
            set_id, offset, hits, metadata = await _resume(service, tenant, args, pagination.cursor)
        else:
            ranking = await rank(service, tenant, args, limit=settings.max_results, reranking=settings.enable_reranking)
            set_id, offset, hits, metadata = None, 0, ranking.hits, ranking.metadata
        end = offset + size
        results = await results_of(service, tenant, hits[offset:end])
        next_cursor = None
        if end < len(hits):
            if set_id is None:
                set_id = await _keep(service, tenant, hits, metadata)
            payload = {"s": set_id, "o": end, "q": query_digest(args)}
            next_cursor = service.cursors.encode(tenant, payload)
    elapsed = int((time.perf_counter() - started) * 1000)
    return RestSearchOutput(
        results=results,
        pagination=PageInfo(has_more=next_cursor is not None, next_cursor=next_cursor, total_results=len(hits)),
        query_metadata=metadata.model_copy(update={"execution_time_ms": elapsed}),
    )


async def _keep(service: ContextService, tenant: str, hits: list[tuple[str, float]], metadata: QueryMetadata) -> str:
    now = datetime.now(UTC)
    set_id = secrets.token_hex(16)
    row = {
        "id": set_id,
        "tenant": tenant,
        "results": {"hits": [list(hit) for hit in hits], "metadata": metadata.model_dump(mode="json")},
        "created_at": now,
        "expires_at": now + timedelta(seconds=service.config.result_set_seconds),
    }
    await service.repo.insert_result_set(service.store, row, now)
    return set_id


async def _resume(
    service: ContextService, tenant: str, args: SearchInput, cursor: str
) -> tuple[str, int, list[tuple[str, float]], QueryMetadata]:
    payload = service.cursors.decode(tenant, cursor)
    set_id, offset = payload.get("s"), payload.get("o")
    if not isinstance(set_id, str) or not isinstance(offset, int) or offset < 0:
        raise _refused("invalid", "not a cursor this API issued to you (it was changed, or belongs to another)")
    if payload.get("q") != query_digest(args):
        raise _refused(
            "other_query",
            "this cursor belongs to another query: send the same query, filters and work_context as the first page",
        )
    row = await service.repo.result_set(service.store, set_id)
    if row is None or row["tenant"] != tenant or row["expires_at"] <= datetime.now(UTC):
        raise _refused("expired", "this cursor has expired: run the search again without a cursor")
    hits = [(str(chunk_id), float(score)) for chunk_id, score in row["results"]["hits"]]
    return set_id, offset, hits, QueryMetadata.model_validate(row["results"]["metadata"])
