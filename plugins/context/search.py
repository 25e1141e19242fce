"""Search: the caller's connectors, filters, active file and dense candidates in; ranked chunks out.

:func:`rank` ranks chunk ids, :func:`results_of` turns ids into results: ``context.search`` (:func:`search`) does
both at once, the REST ``POST /search`` (:mod:`.pages`) ranks once and pages through the ranked ids."""

from __future__ import annotations

import asyncio
import posixpath
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

from gateway.api import ValidationFailed
from gateway_plugins.context.file_connector import safe_relative_path
from gateway_plugins.context.jobs import ACTIVE
from gateway_plugins.context.links import work_context_boosts, work_ticket_ids
from gateway_plugins.context.models import QueryMetadata, ResultMetadata, SearchInput, SearchOutput, SearchResult
from gateway_plugins.context.paths import is_secondary
from gateway_plugins.context.settings import search_settings

if TYPE_CHECKING:
    from gateway_plugins.context.service import ContextService

log = structlog.get_logger(__name__)

__all__ = ["Ranking", "connector_paths", "format_results", "rank", "results_of", "search"]

DENSE_DOWN = "-"
"""Marks a search whose dense part failed (the embedders or the vector store): it answered lexically."""
DENSE_MISSING = "?"
"""Prefixes the id of an embedder that has no vectors of the searched chunks (the index was built with another
embedder, or before collections were named by the exact id): the search answered lexically."""


async def _dense(service: ContextService, query: str, connector_ids: list[str]) -> tuple[dict[int, float], str | None]:
    """Cosine similarities of the nearest chunks (rows), and the embedder that served; empty when dense is off or
    every embedder is down (lexical search still answers)."""
    opts = service.config.ranking_options()
    if not service.config.embed or opts.dense_weight <= 0 or service.vectors is None or service.live is None:
        return {}, None
    try:
        skip = await service.incomplete_embedders()  # some files lack their vectors: they would be missed
        embedded = await service.context.embeddings().embed_query(query, skip=skip)
        points = await service.vectors.query(
            embedded.embedder_id, embedded.vector, limit=service.config.dense_candidates, connector_ids=connector_ids
        )
        if not points and await _lacks_vectors(service, embedded.embedder_id, connector_ids):
            log.warning("context.search.dense_vectors_missing", embedder=embedded.embedder_id)
            return {}, DENSE_MISSING + embedded.embedder_id
    except Exception as exc:  # documented fallback: a dense-side fault leaves the lexical and structural ranking
        log.warning("context.search.dense_unavailable", reason=f"{type(exc).__name__}: {exc}")
        return {}, DENSE_DOWN
    rows = service.live.index.row_by_chunk
    return {rows[p.id]: p.score for p in points if p.id in rows}, embedded.embedder_id


async def _lacks_vectors(service: ContextService, embedder_id: str, connector_ids: list[str]) -> bool:
    """Whether ``embedder_id`` has no vector at all for connectors whose index holds chunks it would embed."""
    assert service.vectors is not None and service.live is not None
    if await service.vectors.count(embedder_id, connector_ids):
        return False
    wanted, embed_all = set(connector_ids), service.config.embed_all
    return any(
        f.alive and f.rows and f.connector_id in wanted and (embed_all or not is_secondary(f.path))
        for f in service.live.index.files
    )


@dataclass(frozen=True)
class Ranking:
    """The ranked chunks of one query (ids and scores, best first) and what the query searched."""

    hits: list[tuple[str, float]]
    metadata: QueryMetadata


