"""Re-embedding stored items: fill in missing vectors, or rebuild an embedder's whole index.

``missing_only``: items of the active generation that lack a vector of an embedder (it was down when they were
submitted, or it joined the chain later) are embedded from the texts kept in ``gim_items`` and written in place.

Full: the vectors go to a NEW generation (``gim__<id>__g<n>``) while searches keep using the active one.
Progress is recorded per item (``gim_vectors`` rows of the new generation), so an interrupted run resumes where it
stopped (the building generation is remembered in ``gim_generations``). New submissions during the build write
to both generations. When no item is left, the switch happens under the dedup lock (no submission in flight),
after one last pass; then the old collection and its bookkeeping are dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from gateway.api import Embedder, ProviderUnavailable, ReindexProgress, ReindexReport, checked_vectors
from gateway_plugins.gim.vectors import INDEXED_FIELDS, ItemVectors, collection_name

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

log = structlog.get_logger(__name__)

__all__ = ["fill_masters", "fill_missing", "reindex_all"]


def _noop(done: int, total: int) -> None:
    return None


async def fill_missing(
    core: GimCore,
    embedder: Embedder,
    *,
    generation: int | None = None,
    progress: ReindexProgress = _noop,
    renew: Callable[[], Awaitable[None]] | None = None,
    done_before: int = 0,
    total: int = 0,
) -> int:
    """Embed every active item lacking a vector of ``embedder`` in ``generation`` (default: the active one)."""
    target = generation
    if target is None:
        current = core.vectors.generation(embedder.id)
        if current is None:
            current = await core.vectors.ensure_embedder(embedder.id, embedder.dimension)
        target = current.active
    await core.vectors.store.ensure_collection(
        collection_name(embedder.id, target), dimension=embedder.dimension, indexed_fields=INDEXED_FIELDS
    )
    embedded = 0
    after = ""
    while True:
        rows = await core.repo.items_without_vectors(
            core.store, embedder.id, target, after_id=after, limit=core.config.reindex_batch
        )
        if not rows:
            return embedded
        await _embed_rows(core, embedder, rows, target)
        embedded += len(rows)
        after = rows[-1]["id"]
        progress(done_before + embedded, total)
        if renew is not None:
            await renew()


async def _full(core: GimCore, embedder: Embedder, progress: ReindexProgress, total: int) -> int:
    async with core.lock.hold():
        await core.refresh_generations(force=True)
        current = core.vectors.generation(embedder.id) or await core.vectors.ensure_embedder(
            embedder.id, embedder.dimension
        )
        building = current.building if current.building is not None else current.active + 1
        if current.building is None:
            await core.repo.set_building(core.store, embedder.id, building)
            await core.refresh_generations(force=True)
    already = await core.repo.count_vectors(core.store, embedder.id, building)
    embedded = await fill_missing(
        core, embedder, generation=building, progress=progress, done_before=already, total=total
    )
    async with core.lock.hold():
        embedded += await fill_missing(core, embedder, generation=building, renew=core.lock.renew)
        old = current.active
        async with core.store.transaction() as tx:
            await core.lock.fence(tx)  # a final pass that outlived its lease switches nothing
            await core.repo.switch_generation(tx, embedder.id, building)
        await core.refresh_generations(force=True)
    await core.vectors.store.delete_collection(collection_name(embedder.id, old))
    await core.repo.drop_generation_rows(core.store, embedder.id, old)
    log.info("gim.reindex.switched", embedder=embedder.id, generation=building, embedded=embedded)
    return embedded


async def fill_masters(core: GimCore, embedder: Embedder, master_ids: set[str]) -> int:
    """Embed now the items of ``master_ids`` that lack ``embedder``'s vectors: a duplicate decision is about to
    compare a submission with them (after the embedder changed, before ``gateway reindex --missing`` ran)."""
    generation = core.vectors.generation(embedder.id)
    if generation is None or not master_ids:
        return 0
    rows = await core.repo.items_without_vectors(
        core.store, embedder.id, generation.active, masters=sorted(master_ids), limit=core.config.reindex_batch
    )
    if rows:
        await _embed_rows(core, embedder, rows, generation.active)
        log.info("gim.vectors.filled_for_a_decision", embedder=embedder.id, items=len(rows))
    return len(rows)


async def _embed_rows(core: GimCore, embedder: Embedder, rows: list[Any], target: int) -> None:
    texts = [row["texts"][kind] for row in rows for kind in core.kinds]
    vectors = checked_vectors(embedder, texts, await embedder.embed(texts, task="document"))
    width = len(core.kinds)
    items = [
        ItemVectors(
            row["id"], row["master_id"], dict(zip(core.kinds, vectors[i * width : (i + 1) * width], strict=True))
        )
        for i, row in enumerate(rows)
    ]
    await core.vectors.write(embedder.id, items, generations=[target])
    async with core.store.transaction() as tx:
        await core.repo.record_vectors(tx, [row["id"] for row in rows], embedder.id, target)


async def reindex_all(core: GimCore, *, missing_only: bool, progress: ReindexProgress) -> list[ReindexReport]:
    """Reindex every embedder of the chain; one report per embedder."""
    await core.ensure_embedders()
    total = await core.repo.count_items(core.store)
    reports = []
    for embedder in core.embeddings.embedders:
        try:
            if missing_only:
                generation = core.vectors.generation(embedder.id)
                have = await core.repo.count_vectors(core.store, embedder.id, generation.active) if generation else 0
                embedded = await fill_missing(core, embedder, progress=progress, done_before=have, total=total)
            else:
                embedded = await _full(core, embedder, progress, total)
        except ProviderUnavailable as exc:  # this embedder is down: the others are still reindexed
            if exc.provider.startswith(("store", "vector_store")):  # the store is down: nothing can go on
                raise
            log.warning("gim.reindex.embedder_failed", embedder=embedder.id, error=str(exc))
            reports.append(ReindexReport(embedder.id, total, 0, total, error=str(exc)))
            continue
        except Exception as exc:  # a bug in this embedder (a plugin's): reported, and the others still reindexed
            log.exception("gim.reindex.embedder_failed", embedder=embedder.id)
            reports.append(ReindexReport(embedder.id, total, 0, total, error=f"{type(exc).__name__}: {exc}"))
            continue
        reports.append(ReindexReport(embedder_id=embedder.id, total=total, embedded=embedded, skipped=total - embedded))
    core.recount_coverage()
    return reports
