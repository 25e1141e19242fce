"""Bulk import of issues that are already distinct masters (migrations from another GIM, benchmarks).

A submission costs a duplicate decision under the lock and two transactions; importing 100k known-distinct
issues that way takes an hour. :func:`import_masters` writes them in batches instead: rows as ``pending`` in one
transaction per batch, the vectors, then activation in one transaction per batch (the same pending -> vectors ->
active protocol as a submission, so a crash mid-import is reconciled the same way). It holds the dedup lock for
each batch, skips the duplicate decision (the caller vouches that the items are distinct), and does NOT sanitise:
only import trusted, already-sanitised content. :func:`prepare_trusted` derives the stored texts from a
submission without the sanitisation pipeline.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gateway_plugins.gim.categories import categorise
from gateway_plugins.gim.intake import Prepared
from gateway_plugins.gim.models import PROVIDERS, EnvironmentInfo, FixBundle, ModelInfo
from gateway_plugins.gim.schemas import SubmitIssueInput
from gateway_plugins.gim.signatures import lexical_tokens, normalise_error
from gateway_plugins.gim.texts import (
    COMBINED,
    ERROR,
    RESOLUTION,
    canonical_title,
    combined_text,
    error_text,
    resolution_text,
)
from gateway_plugins.gim.vectors import ItemVectors
from gateway_plugins.gim.vocabulary import explanation_terms

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

__all__ = ["import_masters", "prepare_trusted"]


def prepare_trusted(args: SubmitIssueInput) -> Prepared:
    """The stored form of a submission whose content is already clean (no sanitisation pipeline)."""
    fix = FixBundle.model_validate(
        {
            "env_actions": [
                {"order": a.order or i + 1, "type": a.type, "command": a.command, "explanation": a.explanation}
                for i, a in enumerate(args.fix_bundle.env_actions)
            ],
            "verification": [
                {"order": s.order or i + 1, "command": s.command, "expected_output": s.expected_output}
                for i, s in enumerate(args.fix_bundle.verification)
            ],
            "constraints": args.fix_bundle.constraints.model_dump() if args.fix_bundle.constraints else {},
            "code_fix": args.fix_bundle.code_fix,
            "patch_diff": args.fix_bundle.patch_diff,
        }
    )
    provider = args.provider.strip().lower()
    signature = normalise_error(args.error_message or args.error_description)
    err = error_text(signature, args.error_description)
    resolution = resolution_text(args.root_cause, fix)
    return Prepared(
        description=args.error_description,
        error_message=args.error_message,
        code_snippet=args.code_snippet,
        root_cause=args.root_cause,
        fix_bundle=fix,
        model_info=ModelInfo(provider=provider if provider in PROVIDERS else "other", model_name=args.model),  # type: ignore[arg-type]
        environment=EnvironmentInfo.model_validate(args.environment.model_dump() if args.environment else {}),
        signature=signature,
        tokens=lexical_tokens(err),
        texts={
            ERROR: err,
            RESOLUTION: resolution,
            COMBINED: combined_text(args.error_message or args.error_description, args.root_cause, fix),
        },
        title=canonical_title(args.error_description, args.error_message, signature),
        category=categorise(args.root_cause, args.error_message or args.error_description),
        symptoms=list(signature.key_lines[:5]),
        terms=explanation_terms(resolution),
    )


async def import_masters(
    core: GimCore,
    items: Sequence[Prepared],
    vectors: Mapping[str, Sequence[Mapping[str, Sequence[float]]]],
    *,
    ids: Sequence[str] | None = None,
) -> list[str]:
    """Store ``items`` as new masters. ``vectors[embedder_id][i]`` maps each of ``core.kinds`` to item ``i``'s
    vector (every embedder of the chain should be given; a missing one is filled by ``reindex --missing``).
    ``ids``: the masters' ids (UUIDs), to keep the ids of a migrated GIM; new ones by default.
    Returns the master ids, in order."""
    from gateway_plugins.gim.core import utcnow
    from gateway_plugins.gim.submit import master_row

    await core.ensure_embedders()
    if ids is not None and len(ids) != len(items):
        raise ValueError(f"{len(ids)} ids for {len(items)} items")
    ids = [str(uuid.UUID(i)) for i in ids] if ids is not None else [str(uuid.uuid4()) for _ in items]
    now = utcnow()
    async with core.lock.hold():
        await core.refresh_generations(force=True)
        async with core.store.transaction() as tx:
            await core.repo.insert_masters(tx, [master_row(i, p, core, now) for i, p in zip(ids, items, strict=True)])
            await core.repo.insert_items(tx, [_item_row(i, p, now) for i, p in zip(ids, items, strict=True)])
        targets: dict[str, tuple[int, ...]] = {}
        for embedder_id, per_item in vectors.items():
            generation = core.vectors.generation(embedder_id)
            if generation is None:
                continue
            targets[embedder_id] = generation.targets()
            batch = [ItemVectors(i, i, dict(v)) for i, v in zip(ids, per_item, strict=True)]
            await core.vectors.write(embedder_id, batch, generations=targets[embedder_id])
        async with core.store.transaction() as tx:
            await core.repo.activate_many(tx, ids)
            for embedder_id, numbers in targets.items():
                for number in numbers:
                    await core.repo.record_vectors(tx, ids, embedder_id, number)
        await core.catch_up()
    return ids


def _item_row(item_id: str, prepared: Prepared, now: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "master_id": item_id,
        "role": "master",
        "exception_type": prepared.signature.exception_type,
        "signature": prepared.texts[ERROR],
        "texts": prepared.texts,
        "tokens": " ".join(prepared.tokens),
        "terms": " ".join(sorted(prepared.terms)),
        "created_at": now,
    }