async def rank(
    service: ContextService, tenant: str, args: SearchInput, *, limit: int, reranking: bool = True
) -> Ranking:
    """The best ``limit`` chunks of ``tenant``'s connectors for ``args`` (the query, filters and active file).
    ``reranking`` false ranks by the fused lexical and dense scores alone (the tenant's ``enable_reranking``)."""
    started = time.perf_counter()
    live = service.live
    ranker = service.ranker if reranking else service.plain_ranker
    assert live is not None and ranker is not None
    await live.catch_up(max_age=service.config.refresh_seconds)
    index = live.index
    connectors = await service.repo.list_connectors(service.store, tenant)
    connector_ids = [c["id"] for c in connectors]
    filters = args.filters
    date_from = filters.date_range.from_ if filters and filters.date_range else None
    date_to = filters.date_range.to if filters and filters.date_range else None
    if date_from and date_to and date_from > date_to:
        raise ValidationFailed(
            "filters.date_range: 'from' is after 'to'",
            details={"errors": [{"field": "filters.date_range", "message": "'from' is after 'to'"}]},
        )

    def allowed() -> np.ndarray:
        return index.row_mask(
            connector_ids,
            source_types=filters.source_types if filters and filters.source_types else None,
            modified_from=date_from.timestamp() if date_from else None,
            modified_to=date_to.timestamp() if date_to else None,
        )

    active_row: int | None = None
    notes: list[str] = []
    if args.work_context and args.work_context.active_file:
        raw = args.work_context.active_file
        roots = await connector_roots(service, connectors) if looks_absolute(raw) else None
        paths = connector_paths(raw, connectors, "work_context.active_file", roots)
        if paths is None:
            notes.append(f"work_context.active_file {_shown(raw)} is under no connector's root: it was not used")
        for connector_id, active in (paths or {}).items():
            active_row = index.file_by_path.get((connector_id, active))
            if active_row is not None:
                break
    work = args.work_context
    tickets = work_ticket_ids(work.open_ticket_ids, work.git_branch) if work and reranking else []
    opts = service.config.ranking_options()
    boosts = await work_context_boosts(
        service.repo,
        service.store,
        index,
        connector_ids,
        tickets,
        ticket_boost=opts.ticket_boost,
        linked_file_boost=opts.linked_file_boost,
    )
    dense: dict[int, float] = {}
    embedder: str | None = None
    lexical = None
    if allowed().any():
        # The query is embedded on the embedder's threads while the lexical stages score on this one.
        pending = asyncio.create_task(_dense(service, args.query, connector_ids))
        try:
            await asyncio.sleep(0)
            lexical = ranker.lexical(args.query)
            dense, embedder = await pending
        finally:  # cancelled (the client went) or the lexical stage failed: the query is not embedded for nobody
            if not pending.cancel() and not pending.cancelled():
                pending.exception()  # retrieved: an error of a task that ended first is not logged as lost
    # From here to the ranking nothing awaits: an index job writing meanwhile cannot change the rows under it
    # (the mask is made now; a lexical score made before new rows arrived is made again by rank).
    mask = allowed()
    ranked = ranker.rank(
        args.query,
        limit=limit,
        allowed=mask,
        active_file=active_row,
        dense=dense,
        lexical=lexical,
        boost_files=boosts,
    )
    hits = [(index.chunks[r.row].id, round(r.score, 4)) for r in ranked]
    indexed = int(index.row_mask(connector_ids).sum())  # the filters may leave nothing: that is not "empty"
    status, note = await _index_status(service, tenant, connectors, indexed)
    if embedder == DENSE_DOWN:
        embedder = None
        notes.append("semantic (dense) retrieval is unavailable right now; results come from lexical ranking only")
    elif embedder is not None and embedder.startswith(DENSE_MISSING):
        notes.append(
            f"embedder {embedder[1:]!r} has no vectors of these sources yet (a job still embedding them, an "
            "embedder outage while indexing, or vectors made by another embedder); results come from lexical "
            "ranking only: when no job is running, gateway context index PATH --force (or context.index_control "
            "force_reindex) re-embeds them"
        )
        embedder = None
    note = "; ".join([note, *notes] if note else notes) or None
    metadata = QueryMetadata(
        execution_time_ms=int((time.perf_counter() - started) * 1000),
        sources_searched=len(connectors),
        chunks_searched=int(mask.sum()),
        embedder=embedder,
        index_status=status,
        note=note,
    )
    return Ranking(hits, metadata)


def _shown(path: str) -> str:
    return repr(path if len(path) <= 200 else f"{path[:200]}...")


def looks_absolute(raw: str) -> bool:
    """``/home/ada/shop/x.py`` or ``C:\\shop\\x.py``: what editors send."""
    return raw.startswith(("/", "\\")) or (len(raw) > 1 and raw[1] == ":")


async def connector_roots(service: ContextService, connectors: Sequence[dict[str, Any]]) -> dict[str, Path]:
    """Each directory connector's root as its instance resolved it (relative to the config file, ``~`` expanded,
    symlinks resolved), by internal id; a connector that cannot be built now is left out."""
    assert service.connectors is not None
    roots: dict[str, Path] = {}
    for row in connectors:
        if not (row.get("config") or {}).get("root"):
            continue
        try:
            root = getattr(await service.connectors.instance(row), "root", None)
        except Exception:  # its root is gone, say: no path is under it now
            continue
        if isinstance(root, Path):
            roots[row["id"]] = root
    return roots


def connector_paths(
    raw: str, connectors: Sequence[dict[str, Any]], field: str, roots: Mapping[str, Path] | None = None
) -> dict[str, str] | None:
    """The root-relative path under which each connector (by internal id, in the given order) would hold ``raw``.

    A relative path is the same for every connector. An absolute one (editors send them) counts for the connectors
    whose root contains it: the root as written (when absolute) or as resolved (``roots``, from
    :func:`connector_roots`), the path as written or with its symlinks resolved; ``None`` when no root does.
    :class:`ValidationFailed` naming ``field`` for a relative path that climbs out with ``..``."""
    text = raw.replace("\\", "/")
    if not looks_absolute(raw):
        try:
            relative = safe_relative_path(raw)
        except ValidationFailed as exc:
            raise ValidationFailed(
                f"{field}: {exc.message}", details={"errors": [{"field": field, "message": exc.message}]}
            ) from None
        return {row["id"]: relative for row in connectors}
    written = PurePosixPath(posixpath.normpath(text))
    try:
        resolved = PurePosixPath(Path(written).resolve().as_posix())
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: compare it as written only
        resolved = written
    found: dict[str, str] = {}
    for row in connectors:
        root = (row.get("config") or {}).get("root")
        if not isinstance(root, str) or not root:
            continue  # a hosted source: its documents have no place on a disk
        bases = [PurePosixPath(root)] if root.startswith("/") else []
        if roots and row["id"] in roots:
            bases.append(PurePosixPath(roots[row["id"]].as_posix()))
        for base in bases:
            inside = next((p for p in (written, resolved) if p != base and p.is_relative_to(base)), None)
            if inside is not None:
                found[row["id"]] = inside.relative_to(base).as_posix()
                break
    return found or None


