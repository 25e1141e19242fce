"""The pack's shared state: providers, repository, vector index, lexical index, vocabulary, lock, and start-up.

Start-up (``GimCore.start``): apply the migrations, load the vector generations, reconcile the two stores
under the dedup lock (:mod:`gateway_plugins.gim.consistency`), and load the lexical index and the explanation
vocabulary from the relational store. The embedder chain is built on first use (a search or a submission), so
starting costs no model load.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from gateway.api import (
    STORE,
    VECTOR_STORE,
    CallContext,
    EmbeddingService,
    FieldKind,
    PackContext,
    RelationalStore,
    SanitizationService,
    VectorStore,
    embeddings_off_loop,
)
from gateway_plugins.gim.confidence import BetaConfidence
from gateway_plugins.gim.config import GimConfig
from gateway_plugins.gim.lexical import LexicalIndex
from gateway_plugins.gim.locks import DedupLock
from gateway_plugins.gim.migrations import MIGRATIONS, NAMESPACE
from gateway_plugins.gim.repository import Repository
from gateway_plugins.gim.texts import COMBINED, ERROR, RESOLUTION
from gateway_plugins.gim.vectors import VectorIndex
from gateway_plugins.gim.vocabulary import ExplanationVocabulary, explanation_terms

log = structlog.get_logger(__name__)

__all__ = ["GimCore", "utcnow"]

_CATCH_UP_BATCH = 5000
_GENERATIONS_TTL = 5.0


def utcnow() -> datetime:
    return datetime.now(UTC)


class GimCore:
    """Everything the tool handlers share. Build it with the pack's context; :meth:`start` before use."""

    def __init__(self, config: GimConfig, context: PackContext) -> None:
        self.config = config
        self.context = context
        self.repo = Repository()
        self.lexical = LexicalIndex()
        self.vocabulary = ExplanationVocabulary()
        """Document frequencies of the explanation terms of the same items as :attr:`lexical`."""
        self.confidence = BetaConfidence(config.confidence_prior_alpha, config.confidence_prior_beta)
        self._store: RelationalStore | None = None
        self._vectors: VectorIndex | None = None
        self._lock: DedupLock | None = None
        self._embeddings: EmbeddingService | None = None
        self._embedders_ready = False
        self._coverage_checked: set[str] = set()
        self._lacking: dict[str, tuple[bool, float]] = {}
        self._generations_loaded_at = 0.0
        self._caught_up_at = float("-inf")

    # -- accessors ------------------------------------------------------------------------------------------------

    @property
    def hybrid(self) -> bool:
        return self.config.strategy == "hybrid"

    @property
    def kinds(self) -> tuple[str, ...]:
        """The vector kinds every item gets under the configured strategy."""
        return (ERROR, RESOLUTION) if self.hybrid else (COMBINED,)

    @property
    def all_kinds(self) -> tuple[str, ...]:
        return (ERROR, RESOLUTION, COMBINED)

    @property
    def store(self) -> RelationalStore:
        if self._store is None:
            raise RuntimeError("the gim pack is not started")
        return self._store

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            raise RuntimeError("the gim pack is not started")
        return self._vectors

    @property
    def lock(self) -> DedupLock:
        if self._lock is None:
            raise RuntimeError("the gim pack is not started")
        return self._lock

    @property
    def sanitization(self) -> SanitizationService:
        return self.context.sanitization()

    @property
    def embeddings(self) -> EmbeddingService:
        if self._embeddings is None:
            self._embeddings = self.context.embeddings()
        return self._embeddings

    # -- lifecycle ------------------------------------------------------------------------------------------------

    async def start(self) -> None:
        from gateway_plugins.gim.consistency import reconcile

        store: RelationalStore = self.context.provider(STORE)
        vector_store: VectorStore = self.context.provider(VECTOR_STORE)
        self._embeddings = await embeddings_off_loop(self.context.embeddings)
        await store.migrate(NAMESPACE, MIGRATIONS)
        self._store = store
        self._vectors = VectorIndex(vector_store, store, self.repo)
        await self._vectors.refresh()
        self._generations_loaded_at = time.monotonic()
        self._lock = DedupLock(
            store,
            lease_seconds=self.config.lock_lease_seconds,
            timeout_seconds=self.config.lock_timeout_seconds,
        )
        async with self.lock.hold():
            report = await reconcile(self)
        await self.catch_up()
        log.info("gim.started", strategy=self.config.strategy, items=len(self.lexical), **report)

    async def stop(self) -> None:
        """Nothing to release: the host closes the providers."""

    async def ensure_embedders(self) -> Sequence[Any]:
        """Build the embedder chain (first call) and make sure every embedder has its collections."""
        embedders = self.embeddings.embedders
        if not self._embedders_ready:
            for embedder in embedders:
                generation = await self.vectors.ensure_embedder(embedder.id, embedder.dimension)
                if embedder.id not in self._coverage_checked:  # once per process, not at every refresh
                    self._coverage_checked.add(embedder.id)
                    await self._warn_about_missing_vectors(embedder.id, generation.active)
            self._embedders_ready = True
        return embedders

    async def _warn_about_missing_vectors(self, embedder_id: str, generation: int) -> None:
        """Say so when stored items lack this embedder's vectors (a new or changed embedder, say int8 after
        fp32): until ``gateway reindex --missing`` fills them, its searches and duplicate checks miss them."""
        missing = await self.repo.count_items_without_vectors(self.store, embedder_id, generation)
        if missing:
            log.warning(
                "gim.embedder.vectors_missing",
                embedder=embedder_id,
                items=await self.repo.count_items(self.store),
                without_vectors=missing,
                fix="run `gateway reindex --missing` with this deployment's config (it may run beside the server)",
            )

    async def incomplete_embedders(self) -> set[str]:
        """The embedders (the fallback aside) some stored items have no vectors of: a search passes them over, or
        those items would be missing from its results (after an outage, before ``gateway reindex --missing``)."""
        return {e.id for e in self.embeddings.embedders[:-1] if await self.lacks_vectors(e.id)}

    def recount_coverage(self) -> None:
        """Count again at the next question (a reindex just filled vectors in)."""
        self._lacking.clear()

    def note_missing(self, embedder_ids: Sequence[str]) -> None:
        """Embedders that just failed to embed an item: known to lack vectors from now on, without a count."""
        for embedder_id in embedder_ids:
            self._lacking[embedder_id] = (True, time.monotonic())

    async def lacks_vectors(self, embedder_id: str) -> bool:
        """Whether some stored items lack ``embedder_id``'s vectors (counted at most every few seconds)."""
        now = time.monotonic()
        cached = self._lacking.get(embedder_id)
        if cached is None or now - cached[1] > _GENERATIONS_TTL:
            generation = self.vectors.generation(embedder_id)
            count = (
                await self.repo.count_items_without_vectors(self.store, embedder_id, generation.active)
                if generation
                else 0
            )
            self._lacking[embedder_id] = cached = (count > 0, now)
        return cached[0]

    async def refresh_generations(self, *, force: bool = False) -> None:
        """Follow generation switches made by another process (at most every few seconds unless forced)."""
        if force or time.monotonic() - self._generations_loaded_at > _GENERATIONS_TTL:
            await self.vectors.refresh()
            self._generations_loaded_at = time.monotonic()
            self._embedders_ready = False
            await self.ensure_embedders()

    async def catch_up(self, *, max_age: float = 0.0) -> None:
        """Load items activated since the last call (by this or another process) into the lexical index and the
        explanation vocabulary.

        ``max_age``: skip when the last catch-up is younger (searches accept seeing another process's newest
        items that much later; this process's own are indexed as they are activated)."""
        now = time.monotonic()
        if max_age and now - self._caught_up_at < max_age:
            return
        self._caught_up_at = now
        while True:
            rows = await self.repo.active_items_after(self.store, self.lexical.last_seq, _CATCH_UP_BATCH)
            legacy = [str(row["id"]) for row in rows if row["terms"] is None and row["id"] not in self.lexical]
            resolutions = (
                {str(r["id"]): r["texts"].get(RESOLUTION, "") for r in await self.repo.items_texts(self.store, legacy)}
                if legacy
                else {}
            )
            for row in rows:
                self.index_item(
                    row["id"],
                    row["master_id"],
                    row["tokens"].split(),
                    row["terms"].split()
                    if row["terms"] is not None
                    else explanation_terms(resolutions.get(row["id"], "")),
                    seq=int(row["index_seq"]),
                )
            if len(rows) < _CATCH_UP_BATCH:
                return

    def index_item(
        self, item_id: str, master_id: str, tokens: Sequence[str], terms: Iterable[str], *, seq: int | None
    ) -> None:
        """Add an active item to the lexical index and, the first time, its explanation terms to the vocabulary."""
        if item_id not in self.lexical:
            self.vocabulary.add(terms)
        self.lexical.add(item_id, master_id, tokens, seq=seq)

    # -- usage ----------------------------------------------------------------------------------------------------

    async def record_event(
        self,
        event_type: str,
        ctx: CallContext | None,
        *,
        issue_id: str | None = None,
        session_id: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        success: bool | None = None,
        timestamp: datetime | None = None,
        db: Any = None,
    ) -> str:
        """Store a usage event (in ``db`` when given, so it commits with the action it describes). What the caller
        named (session id, model, provider) goes through the free-text layers first, as a confirmation's session id
        does: an identifier field can hold a pasted key or command line as well as any text. One the layers cannot
        make safe is stored as ``<redacted>`` (the event still counts)."""
        named = {"session_id": session_id, "model": model, "provider": provider}
        fields = {name: (value, FieldKind.FREE_TEXT) for name, value in named.items() if value}
        if fields:
            report = await self.sanitization.sanitize_fields(fields)
            named |= {name: "<redacted>" for name in fields} if report.refused else dict(report.fields)
        session_id, model, provider = named["session_id"], named["model"], named["provider"]
        event_id = str(uuid.uuid4())
        await self.repo.insert_event(
            db or self.store,
            {
                "id": event_id,
                "event_type": event_type,
                "issue_id": issue_id,
                "session_id": session_id or (f"principal:{ctx.principal.key}" if ctx is not None else "unspecified"),
                "principal": ctx.principal.key if ctx is not None else None,
                "model": model,
                "provider": provider,
                "success": success,
                "ts": timestamp or utcnow(),
            },
        )
        return event_id
