"""Usage statistics (IssueUsageStats, GlobalUsageStats) computed from the recorded usage events.

Events are recorded automatically by the tools (``search`` naming the top result, ``fix_retrieved``,
``fix_confirmed`` with its outcome, ``issue_submitted``) and by ``gim_report_usage`` (typically
``fix_applied``; a report of one of the tools' own events that the same caller's call recorded within 15 minutes
of the reported time returns that event and adds none, so a client that reports them as the spec's example does
is not counted twice). Definitions:

* ``total_queries`` of an issue: searches whose top result it was; globally: all searches.
* ``total_fix_applied``: every confirmation implies an application, and a client may also report
  ``fix_applied`` for the same attempt, so the count is ``max(fix_applied, fix_confirmed)``: never double counted,
  never below the number of known outcomes.
* ``total_resolved``: successful confirmations, *every one*, repeats by the same caller included (an event
  count, like every figure here); ``resolution_rate = resolved / applied``. Globally ``total_issues_resolved``.
* ``active_sessions_24h``: distinct sessions (the client's ``session_id``, else the caller's identity) with any
  event in the last 24 hours.

Two figures count confirmations, and they differ on purpose. ``total_resolved`` counts reports; the issue's
``verification_count`` counts *identities*: those whose current vote (one per identity; a repeat replaces it)
says the fix worked. Confidence is computed from the votes, so that one caller confirming ten times weighs as
one. An identity that confirms twice adds two to ``total_resolved`` and one to ``verification_count``; one that
changes its vote to "failed" moves from ``verification_count`` to ``failure_count`` while its earlier report
stays in ``total_resolved``. The issue statistics carry both, with the same ``verification_count`` as the fix
bundle, the search results and ``gim_confirm_fix``'s ``updated_verification_count``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gateway_plugins.gim.models import GlobalUsageStats, IssueUsageStats

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

__all__ = ["global_stats", "issue_stats"]

_TOP = 10


def _as_datetime(value: Any) -> datetime | None:
    """``MAX(ts)`` is a datetime on PostgreSQL and stored text on SQLite."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    parsed = datetime.fromisoformat(str(value))
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


async def issue_stats(core: GimCore, master_id: str) -> IssueUsageStats:
    rows = await core.store.fetch_all(
        "SELECT event_type, success, COUNT(*) AS n, MAX(ts) AS last FROM gim_usage_events WHERE issue_id = :id "
        "GROUP BY event_type, success",
        {"id": master_id},
    )
    counts: dict[str, int] = {}
    last_query: datetime | None = None
    last_resolved: datetime | None = None
    resolved = 0
    for row in rows:
        kind, n = row["event_type"], int(row["n"])
        counts[kind] = counts.get(kind, 0) + n
        when = _as_datetime(row["last"])
        if kind == "search":
            last_query = max(filter(None, (last_query, when)), default=None)
        if kind == "fix_confirmed" and row["success"] in (True, 1):
            resolved += n
            last_resolved = max(filter(None, (last_resolved, when)), default=None)
    applied = max(counts.get("fix_applied", 0), counts.get("fix_confirmed", 0))
    verified, failed = await core.repo.tally(core.store, master_id)
    return IssueUsageStats(
        issue_id=master_id,
        total_queries=counts.get("search", 0),
        total_fix_retrieved=counts.get("fix_retrieved", 0),
        total_fix_applied=applied,
        total_resolved=resolved,
        resolution_rate=round(resolved / applied, 4) if applied else 0.0,
        last_queried_at=last_query,
        last_resolved_at=last_resolved,
        verification_count=verified,
        failure_count=failed,
    )


async def _count(core: GimCore, where: str, params: dict[str, Any]) -> int:
    row = await core.store.fetch_one(f"SELECT COUNT(*) AS n FROM gim_usage_events WHERE {where}", params)
    return int(row["n"]) if row else 0


async def _top(core: GimCore, where: str) -> list[str]:
    rows = await core.store.fetch_all(
        f"SELECT issue_id, COUNT(*) AS n FROM gim_usage_events WHERE issue_id IS NOT NULL AND {where} "
        f"GROUP BY issue_id ORDER BY n DESC, issue_id LIMIT {_TOP}"
    )
    return [str(r["issue_id"]) for r in rows]


async def global_stats(core: GimCore, *, now: datetime | None = None) -> GlobalUsageStats:
    since = (now or datetime.now(UTC)) - timedelta(hours=24)
    success = "event_type = 'fix_confirmed' AND success = :yes"
    sessions = await core.store.fetch_one(
        "SELECT COUNT(DISTINCT session_id) AS n FROM gim_usage_events WHERE ts >= :since", {"since": since}
    )
    return GlobalUsageStats(
        total_queries=await _count(core, "event_type = 'search'", {}),
        total_issues_resolved=await _count(core, success, {"yes": True}),
        total_issues_submitted=await _count(core, "event_type = 'issue_submitted'", {}),
        active_sessions_24h=int(sessions["n"]) if sessions else 0,
        queries_24h=await _count(core, "event_type = 'search' AND ts >= :since", {"since": since}),
        resolutions_24h=await _count(core, f"{success} AND ts >= :since", {"yes": True, "since": since}),
        top_queried_issues=await _top(core, "event_type = 'search'"),
        top_resolved_issues=await _top(core, "event_type = 'fix_confirmed' AND success = TRUE"),
    )
