"""``gim_submit_issue``: sanitise, embed, decide duplicate-or-new under the lock, write both stores safely.

The write protocol and its crash guarantees are described in :mod:`gateway_plugins.gim.consistency`; the
decision rules in :mod:`gateway_plugins.gim.dedup`. Embedding happens before taking the lock (it is the slow
part and needs no serialisation); deciding and writing happen under it, so two concurrent submissions of one new
issue produce one master and one child.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from gateway.api import CallContext, ServiceUnavailable
from gateway_plugins.gim.consistency import reconcile_pending
from gateway_plugins.gim.contradictions import attach_conflicts
from gateway_plugins.gim.dedup import Evidence, SecondPath, decide_baseline, decide_hybrid, gather_evidence
from gateway_plugins.gim.intake import Prepared, prepare_submission
from gateway_plugins.gim.models import MasterIssue
from gateway_plugins.gim.reindex import fill_masters
from gateway_plugins.gim.schemas import SubmitIssueInput, SubmitIssueOutput
from gateway_plugins.gim.texts import COMBINED, ERROR, RESOLUTION
from gateway_plugins.gim.vectors import ItemVectors

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

log = structlog.get_logger(__name__)

__all__ = ["Decision", "submit"]

_NEW_SYMPTOM_BELOW = 0.95
"""A child whose error signature is less similar than this to every item of its master adds a symptom."""
_MAX_VALUES = 200
"""Bound on the environment labels and values a master accumulates (a popular issue must not grow without end)."""


@dataclass(frozen=True)
class Decision:
    """The master a submission joins (``None``: a new master), why, and how close its error is to the master's."""

    master: MasterIssue | None
    evidence: Evidence | None
    similarity: float


async def _decide_hybrid(core: GimCore, prepared: Prepared, embedder_id: str, vectors: Mapping[str, Any]) -> Decision:
    config = core.config
    second_path = (
        SecondPath(
            config.dedup_second_path_error, config.dedup_second_path_resolution, config.dedup_second_path_overlap
        )
        if config.dedup_second_path and config.dedup_require_agreement
        else None
    )
    same_move_path = config.dedup_same_move_path and config.dedup_require_agreement
    pool = config.candidate_pool
    threshold = min(config.dedup_error_threshold, second_path.error_threshold if second_path else 1.0)
    resolution_floor = min(config.dedup_resolution_threshold, second_path.resolution_threshold if second_path else 1.0)
    error_hits = await core.vectors.query(embedder_id, vectors[ERROR], kind=ERROR, limit=pool)
    lexical_hits = await core.lexical.search_sliced(prepared.tokens, limit=pool)
    # Candidates come from the cause-and-fix side too: a report of one cause seen from another layer of the stack
    # can read less like its master than a crowd of unrelated errors does, and then falls outside the error pool
    # although its error similarity passes the (absolute) threshold. Masters whose resolution is close enough to
    # pass rule 2 get their error similarity asked for within them; the rules themselves are unchanged.
    cause_hits = await core.vectors.query(embedder_id, vectors[RESOLUTION], kind=RESOLUTION, limit=pool)
    dense_masters = {str(h.payload["master_id"]) for h in error_hits}
    dense_pool_full = len(error_hits) == pool and error_hits[-1].score >= threshold
    weak_lexical = {h.master_id for h in lexical_hits if h.score < threshold}
    by_cause = {str(h.payload["master_id"]) for h in cause_hits if h.score >= resolution_floor}
    outside = sorted((weak_lexical | by_cause) - dense_masters)
    if outside and dense_pool_full:
        # the dense pool is full of close items, so these masters' dense similarity may pass although they fell
        # outside it: ask for it within them
        error_hits += await core.vectors.query(
            embedder_id, vectors[ERROR], kind=ERROR, limit=4 * len(outside), master_ids=outside
        )
    best_error: dict[str, float] = {}
    for master_id, score in [(str(h.payload["master_id"]), h.score) for h in error_hits] + [
        (h.master_id, min(h.score, 1.0)) for h in lexical_hits
    ]:
        best_error[master_id] = max(best_error.get(master_id, 0.0), score)
    candidates = sorted(m for m, score in best_error.items() if score >= threshold)
    if not candidates:  # nothing is the same failure: no need to compare causes
        return Decision(None, None, 0.0)
    resolution_hits = await core.vectors.query(
        embedder_id, vectors[RESOLUTION], kind=RESOLUTION, limit=min(4096, 8 * len(candidates)), master_ids=candidates
    )
    evidence = gather_evidence(
        error_hits=[(str(h.payload["master_id"]), h.score, str(h.payload["item_id"])) for h in error_hits],
        lexical_hits=[(h.master_id, h.score, h.item_id) for h in lexical_hits],
        resolution_hits=[(str(h.payload["master_id"]), h.score) for h in resolution_hits],
        is_active=core.lexical.__contains__,  # caught up under the lock: exactly the active items
        exception_types=(
            await core.repo.item_exception_types(core.store, candidates)
            if core.config.require_same_exception_type
            else None
        ),
    )
    if core.config.dedup_require_agreement:
        await attach_conflicts(
            core,
            prepared,
            evidence,
            error_threshold=core.config.dedup_error_threshold,
            resolution_threshold=core.config.dedup_resolution_threshold,
            mechanism_overlap=core.config.dedup_mechanism_overlap,
            second_path=second_path,
            same_move_path=same_move_path,
        )
    chosen = decide_hybrid(
        evidence,
        exception_type=prepared.signature.exception_type,
        error_threshold=core.config.dedup_error_threshold,
        resolution_threshold=core.config.dedup_resolution_threshold,
        require_same_exception_type=core.config.require_same_exception_type,
        second_path=second_path,
        same_move_path=same_move_path,
    )
    if chosen is None:
        return Decision(None, None, 0.0)
    masters = await core.repo.masters(core.store, [chosen.master_id])
    return Decision(masters.get(chosen.master_id), chosen, chosen.error_dense)


