"""The five GIM tools: names, descriptions, schemas, scopes and annotations as the API reference gives them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.api import CallContext, SanitizationFailed, Tool, ToolAnnotations
from gateway_plugins.gim.feedback import confirm_fix, get_fix_bundle, report_usage
from gateway_plugins.gim.schemas import (
    ConfirmFixInput,
    ConfirmFixOutput,
    FixBundleOutput,
    GetFixBundleInput,
    ReportUsageInput,
    ReportUsageOutput,
    SearchIssuesInput,
    SearchIssuesOutput,
    SubmitIssueInput,
    SubmitIssueOutput,
)
from gateway_plugins.gim.search import search
from gateway_plugins.gim.submit import submit

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

__all__ = ["READ_SCOPE", "WRITE_SCOPE", "SubmissionRejected", "build_tools"]

READ_SCOPE = "gim:read"
WRITE_SCOPE = "gim:write"


class SubmissionRejected(SanitizationFailed):
    """A submission the sanitisation pipeline refused; rendered as the spec's rejection body."""


def build_tools(core: GimCore) -> list[Tool[Any, Any]]:
    async def search_issues(args: SearchIssuesInput, ctx: CallContext) -> SearchIssuesOutput:
        return await search(core, args, ctx)

    async def fix_bundle(args: GetFixBundleInput, ctx: CallContext) -> FixBundleOutput:
        return await get_fix_bundle(core, args, ctx)

    async def submit_issue(args: SubmitIssueInput, ctx: CallContext) -> SubmitIssueOutput:
        try:
            return await submit(core, args, ctx)
        except SanitizationFailed as exc:
            raise SubmissionRejected(exc.message, details=exc.details) from None

    async def confirm(args: ConfirmFixInput, ctx: CallContext) -> ConfirmFixOutput:
        return await confirm_fix(core, args, ctx)

    async def usage(args: ReportUsageInput, ctx: CallContext) -> ReportUsageOutput:
        return await report_usage(core, args, ctx)

    return [
        Tool(
            name="gim_search_issues",
            description=(
                "Search Global Issue Memory for known issues matching an error. Call it FIRST whenever you hit an "
                "error, with the error message or stack trace as-is; results are ranked by relevance and by how "
                "often the community confirmed the fix. Then fetch the best match with gim_get_fix_bundle."
            ),
            input_model=SearchIssuesInput,
            output_model=SearchIssuesOutput,
            handler=search_issues,
            annotations=ToolAnnotations(
                read_only=True, destructive=False, idempotent=True, open_world=False, title="Search known issues"
            ),
            scope=READ_SCOPE,
        ),
        Tool(
            name="gim_get_fix_bundle",
            description=(
                "Get the validated fix bundle for a specific issue: environment actions in order, version "
                "constraints, verification steps and the code fix. Apply it, run the verification steps, then "
                "report the outcome with gim_confirm_fix."
            ),
            input_model=GetFixBundleInput,
            output_model=FixBundleOutput,
            handler=fix_bundle,
            annotations=ToolAnnotations(
                read_only=True, destructive=False, idempotent=True, open_world=False, title="Get a fix bundle"
            ),
            scope=READ_SCOPE,
        ),
        Tool(
            name="gim_submit_issue",
            description=(
                "Submit a RESOLVED issue to Global Issue Memory. Only call this AFTER you have successfully fixed "
                "the issue, with the root cause and the fix that worked. All text is sanitized before storage; "
                "a submission that cannot be sanitized is rejected. A duplicate of a known issue is merged into it."
            ),
            input_model=SubmitIssueInput,
            output_model=SubmitIssueOutput,
            handler=submit_issue,
            annotations=ToolAnnotations(
                read_only=False, destructive=False, idempotent=False, open_world=False, title="Submit a fix"
            ),
            scope=WRITE_SCOPE,
            exclude_none=True,
        ),
        Tool(
            name="gim_confirm_fix",
            description=(
                "Report whether a fix bundle worked. This data is stored for analytics and confidence scoring. "
                "Call it after applying a fix from gim_get_fix_bundle, whether it worked or not; calling again "
                "replaces your earlier vote for that issue. verification_count counts identities whose vote says "
                "the fix worked (one each); the usage statistics' total_resolved counts every successful report."
            ),
            input_model=ConfirmFixInput,
            output_model=ConfirmFixOutput,
            handler=confirm,
            annotations=ToolAnnotations(
                read_only=False, destructive=False, idempotent=True, open_world=False, title="Confirm a fix"
            ),
            scope=WRITE_SCOPE,
        ),
        Tool(
            name="gim_report_usage",
            description=(
                "Report usage event to GIM server for analytics. Searches, fix retrievals, confirmations and "
                "submissions are recorded automatically (reporting one your call just made returns its event, counted "
                "once); use this for other events such as fix_applied."
            ),
            input_model=ReportUsageInput,
            output_model=ReportUsageOutput,
            handler=usage,
            annotations=ToolAnnotations(
                read_only=False, destructive=False, idempotent=False, open_world=False, title="Report usage"
            ),
            scope=WRITE_SCOPE,
        ),
    ]
