"""``gim_search_issues``: sanitise the query, embed it, retrieve, group by master, rank, paginate.

Pagination is by offset over the ranked masters. Each signal retrieves ``search_pool`` items (doubled until it
holds ``(offset + limit) x oversampling``, the spec's oversampling); the same number of most relevant masters is
re-scored with confidence and environment; ``total_results`` counts every master that passed the threshold among
the candidates. The pool does not depend on the page within the first ``search_pool / oversampling`` results, so
those pages are slices of one ranking.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING

import structlog

from gateway.api import CallContext, InsufficientData, ProviderUnavailable, off_loop
from gateway_plugins.gim.models import ModelInfo
from gateway_plugins.gim.overlap import alongside
from gateway_plugins.gim.ranking import environment_matches, fuse, rank, shortlist
from gateway_plugins.gim.schemas import IssueSummary, SearchIssuesInput, SearchIssuesOutput
from gateway_plugins.gim.texts import COMBINED, ERROR, query_texts

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

__all__ = ["search"]

log = structlog.get_logger(__name__)


def search_pool(base: int, wanted: int) -> int:
    """The pool a search ranks: ``base``, doubled until it holds ``wanted`` candidates. A pool that depended on the
    page itself would rank each page differently (items repeated on two pages, others on none)."""
    pool = base
    while pool < wanted:
        pool *= 2
    return pool


async def search(core: GimCore, args: SearchIssuesInput, ctx: CallContext) -> SearchIssuesOutput:
    text = await core.sanitization.sanitize_query(args.error_message)
    derived = await off_loop(partial(query_texts, text, hybrid=core.hybrid), size=len(text))
    if derived is None:
        raise InsufficientData("The error message has nothing to search for.", details={"field": "error_message"})
    query_text, tokens = derived
    await core.ensure_embedders()
    pool = search_pool(core.config.search_pool, math.ceil((args.offset + args.limit) * core.config.oversampling))
    # The query embedding (the slow part, in a worker thread) runs while the lexical side is searched.
    skip = await core.incomplete_embedders()
    async with alongside(lambda: core.embeddings.embed_query(query_text, skip=skip)) as embedding:
        await core.refresh_generations()
        await core.catch_up(max_age=core.config.lexical_refresh_seconds)
        lexical = await core.lexical.search_sliced(tokens, limit=pool) if core.hybrid else []
    query = embedding.value
    kind = ERROR if core.hybrid else COMBINED
    dense = await core.vectors.query(query.embedder_id, query.vector, kind=kind, limit=pool)
    best = fuse(
        ((str(h.payload["item_id"]), str(h.payload["master_id"]), h.score) for h in dense),
        lexical,
        lexical_weight=core.config.lexical_weight if core.hybrid else 0.0,
    )
    # active masters only (the lexical index holds exactly the active items): a pending master's vectors are
    # never shown
    shortlisted, total = shortlist(
        best, threshold=core.config.score_threshold, is_active=core.lexical.__contains__, size=pool
    )
    rows = await core.repo.search_rows(core.store, sorted(shortlisted))
    wanted = {
        "language": args.environment.language if args.environment else None,
        "framework": args.environment.framework if args.environment else None,
        "os": args.environment.os if args.environment else None,
        "provider": args.provider,
        "model": args.model,
    }
    ranked = rank(
        shortlisted,
        confidence={mid: row.confidence_score for mid, row in rows.items()},
        boosts={mid: environment_matches(row.environments, wanted) for mid, row in rows.items()} if core.hybrid else {},
        boost=core.config.environment_boost if core.hybrid else 0.0,
        use_confidence=core.hybrid,
    )
    issues = [
        IssueSummary(
            issue_id=r.master_id,
            canonical_title=rows[r.master_id].canonical_title,
            root_cause_category=rows[r.master_id].root_cause_category,
            relevance_score=round(r.relevance, 4),
            confidence_score=round(rows[r.master_id].confidence_score, 4),
            verification_count=rows[r.master_id].verification_count,
            last_confirmed_at=rows[r.master_id].last_confirmed_at,
            affected_models=[ModelInfo.model_validate(model) for model in rows[r.master_id].affected_models],
        )
        for r in ranked[args.offset : args.offset + args.limit]
    ]
    try:
        await core.record_event(
            "search",
            ctx,
            issue_id=ranked[0].master_id if ranked else None,
            model=args.model,
            provider=args.provider,
        )
    except ProviderUnavailable as exc:  # the store is locked or down: the statistics miss one search, the caller not
        log.warning("search event not recorded", error=str(exc))
    return SearchIssuesOutput(
        issues=issues,
        total_results=max(total, len(ranked)),
        limit=args.limit,
        offset=args.offset,
        embedder=query.embedder_id,
    )