async def _decide_baseline(core: GimCore, embedder_id: str, vectors: Mapping[str, Any]) -> Decision:
    hits = await core.vectors.query(embedder_id, vectors[COMBINED], kind=COMBINED, limit=5)
    masters = await core.repo.masters(core.store, sorted({str(h.payload["master_id"]) for h in hits}))
    best = next(((str(h.payload["master_id"]), h.score) for h in hits if str(h.payload["master_id"]) in masters), None)
    chosen = decide_baseline(best, threshold=core.config.duplicate_threshold)
    if chosen is None or best is None:
        return Decision(None, None, 0.0)
    return Decision(masters[chosen], None, best[1])


def _contribution(master: MasterIssue, prepared: Prepared, similarity: float) -> str:
    key = prepared.environment.coverage_key()
    if key and key not in master.environment_coverage:
        return "environment"
    if similarity < _NEW_SYMPTOM_BELOW:
        return "symptom"
    models = {(m.provider, m.model_name) for m in master.affected_models}
    if (prepared.model_info.provider, prepared.model_info.model_name) not in models:
        return "model_quirk"
    return "validation"


def _environments(prepared: Prepared, existing: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[str]]:
    env = prepared.environment
    values = {
        "language": env.language,
        "framework": env.framework,
        "os": env.os,
        "provider": prepared.model_info.provider,
        "model": prepared.model_info.model_name,
    }
    out = {key: list(existing.get(key, ())) for key in values} if existing else {key: [] for key in values}
    for key, value in values.items():
        if value and value not in out[key] and len(out[key]) < _MAX_VALUES:
            out[key].append(value)
    return out


def master_row(item_id: str, prepared: Prepared, core: GimCore, now: Any) -> dict[str, Any]:
    key = prepared.environment.coverage_key()
    return {
        "id": item_id,
        "canonical_title": prepared.title,
        "root_cause_category": prepared.category,
        "description": prepared.description,
        "root_cause": prepared.root_cause,
        "fix_bundle": prepared.fix_bundle.model_dump(mode="json"),
        "affected_models": [prepared.model_info.model_dump(mode="json")],
        "model_specific_notes": {},
        "environment_coverage": [key] if key else [],
        "environments": _environments(prepared),
        "child_issue_count": 0,
        "verification_count": 0,
        "failure_count": 0,
        "confidence_score": core.confidence.prior,
        "last_confirmed_at": None,
        "status": "active",
        "created_at": now,
        "updated_at": now,
    }


def _child_row(item_id: str, master: MasterIssue, prepared: Prepared, contribution: str, now: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "master_issue_id": str(master.id),
        "contribution_type": contribution,
        "environment": prepared.environment.model_dump(mode="json"),
        "symptoms": prepared.symptoms,
        "model_info": prepared.model_info.model_dump(mode="json"),
        "validation_result": {"success": True, "notes": "the submitter resolved the issue"},
        "sanitized_error": prepared.error,
        "sanitized_context": prepared.code_snippet or prepared.description,
        "root_cause": prepared.root_cause,
        "fix_bundle": prepared.fix_bundle.model_dump(mode="json"),
        "created_at": now,
    }


def _enrichment(master_row: Mapping[str, Any], prepared: Prepared, contribution: str, now: Any) -> dict[str, Any]:
    models = list(master_row["affected_models"])
    model = prepared.model_info.model_dump(mode="json")
    known = any(m["provider"] == model["provider"] and m["model_name"] == model["model_name"] for m in models)
    if not known and len(models) < _MAX_VALUES:
        models.append(model)
    coverage = list(master_row["environment_coverage"])
    key = prepared.environment.coverage_key()
    if key and key not in coverage and len(coverage) < _MAX_VALUES:
        coverage.append(key)
    notes = dict(master_row["model_specific_notes"])
    if contribution == "model_quirk":
        notes[f"{model['provider']}/{model['model_name']}"] = prepared.description[:500]
    return {
        "affected_models": models,
        "environment_coverage": coverage,
        "environments": _environments(prepared, master_row["environments"]),
        "model_specific_notes": notes,
        "updated_at": now,
    }


