"""Syncing a hosted connector (:class:`gateway.api.IncrementalConnector`): pages of changes since a stored cursor.

The loop asks the connector for a page, stores its documents (text, chunks, vectors, links), then stores the
connector's cursor in ``ctx_connectors.sync_state``, and goes on while the connector says there is more. A crash,
a ``kill -9`` or a ``stop`` between two pages loses nothing: the next sync starts from the last stored cursor and
asks the service only for what comes after it.

A **full** sync (the first one, ``force_reindex``, or after the connector's config changed: the sync state keeps a
fingerprint of the config it was made with) starts from no cursor. It records when it began; every document it
offers is written or, unchanged, confirmed; when it ends, the connector's documents it did not offer (deleted at the
source, or out of the new config's scope) are removed. An interrupted full sync keeps that mark and finishes the
removal when it completes. Before each sync, stored documents that lack vectors of the current embedders are
embedded (an embedder outage during a sync, or an embedder added since).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from gateway.api import IncrementalConnector, RelationalStore
from gateway_plugins.context.indexer import Indexer, IndexOutcome
from gateway_plugins.context.repository import Repository

log = structlog.get_logger(__name__)

__all__ = ["config_fingerprint", "sync_connector"]

PageProgress = Callable[[int], Awaitable[None]]
"""``progress(documents offered so far in this sync)``."""


def config_fingerprint(config: Mapping[str, Any]) -> str:
    """A short digest of a connector's stored config (environment references, never secret values)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


async def sync_connector(
    store: RelationalStore,
    repo: Repository,
    indexer: Indexer,
    row: Mapping[str, Any],
    connector: IncrementalConnector,
    *,
    force: bool,
    progress: PageProgress,
    should_stop: Callable[[], bool],
) -> IndexOutcome:
    """Sync one hosted connector from its stored cursor (see the module docstring)."""
    connector_id = row["id"]
    fingerprint = config_fingerprint(row["config"])
    state = await repo.sync_state(store, connector_id)
    if force or state.get("config") != fingerprint:
        state = {"config": fingerprint, "cursor": None, "full_since": datetime.now(UTC).isoformat()}
        await repo.set_sync_state(store, connector_id, state)
    outcome = IndexOutcome()
    repaired = await indexer.embed_missing(connector_id)
    if repaired:
        log.info("context.sync.embedded_missing", connector=connector_id, documents=repaired)
    cursor = state.get("cursor")
    pages = 0
    while True:
        if should_stop():
            outcome.stopped = True
            break
        page = await connector.changes(cursor)
        await indexer.apply_changes(connector_id, page, force=force, outcome=outcome)
        cursor = page.cursor
        state = {**state, "cursor": cursor}
        await repo.set_sync_state(store, connector_id, state)
        pages += 1
        await progress(outcome.documents)
        if not page.more:
            break
    if not outcome.stopped and state.get("full_since"):
        outcome.removed += await indexer.remove_unseen(connector_id, datetime.fromisoformat(state["full_since"]))
        state = {**state, "full_since": None}
        await repo.set_sync_state(store, connector_id, state)
    log.info(
        "context.sync.done",
        connector=connector_id,
        pages=pages,
        documents=outcome.documents,
        indexed=outcome.indexed,
        unchanged=outcome.unchanged,
        removed=outcome.removed,
        stopped=outcome.stopped,
    )
    return outcome