async def results_of(service: ContextService, tenant: str, hits: list[tuple[str, float]]) -> list[SearchResult]:
    """The results of ranked chunks, with their text and metadata; a chunk removed since it was ranked (its file was
    re-indexed or its connector removed) is left out."""
    live = service.live
    assert live is not None
    index = live.index
    public = {c["id"]: c["public_id"] for c in await service.repo.list_connectors(service.store, tenant)}
    rows = [(index.row_by_chunk.get(chunk_id), score) for chunk_id, score in hits]
    kept = [(row, score) for row, score in rows if row is not None]
    ids = [index.chunks[row].id for row, _ in kept]
    contents = await service.repo.chunks_by_id(service.store, ids) if ids else {}
    files = [index.files[index.chunks[row].file_row] for row, _ in kept]
    hosted = sorted({entry.file_id for entry in files if entry.source_type != "file"})
    documents = await service.repo.documents_by_file(service.store, hosted) if hosted else {}
    results: list[SearchResult] = []
    limit = service.config.result_chars
    for row, score in kept:
        chunk = index.chunks[row]
        entry = index.files[chunk.file_row]
        stored: dict[str, Any] | None = contents.get(chunk.id)
        if stored is None or entry.connector_id not in public:  # removed since the ranking (another process too)
            continue
        content = stored["content"]
        if len(content) > limit:
            content = content[:limit] + "\n…"
        document = documents.get(entry.file_id) or {}
        results.append(
            SearchResult(
                source=f"{entry.source_type}://{entry.path}",
                content=content,
                score=score,
                metadata=ResultMetadata(
                    type=chunk.kind,
                    symbol=chunk.symbol,
                    lines=f"{chunk.start_line}-{chunk.end_line}",
                    language=entry.language,
                    last_modified=entry.last_modified_at,
                    connector_id=public[entry.connector_id],
                    path=entry.path,
                    source_type=entry.source_type,
                    title=document.get("title"),
                    url=document.get("url"),
                ),
            )
        )
    return results


async def search(service: ContextService, tenant: str, args: SearchInput) -> SearchOutput:
    """``context.search``: the best ``top_k`` results (the tenant's ``default_top_k`` when not given, at most its
    ``max_results``), with the tenant's search settings."""
    started = time.perf_counter()
    with service.search_stats.timed(tenant):
        settings = await search_settings(service, tenant)
        top_k = args.top_k if "top_k" in args.model_fields_set else settings.default_top_k
        ranking = await rank(
            service, tenant, args, limit=min(top_k, settings.max_results), reranking=settings.enable_reranking
        )
        results = await results_of(service, tenant, ranking.hits)
    metadata = ranking.metadata.model_copy(update={"execution_time_ms": int((time.perf_counter() - started) * 1000)})
    return SearchOutput(results=results, total_results=len(results), query_metadata=metadata)


async def _index_status(
    service: ContextService, tenant: str, connectors: list, searchable: int
) -> tuple[str, str | None]:
    """Tell "nothing matches" apart from "nothing is indexed (yet)"."""
    if not connectors:
        return "no_connectors", "no connector is configured: add one with context.connector_management"
    running = await service.repo.jobs_of(service.store, tenant, ACTIVE)  # one indexed read in the usual case
    active = await service.jobs.active(tenant) if running else None  # a job whose process died is expired first
    if active is not None:
        progress = f"{active['completed']}/{active['total']}"
        return "indexing", f"an indexing job is running ({progress} documents); results may be incomplete"
    if searchable == 0:
        return "empty", "nothing is indexed yet: run context.index_control with action 'start'"
    return "ready", None


def format_results(output: SearchOutput) -> str:
    """The results as text ready for an LLM's context window."""
    meta = output.query_metadata
    if not output.results:
        reason = f" ({meta.note})" if meta.note else ""
        return f"No results{reason}."
    lines = [f"{output.total_results} results ({meta.execution_time_ms} ms, {meta.chunks_searched} chunks searched)"]
    if meta.note:
        lines.append(f"Note: {meta.note}")
    for number, result in enumerate(output.results, 1):
        md = result.metadata
        what = f"{md.type} {md.symbol}" if md.symbol else md.type
        lines.append("")
        lines.append(f"[{number}] {md.path}:{md.lines} ({what}, {md.language}, score {result.score:.3f})")
        if md.title:
            lines.append(f"{md.source_type}: {md.title}" + (f" <{md.url}>" if md.url else ""))
        fence = "````" if "```" in result.content else "```"
        lines.append(f"{fence}{md.language if md.language not in ('text', 'rst', 'markdown') else ''}")
        lines.append(result.content)
        lines.append(fence)
    return "\n".join(lines)
