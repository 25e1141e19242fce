"""The GIM tool pack: Global Issue Memory (search, fix bundles, submissions, confirmations, usage)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.api import (
    CallContext,
    PackContext,
    Reindexable,
    ReindexProgress,
    ReindexReport,
    Resource,
    ResourceContent,
    ResourceTemplate,
    Tool,
    ToolError,
    ToolPack,
)
from gateway_plugins.gim.config import GimConfig
from gateway_plugins.gim.core import GimCore
from gateway_plugins.gim.feedback import resolve_master
from gateway_plugins.gim.models import GlobalUsageStats, IssueUsageStats
from gateway_plugins.gim.reindex import reindex_all
from gateway_plugins.gim.tools import READ_SCOPE, SubmissionRejected, build_tools
from gateway_plugins.gim.usage import global_stats, issue_stats

__all__ = ["INSTRUCTIONS", "GimPack"]

INSTRUCTIONS = """\
Global Issue Memory (GIM) is a shared memory of resolved software errors and verified fixes.
- When you hit an error, call gim_search_issues FIRST with the error message or stack trace as-is (paths, versions \
and line numbers may differ from the stored ones), before debugging on your own.
- If a result matches, call gim_get_fix_bundle with its issue_id and apply the fix bundle: env_actions in order, \
respect constraints, then run the verification steps.
- After applying a fix, ALWAYS call gim_confirm_fix with success true or false (one vote per issue; a repeat \
replaces your earlier vote). Confirmations make good fixes rise.
- Call gim_submit_issue ONLY for an issue you have actually RESOLVED, with its root cause and the fix that worked. \
Never include secrets, personal data or business logic; use generic names. Submitting a known issue again is \
fine: it is merged into the existing issue.
- gim_report_usage records other analytics events (fix_applied, for instance); the other tools record their own.
"""


class GimPack(ToolPack, Reindexable):
    """Tools, resources and lifecycle of GIM; the logic lives in :class:`GimCore` and the modules it uses."""

    name = "gim"
    instructions = INSTRUCTIONS

    def __init__(self, config: GimConfig, context: PackContext) -> None:
        self.config = config
        self.core = GimCore(config, context)
        self._tools = build_tools(self.core)

    def tools(self) -> Sequence[Tool[Any, Any]]:
        return self._tools

    def resources(self) -> Sequence[Resource]:
        async def read(ctx: CallContext) -> ResourceContent:
            return ResourceContent(text=(await self.global_stats()).model_dump_json())

        return [
            Resource(
                uri="gim://stats",
                name="GIM usage statistics",
                read=read,
                description="GlobalUsageStats: queries, resolutions, submissions, activity in the last 24 hours.",
                scope=READ_SCOPE,
            )
        ]

    def resource_templates(self) -> Sequence[ResourceTemplate]:
        async def read(variables: Mapping[str, str], ctx: CallContext) -> ResourceContent:
            stats = await self.issue_stats(variables["issue_id"])
            return ResourceContent(text=stats.model_dump_json())

        return [
            ResourceTemplate(
                uri_template="gim://issues/{issue_id}/stats",
                name="GIM issue statistics",
                read=read,
                description=(
                    "IssueUsageStats of one issue: queries, fix retrievals, applications and resolutions (event "
                    "counts: total_resolved counts every successful confirmation), and its votes "
                    "(verification_count, failure_count: identities, one vote each, as in the fix bundle)."
                ),
                scope=READ_SCOPE,
            )
        ]

    async def start(self) -> None:
        await self.core.start()

    async def stop(self) -> None:
        await self.core.stop()

    async def reindex(self, *, missing_only: bool, progress: ReindexProgress) -> list[ReindexReport]:
        return await reindex_all(self.core, missing_only=missing_only, progress=progress)

    async def global_stats(self) -> GlobalUsageStats:
        return await global_stats(self.core)

    async def issue_stats(self, issue_id: str) -> IssueUsageStats:
        """Stats of an issue (a child's id gives its master's); ``not_found`` for an unknown id."""
        return await issue_stats(self.core, await resolve_master(self.core, issue_id))

    def format_error(self, error: ToolError) -> dict[str, Any] | None:
        """A refused submission gets the spec's rejection body; every other error the default body."""
        if isinstance(error, SubmissionRejected):
            confidence = error.details.get("confidence_score")
            return {
                "status": "rejected",
                "reason": "sanitization_failed",
                "details": error.message,
                "confidence_score": confidence if isinstance(confidence, int | float) else 1.0,
            }
        return None
