"""The ``qdrant`` vector store: ``qdrant-client``'s ``AsyncQdrantClient`` against a Qdrant server or cluster.

Several gateways may share one server (the way to run replicas, or two assistants on one machine). Every request is
bounded by ``timeout``: a server that is down, unreachable or silent gives :class:`gateway.api.ProviderUnavailable`
with the URL and the cause, never a hang. Local mode (``location = ":memory:"`` or ``path``) runs the same code on
qdrant-client's embedded brute-force engine, which ignores index settings.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import grpc
import httpx
import structlog
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from gateway.api import (
    Filter,
    ProviderContext,
    ProviderUnavailable,
    ScoredPoint,
    VectorPoint,
    canonical_point_id,
    check_limit_and_offset,
    filter_conditions,
)
from gateway.api.vectors import FieldType
from gateway_plugins.vector_stores.common import (
    CollectionNotFound,
    DimensionMismatch,
    StoreClosed,
    checked_points,
    checked_vector,
    decode_name,
    encode_name,
)
from gateway_plugins.vector_stores.qdrant_config import (
    DEFAULT_URL,
    QdrantConfig,
    collection_settings,
    qdrant_filter,
    schema_of,
    search_params,
)

log = structlog.get_logger(__name__)

PROVIDER = "vector_store/qdrant"
_SCROLL_PAGE = 1024
_UNAVAILABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL})
_CHECK = " (is the server up, and are url / grpc_port in [plugins.vector_store.qdrant] right?)"
_REFUSED = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


class QdrantStore:
    """:class:`gateway.api.VectorStore` on a Qdrant server (or qdrant-client's local mode)."""

    def __init__(self, config: QdrantConfig | None = None, *, provider: str = PROVIDER) -> None:
        self.config = config or QdrantConfig()
        self._provider = provider
        self._where = self.config.target()
        self._deadline = self.config.timeout * 2 + 1  # the client's own timeout fires first; this is the backstop
        self._params = search_params(self.config)
        self._dimensions: dict[str, int] = {}
        self._closed = False
        self._client = self._connect()

    def _connect(self) -> AsyncQdrantClient:
        c = self.config
        if c.location is not None:
            return AsyncQdrantClient(location=c.location)
        if c.path is not None:
            try:
                return AsyncQdrantClient(path=str(c.path))
            except RuntimeError as exc:  # portalocker: another process has the folder
                raise ProviderUnavailable(
                    self._provider,
                    f"the local Qdrant folder {c.path} is in use by another process ({exc}); point this gateway at "
                    "another path or use a Qdrant server (url)",
                ) from exc
        api_key = c.api_key.get_secret_value() if c.api_key is not None else None
        return AsyncQdrantClient(
            url=c.url or DEFAULT_URL,
            api_key=api_key,
            timeout=c.timeout,
            prefer_grpc=c.prefer_grpc,
            grpc_port=c.grpc_port,
            check_compatibility=c.check_compatibility,
        )

    # -- error translation -------------------------------------------------------------------------------------

    @asynccontextmanager
    async def _calling(self, name: str | None = None) -> AsyncIterator[None]:
        """Bound a client call in time and turn transport and server errors into the protocol's errors."""
        if self._closed:
            raise StoreClosed("the qdrant store is closed")
        try:
            with anyio.fail_after(self._deadline):
                yield
        except TimeoutError:
            raise self._unavailable(f"no answer within {self._deadline} s") from None
        except UnexpectedResponse as exc:
            raise self._http_error(exc, name) from exc
        except ResponseHandlingException as exc:
            raise self._unavailable(_describe(exc.source) + _CHECK) from exc
        except httpx.TransportError as exc:
            raise self._unavailable(_describe(exc) + _CHECK) from exc
        except grpc.RpcError as exc:
            raise self._grpc_error(exc, name) from exc

    def _unavailable(self, reason: str) -> ProviderUnavailable:
        return ProviderUnavailable(self._provider, f"cannot use {self._where}: {reason}")

    def _http_error(self, exc: UnexpectedResponse, name: str | None) -> Exception:
        status = exc.status_code or 0
        detail = _server_message(exc)
        if status == 404 and name is not None:
            self._dimensions.pop(name, None)
            return CollectionNotFound(name)
        if status in (401, 403):
            return self._unavailable(f"the server refused the API key (HTTP {status}); check api_key")
        if 400 <= status < 500:
            return ValueError(f"{self._where} rejected the request (HTTP {status}): {detail}")
        return self._unavailable(f"HTTP {status}: {detail}")

    def _grpc_error(self, exc: grpc.RpcError, name: str | None) -> Exception:
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        detail = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
        if code == grpc.StatusCode.NOT_FOUND and name is not None:
            self._dimensions.pop(name, None)
            return CollectionNotFound(name)
        if code in _REFUSED:
            return self._unavailable(f"the server refused the API key ({code.name}); check api_key")
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            return ValueError(f"{self._where} rejected the request: {detail}")
        if code in _UNAVAILABLE or code is None:
            return self._unavailable(f"{code.name if code else 'gRPC error'}: {detail}{_CHECK}")
        return self._unavailable(f"{code.name}: {detail}")

    # -- collections -------------------------------------------------------------------------------------------

    def _server_name(self, name: str) -> str:
        return self.config.collection_prefix + encode_name(name, max_length=255 - len(self.config.collection_prefix))

    async def _dimension(self, name: str) -> int:
        """The dimension of collection ``name`` (asked once, then remembered)."""
        known = self._dimensions.get(name)
        if known is not None:
            return known
        server_name = self._server_name(name)
        async with self._calling(name):
            if not await self._client.collection_exists(server_name):
                raise CollectionNotFound(name)
            info = await self._client.get_collection(server_name)
        vectors = info.config.params.vectors
        if not isinstance(vectors, models.VectorParams):
            raise ValueError(f"collection {name!r} on {self._where} has named vectors; it was not made by a gateway")
        self._dimensions[name] = vectors.size
        return vectors.size

    async def ensure_collection(
        self, name: str, *, dimension: int, indexed_fields: Mapping[str, FieldType] | None = None
    ) -> None:
        """Create the collection if missing; :class:`ValueError` if it exists with another dimension."""
        if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
            raise ValueError(f"a collection's dimension is a positive integer, got {dimension!r}")
        fields = {field: schema_of(field, kind) for field, kind in (indexed_fields or {}).items()}
        server_name = self._server_name(name)
        try:
            existing = await self._dimension(name)
        except CollectionNotFound:
            existing = None
        if existing is None:
            async with self._calling(name):
                try:
                    await self._client.create_collection(server_name, **collection_settings(self.config, dimension))
                    log.info("vector collection created", collection=name, dimension=dimension, where=self._where)
                except UnexpectedResponse as exc:
                    if exc.status_code != 409:  # 409: another gateway created it meanwhile; check it as any other
                        raise
                except grpc.RpcError as exc:
                    if exc.code() != grpc.StatusCode.ALREADY_EXISTS:
                        raise
            existing = await self._dimension(name)
        if existing != dimension:
            raise DimensionMismatch(name, existing, dimension, what="collection being ensured")
        if fields:
            async with self._calling(name):
                schema = (await self._client.get_collection(server_name)).payload_schema or {}
                for field, kind in fields.items():
                    current = schema.get(field)
                    if current is not None and current.data_type == kind:
                        continue
                    if current is not None:
                        await self._client.delete_payload_index(server_name, field, wait=True)
                    await self._client.create_payload_index(server_name, field, field_schema=kind, wait=True)

    async def list_collections(self) -> list[str]:
        async with self._calling():
            response = await self._client.get_collections()
        prefix = self.config.collection_prefix
        names = []
        for description in response.collections:
            if description.name.startswith(prefix):
                try:
                    names.append(decode_name(description.name[len(prefix) :]))
                except ValueError:  # not one of ours (an x-- name that is not hex)
                    continue
        return sorted(names)

    async def delete_collection(self, name: str) -> None:
        self._dimensions.pop(name, None)
        async with self._calling(name):
            server_name = self._server_name(name)
            if await self._client.collection_exists(server_name):
                await self._client.delete_collection(server_name)
                log.info("vector collection deleted", collection=name, where=self._where)

    # -- points ------------------------------------------------------------------------------------------------

    async def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        checked = checked_points(name, points, await self._dimension(name))
        if not checked:
            return
        structs = [models.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in checked]
        async with self._calling(name):
            await self._client.upsert(self._server_name(name), points=structs, wait=True)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        canonical = [canonical_point_id(i) for i in ids]
        await self._dimension(name)  # a missing collection is an error, as for every other operation
        if not canonical:
            return
        async with self._calling(name):
            await self._client.delete(
                self._server_name(name), points_selector=models.PointIdsList(points=list(canonical)), wait=True
            )

    async def query(
        self,
        name: str,
        vector: Sequence[float],
        *,
        limit: int = 10,
        offset: int = 0,
        score_threshold: float | None = None,
        filter: Filter | None = None,
    ) -> list[ScoredPoint]:
        """Closest points first (cosine similarity, re-scored with the original vectors)."""
        check_limit_and_offset(limit, offset)
        query_filter = qdrant_filter(filter_conditions(filter))
        checked = checked_vector(name, vector, await self._dimension(name))
        if limit == 0:
            return []
        async with self._calling(name):
            response = await self._client.query_points(
                self._server_name(name),
                query=checked,
                limit=limit,
                offset=offset or None,
                query_filter=query_filter,
                score_threshold=score_threshold,
                search_params=self._params,
                with_payload=True,
                with_vectors=False,
            )
        return [ScoredPoint(id=_id(p.id), score=float(p.score), payload=p.payload or {}) for p in response.points]

    async def count(self, name: str, *, filter: Filter | None = None) -> int:
        count_filter = qdrant_filter(filter_conditions(filter))
        await self._dimension(name)
        async with self._calling(name):
            result = await self._client.count(self._server_name(name), count_filter=count_filter, exact=True)
        return int(result.count)

    async def list_ids(self, name: str, *, filter: Filter | None = None) -> list[str]:
        scroll_filter = qdrant_filter(filter_conditions(filter))
        await self._dimension(name)
        ids: list[str] = []
        offset = None
        while True:
            async with self._calling(name):
                records, offset = await self._client.scroll(
                    self._server_name(name),
                    scroll_filter=scroll_filter,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=False,
                    with_vectors=False,
                )
            ids.extend(_id(r.id) for r in records)
            if offset is None:
                return ids

    async def flush(self) -> None:
        """Nothing to do: every write waits for the server to apply it (``wait=True``)."""
        if self._closed:
            raise StoreClosed("the qdrant store is closed")

    async def close(self) -> None:
        """Close the client (and release a local folder). Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            with anyio.fail_after(self._deadline):
                await self._client.close()
        except Exception:
            log.warning("closing the qdrant client failed", where=self._where, exc_info=True)


def _id(point_id: object) -> str:
    return str(uuid.UUID(str(point_id)))


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _server_message(exc: UnexpectedResponse) -> str:
    try:
        body = exc.structured()
        return str(body.get("status", {}).get("error") or body)
    except Exception:
        return exc.content[:200].decode("utf-8", "replace")


def create_qdrant_store(ctx: ProviderContext) -> QdrantStore:
    """Factory of the ``qdrant`` provider (a relative local ``path`` lives under the provider's data dir)."""
    config = ctx.config if isinstance(ctx.config, QdrantConfig) else QdrantConfig()
    if config.path is not None and not config.path.is_absolute():
        config = config.model_copy(update={"path": Path(ctx.data_dir) / config.path})
    return QdrantStore(config, provider=f"{ctx.kind}/{ctx.name}")
