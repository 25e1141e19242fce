"""``gim_get_fix_bundle``, ``gim_confirm_fix`` and ``gim_report_usage``.

Issue ids are UUIDs; a child's id is accepted wherever a master's is and resolves to its master (search results
and fix bundles always name the master). Confirmations are votes: one per identity (``ctx.principal.key``) per
master, a repeat replaces the earlier vote, and the master's confidence is recomputed from the current votes
(:mod:`gateway_plugins.gim.confidence`) in the same transaction, which first takes the master's row lock so
concurrent confirmations of one issue are applied one after the other.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gateway.api import CallContext, FieldKind, Forbidden, NotFound, ValidationFailed
from gateway_plugins.gim.confidence import VoteTally
from gateway_plugins.gim.intake import sanitized_fields
from gateway_plugins.gim.schemas import (
    ConfirmFixInput,
    ConfirmFixOutput,
    FixBundleOutput,
    GetFixBundleInput,
    ReportUsageInput,
    ReportUsageOutput,
)

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

__all__ = ["confirm_fix", "get_fix_bundle", "parse_issue_id", "report_usage", "resolve_master"]


def parse_issue_id(value: str, field: str = "issue_id") -> str:
    """The canonical form of a UUID, or ``validation_error``."""
    try:
        return str(uuid.UUID(value.strip()))
    except (ValueError, AttributeError):
        raise ValidationFailed(
            f"invalid arguments: {field}: not a UUID",
            details={"errors": [{"field": field, "message": "must be a UUID", "type": "uuid_parsing"}]},
        ) from None


async def resolve_master(core: GimCore, issue_id: str) -> str:
    """The master id behind ``issue_id`` (a master or a child), or ``not_found``."""
    canonical = parse_issue_id(issue_id)
    master_id = await core.repo.resolve_master_id(core.store, canonical)
    if master_id is None:
        raise NotFound(f"Issue {canonical} not found.", details={"issue_id": canonical})
    return master_id


async def get_fix_bundle(core: GimCore, args: GetFixBundleInput, ctx: CallContext) -> FixBundleOutput:
    master_id = await resolve_master(core, args.issue_id)
    masters = await core.repo.masters(core.store, [master_id])
    master = masters.get(master_id)
    if master is None:
        raise NotFound(f"Issue {master_id} not found.", details={"issue_id": master_id})
    await core.record_event("fix_retrieved", ctx, issue_id=master_id)
    return FixBundleOutput(
        issue_id=master_id,
        canonical_title=master.canonical_title,
        root_cause=master.root_cause,
        fix_bundle=master.fix_bundle,
        confidence_score=round(master.confidence_score, 4),
        verification_count=master.verification_count,
    )


def _segment(key: str) -> str:
    """``key`` as one segment of a field path (escaped: two keys never share a path)."""
    return key.replace("\\", "\\\\").replace(".", "\\.").replace(":", "\\:")


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(field path, text) of every string in a JSON value, the keys of its objects included (a key can hold a
    secret as well as a value can; a key's path ends in ``:key``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{path}.{_segment(key)}:key", key
            yield from _leaves(item, f"{path}.{_segment(key)}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}.{index}")


def _rebuilt(value: Any, path: str, clean: dict[str, str]) -> Any:
    if isinstance(value, str):
        return clean[path]
    if isinstance(value, dict):
        return {
            clean[f"{path}.{_segment(key)}:key"]: _rebuilt(item, f"{path}.{_segment(key)}", clean)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rebuilt(item, f"{path}.{index}", clean) for index, item in enumerate(value)]
    return value


async def _sanitized_confirmation(core: GimCore, args: ConfirmFixInput) -> ConfirmFixInput:
    """The confirmation with its free text (notes, session id, the environment's strings) through the same
    sanitization as a submission: what is stored never holds a secret, and a text that cannot be made safe is
    refused (fail closed)."""
    fields = {name: (text, FieldKind.FREE_TEXT) for name, text in _leaves(args.environment, "environment")}
    if args.notes:
        fields["notes"] = (args.notes, FieldKind.FREE_TEXT)
    if args.session_id:
        fields["session_id"] = (args.session_id, FieldKind.FREE_TEXT)
    if not fields:
        return args
    clean = await sanitized_fields(core.sanitization, fields)
    return args.model_copy(
        update={
            "environment": _rebuilt(args.environment, "environment", clean),
            "notes": clean.get("notes", args.notes),
            "session_id": clean.get("session_id", args.session_id),
        }
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PERSONAL = frozenset({"none", "install", "config"})
"""How the one caller of a personal memory is known (stdio, or HTTP without authentication): its confirmations of
its own fixes count. Any other caller (a key, a token, a third-party authenticator's) is one of many in a shared
deployment, where a fix is verified by others: a submitter's own success does not count."""


async def _not_own_submission(core: GimCore, master_id: str, ctx: CallContext, now: datetime) -> None:
    mine = await core.repo.latest_event(core.store, "issue_submitted", ctx.principal.key, master_id, _EPOCH, now)
    if mine is not None:
        raise Forbidden(
            f"you submitted to issue {master_id}: your own success does not verify it (confirmations count other "
            "callers' results); report a failure with success=false if the fix did not work for you",
            details={"reason": "own_submission", "issue_id": master_id},
        )


async def confirm_fix(core: GimCore, args: ConfirmFixInput, ctx: CallContext) -> ConfirmFixOutput:
    from gateway_plugins.gim.core import utcnow

    master_id = await resolve_master(core, args.issue_id)
    now = utcnow()
    if args.success and ctx.principal.method not in PERSONAL:
        await _not_own_submission(core, master_id, ctx, now)
    args = await _sanitized_confirmation(core, args)
    async with core.store.transaction() as tx:
        if not await core.repo.lock_master(tx, master_id, now):
            raise NotFound(f"Issue {master_id} not found.", details={"issue_id": master_id})
        await core.repo.upsert_vote(
            tx,
            {
                "issue_id": master_id,
                "voter": ctx.principal.key,
                "success": args.success,
                "environment": args.environment,
                "notes": args.notes,
                "session_id": args.session_id,
                "now": now,
            },
        )
        successes, failures = await core.repo.tally(tx, master_id)
        confidence = core.confidence.score(VoteTally(successes, failures))
        await core.repo.update_confidence(
            tx,
            master_id,
            successes=successes,
            failures=failures,
            confidence=confidence,
            confirmed_at=now if args.success else None,
        )
        await core.record_event(
            "fix_confirmed",
            ctx,
            issue_id=master_id,
            session_id=args.session_id,
            success=args.success,
            timestamp=now,  # the same instant as the vote: last_resolved_at == last_confirmed_at
            db=tx,
        )
    return ConfirmFixOutput(
        status="confirmed",
        issue_id=master_id,
        updated_confidence=round(confidence, 4),
        updated_verification_count=successes,
    )


RECORDED_BY_THE_TOOLS = frozenset({"search", "fix_retrieved", "fix_confirmed", "issue_submitted"})
"""Events the tools record themselves: a client that also reports one (as the spec's example does) is not counted
twice."""
REPORT_WINDOW = timedelta(minutes=15)
"""How far from its time a reported event finds the one a tool recorded for the same caller and issue."""


async def report_usage(core: GimCore, args: ReportUsageInput, ctx: CallContext) -> ReportUsageOutput:
    from gateway_plugins.gim.core import utcnow

    issue_id = await resolve_master(core, args.issue_id) if args.issue_id else None
    if args.event_type in RECORDED_BY_THE_TOOLS:
        around = min(args.timestamp, utcnow())
        known = await core.repo.latest_event(
            core.store, args.event_type, ctx.principal.key, issue_id, around - REPORT_WINDOW, around + REPORT_WINDOW
        )
        if known is not None:
            return ReportUsageOutput(status="recorded", event_id=known)
    event_id = await core.record_event(
        args.event_type,
        ctx,
        issue_id=issue_id,
        session_id=args.session_id,
        model=args.model,
        provider=args.provider,
        timestamp=args.timestamp,
    )
    return ReportUsageOutput(status="recorded", event_id=event_id)