async def _cleanup(core: GimCore, item_id: str, role: str) -> None:
    """Best effort after a failed write; what it cannot do, the next reconciliation does."""
    with anyio.CancelScope(shield=True):
        try:
            await core.vectors.delete_items([item_id], core.all_kinds)
            async with core.store.transaction() as tx:
                await core.repo.delete_items(tx, [{"id": item_id, "role": role}])
        except Exception:
            log.warning("gim.submit.cleanup_deferred", item=item_id, exc_info=True)


async def submit(core: GimCore, args: SubmitIssueInput, ctx: CallContext) -> SubmitIssueOutput:
    from gateway_plugins.gim.core import utcnow

    prepared = await prepare_submission(core.sanitization, args)
    embedders = await core.ensure_embedders()
    kinds = core.kinds
    # The two documents embed side by side, one forward pass per core. The lexical lookup is left to the lock: run
    # alongside them it only shares their cores, unlike a search's single query (see gateway_plugins.gim.overlap).
    documents = await core.embeddings.embed_documents([prepared.texts[k] for k in kinds])
    per_embedder = {eid: dict(zip(kinds, vecs, strict=True)) for eid, vecs in documents.vectors.items()}
    core.note_missing(documents.missing)  # this item will lack their vectors: searches pass them over
    if not per_embedder:
        raise ServiceUnavailable("No embedder could embed the submission; retry later.")
    chain = [e.id for e in embedders if e.id in per_embedder]
    decider = chain[-1]  # the chain's fallback: always present, so decisions do not depend on an outage
    item_id = str(uuid.uuid4())
    async with core.lock.hold() as grant:
        if grant.took_over:
            await reconcile_pending(core)
        await core.refresh_generations(force=True)  # a reindex may have switched generations since the last look
        await core.catch_up()
        if await core.lacks_vectors(decider):  # a changed embedder: the masters this may join get its vectors now
            lexical = await core.lexical.search_sliced(prepared.tokens, limit=core.config.candidate_pool)
            deciding = next(e for e in embedders if e.id == decider)
            await fill_masters(core, deciding, {hit.master_id for hit in lexical})
        if core.hybrid:
            decision = await _decide_hybrid(core, prepared, decider, per_embedder[decider])
        else:
            decision = await _decide_baseline(core, decider, per_embedder[decider])
        master = decision.master
        master_id = str(master.id) if master is not None else item_id
        role = "child" if master is not None else "master"
        contribution = _contribution(master, prepared, decision.similarity) if master is not None else None
        now = utcnow()
        async with core.store.transaction() as tx:
            if master is None:
                await core.repo.insert_master(tx, master_row(item_id, prepared, core, now))
            else:
                await core.repo.insert_child(
                    tx, _child_row(item_id, master, prepared, contribution or "validation", now)
                )
            await core.repo.insert_item(
                tx,
                {
                    "id": item_id,
                    "master_id": master_id,
                    "role": role,
                    "exception_type": prepared.signature.exception_type,
                    "signature": prepared.texts[ERROR],
                    "texts": prepared.texts,
                    "tokens": " ".join(prepared.tokens),
                    "terms": " ".join(sorted(prepared.terms)),
                    "created_at": now,
                },
            )
        try:
            targets: dict[str, tuple[int, ...]] = {}
            for eid, vectors in per_embedder.items():
                generation = core.vectors.generation(eid)
                if generation is None:
                    continue
                targets[eid] = generation.targets()
                await core.vectors.write(eid, [ItemVectors(item_id, master_id, vectors)], generations=targets[eid])
            if core.config.flush_vectors:
                await core.vectors.store.flush()
            async with core.store.transaction() as tx:
                await core.lock.fence(tx)  # still this process's decision to commit (see gateway_plugins.gim.locks)
                seq = await core.repo.activate(tx, item_id)
                for eid, numbers in targets.items():
                    for number in numbers:
                        await core.repo.record_vectors(tx, [item_id], eid, number)
                if master is not None:
                    row = await core.repo.master_row(tx, master_id)
                    if row is None:
                        raise RuntimeError(f"master {master_id} vanished during a submission")
                    await core.repo.update_master_enrichment(
                        tx, master_id, _enrichment(row, prepared, contribution or "validation", now)
                    )
                await core.record_event(
                    "issue_submitted",
                    ctx,
                    issue_id=master_id,
                    model=prepared.model_info.model_name,
                    provider=prepared.model_info.provider,
                    db=tx,
                )
        except BaseException:
            await _cleanup(core, item_id, role)
            raise
        core.index_item(item_id, master_id, prepared.tokens, prepared.terms, seq=seq)
    if documents.missing:
        log.info("gim.submit.vectors_missing", item=item_id, embedders=list(documents.missing))
    merged = master is not None
    return SubmitIssueOutput(
        status="created",
        issue_id=item_id,
        master_issue_id=master_id,
        merged=merged,
        contribution_type=contribution,
        message=(
            f"Issue submitted successfully and merged with existing master issue {master_id}"
            if merged
            else "Issue submitted successfully as a new master issue"
        ),
    )
