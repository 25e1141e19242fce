"""Keeping the relational store and the vector store in agreement, whatever point a crash hit.

The write protocol of a submission (:mod:`gateway_plugins.gim.submit`), all under the dedup lock:

1. one transaction inserts the item and its master/child row with ``state = 'pending'``;
2. the vectors are written to every target collection (and the vector store flushed);
3. one transaction marks the item ``active``, records which vectors exist (``gim_vectors``), enriches the
   master and logs the usage event; only then is the submission acknowledged.

Pending rows are invisible to every read (search, fix bundles, duplicate candidates). So a crash before step 3
leaves at most a pending row and some of its vectors, never acknowledged; :func:`reconcile` deletes both (vectors
first, then rows), at start-up and whenever a holder takes over the lock from a dead one. A crash after step 3
leaves everything in place. A vector store that lost writes it had acknowledged is caught by the audit: for
each collection the point ids are compared with those ``gim_vectors`` promises (one scroll and one query, a
second or two at 100k items); points without an active item are deleted (with any ``gim_vectors`` row left of
that item), and rows whose points are gone are
dropped from ``gim_vectors`` and re-embedded at once (when the embedder is available; otherwise they stay
listed as missing for ``gateway reindex --missing``). A generation a full reindex replaced but was killed before
removing is removed too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from gateway_plugins.gim.pairing import check_pairing
from gateway_plugins.gim.vectors import collection_name, point_id

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

log = structlog.get_logger(__name__)

__all__ = ["reconcile", "reconcile_pending"]


async def reconcile_pending(core: GimCore) -> int:
    """Delete half-written (pending) submissions: their vectors, then their rows. Call under the dedup lock."""
    pending = await core.repo.pending_items(core.store)
    if not pending:
        return 0
    await core.vectors.delete_items([row["id"] for row in pending], core.all_kinds)
    async with core.store.transaction() as tx:
        await core.repo.delete_items(tx, pending)
    log.warning("gim.reconcile.pending_removed", count=len(pending))
    return len(pending)


async def _audit_collection(core: GimCore, embedder_id: str, generation: int) -> dict[str, int]:
    name = collection_name(embedder_id, generation)
    store = core.vectors.store
    item_ids = await core.repo.vector_item_ids(core.store, embedder_id, generation)
    dangling = await core.repo.dangling_vector_item_ids(core.store, embedder_id, generation)
    if dangling:  # rows that outlived their item (its points are orphans below)
        async with core.store.transaction() as tx:
            await core.repo.forget_vectors(tx, sorted(dangling), embedder_id, generation)
        item_ids -= dangling
    expected = {point_id(item, kind): item for item in item_ids for kind in core.kinds}
    try:
        present = set(await store.list_ids(name))
    except LookupError:
        present = set()
    orphans = sorted(present - set(expected))
    lost_items = sorted({item for pid, item in expected.items() if pid not in present})
    if not orphans and not lost_items:
        return {}
    if orphans:
        await store.delete(name, orphans)
    if lost_items:
        async with core.store.transaction() as tx:
            await core.repo.forget_vectors(tx, lost_items, embedder_id, generation)
    log.warning(
        "gim.reconcile.audit",
        collection=name,
        expected=len(expected),
        found=len(present),
        orphans_deleted=len(orphans),
        items_missing_vectors=len(lost_items),
    )
    return {"orphans_deleted": len(orphans), "items_missing_vectors": len(lost_items)}


async def reconcile(core: GimCore) -> dict[str, Any]:
    """Start-up reconciliation (under the dedup lock): the vector store is the database's pair
    (:mod:`~gateway_plugins.gim.pairing`), then pending rows, then every collection's points."""
    await check_pairing(core, adopt=core.config.adopt_vector_store)
    report: dict[str, Any] = {"pending_removed": await reconcile_pending(core)}
    repaired = 0
    for generation in list(core.vectors.generations.values()):
        for number in generation.targets():
            found = await _audit_collection(core, generation.embedder_id, number)
            for key, value in found.items():
                report[key] = report.get(key, 0) + value
            if found.get("items_missing_vectors") and number == generation.active:
                repaired += await _refill(core, generation.embedder_id)
    if repaired:
        report["vectors_refilled"] = repaired
    if retired := await _retire_replaced(core):
        report["replaced_generations_removed"] = retired
    return report


async def _retire_replaced(core: GimCore) -> int:
    """A full reindex killed between its switch and its clean-up leaves the replaced generation behind: a whole
    collection and its ``gim_vectors`` rows, which nothing reads. Each is removed here (rows last, as the reindex
    does)."""
    existing = set(await core.vectors.store.list_collections())
    retired = 0
    for generation in list(core.vectors.generations.values()):
        for number in range(generation.active):  # a reindex builds active + 1 and switches to it: older is replaced
            name = collection_name(generation.embedder_id, number)
            if name in existing:
                await core.vectors.store.delete_collection(name)
                log.warning(
                    "gim.reconcile.replaced_generation_removed", embedder=generation.embedder_id, generation=number
                )
                retired += 1
            await core.repo.drop_generation_rows(core.store, generation.embedder_id, number)  # also a kill in between
    return retired


async def _refill(core: GimCore, embedder_id: str) -> int:
    """Re-embed the items of ``embedder_id`` whose vectors the audit found missing (if that embedder is up)."""
    from gateway_plugins.gim.reindex import fill_missing

    try:
        embedders = {e.id: e for e in core.embeddings.embedders}
    except Exception:  # the chain cannot be built now: the rows stay listed as missing
        log.warning("gim.reconcile.refill_skipped", embedder=embedder_id, exc_info=True)
        return 0
    embedder = embedders.get(embedder_id)
    if embedder is None:
        return 0
    return await fill_missing(core, embedder, renew=core.lock.renew)
