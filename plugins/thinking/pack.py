"""The thinking pack: the ``sequentialthinking`` tool of the reference server, plus optional code audits."""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any

import structlog

from gateway.api import (
    CallContext,
    PackContext,
    Tool,
    ToolAnnotations,
    ToolError,
    ToolPack,
    ValidationFailed,
    off_loop,
)
from gateway_plugins.thinking import session_config
from gateway_plugins.thinking.audit import Auditor
from gateway_plugins.thinking.config import LOGGING_ENV, ThinkingConfig
from gateway_plugins.thinking.history import BoundedCache, Histories, ThoughtRecord
from gateway_plugins.thinking.models import GanReview, ThinkingResult, ThoughtInput
from gateway_plugins.thinking.triggers import audit_trigger, fenced_blocks
from gateway_plugins.thinking.workspace import Workspace

log = structlog.get_logger(__name__)

TOOL_NAME = "sequentialthinking"
WORKSPACE_SCOPE = "thinking:workspace"
"""What an audit needs to read the workspace (its diff, paths, overview) and to apply fixes to it. Plain thinking,
and the review of code written in the thought, need no scope; a deployment without authentication grants it."""
DESCRIPTION = """A detailed tool for dynamic and reflective problem-solving through thoughts.
This tool helps analyze problems through a flexible thinking process that can adapt and evolve.
Each thought can build on, question, or revise previous insights as understanding deepens.

When to use this tool:
- Breaking down complex problems into steps
- Planning and design with room for revision
- Analysis that might need course correction
- Problems where the full scope might not be clear initially
- Problems that require a multi-step solution
- Tasks that need to maintain context over multiple steps
- Situations where irrelevant information needs to be filtered out

Key features:
- You can adjust total_thoughts up or down as you progress
- You can question or revise previous thoughts
- You can add more thoughts even after reaching what seemed like the end
- You can express uncertainty and explore alternative approaches
- Not every thought needs to build linearly - you can branch or backtrack
- Generates a solution hypothesis
- Verifies the hypothesis based on the Chain of Thought steps
- Repeats the process until satisfied
- Provides a correct answer

Parameters explained:
- thought: Your current thinking step (analysis, revision, question, hypothesis, verification...)
- nextThoughtNeeded: True if you need more thinking, even if at what seemed like the end
- thoughtNumber: Current number in sequence (can go beyond initial total if needed)
- totalThoughts: Current estimate of thoughts needed (can be adjusted up/down)
- isRevision: A boolean indicating if this thought revises previous thinking
- revisesThought: If is_revision is true, which thought number is being reconsidered
- branchFromThought: If branching, which thought number is the branching point
- branchId: Identifier for the current branch (if any)
- needsMoreThoughts: If reaching end but realizing more thoughts needed

You should:
1. Start with an initial estimate of needed thoughts, but be ready to adjust
2. Feel free to question or revise previous thoughts
3. Don't hesitate to add more thoughts if needed, even at the "end"
4. Express uncertainty when present
5. Mark thoughts that revise previous thinking or branch into new paths
6. Ignore information that is irrelevant to the current step
7. Generate a solution hypothesis when appropriate
8. Verify the hypothesis based on the Chain of Thought steps
9. Repeat the process until satisfied with the solution
10. Provide a single, ideally correct answer as the final output
11. Only set nextThoughtNeeded to false when truly done and a satisfactory answer is reached"""

AUDIT_DESCRIPTION = """

Code audits are enabled: a thought carrying code (a fenced block, a diff) is reviewed by judges, and the response
adds `sessionId` and `gan` (scores 0-100, verdict pass/revise/reject, line comments, citations, a proposed diff;
`outcome` says whether code was reviewed, there was nothing to review, or no judge could score it). A
revise or reject verdict sets nextThoughtNeeded to true. Override the audit for one thought with a fenced block
```gan-config
{"scope": "diff" | "paths" | "workspace", "paths": [...], "threshold": 85, "maxCycles": 1, "candidates": 1,
 "judges": ["internal"], "applyFixes": false, "task": "..."}
```
branchId names the audit session."""


class ThinkingPack(ToolPack):
    """Serves ``sequentialthinking``. State lives in memory, per caller identity, bounded by the config."""

    name = "thinking"

    def __init__(self, config: ThinkingConfig, context: PackContext) -> None:
        self._config = config
        self._auditing = config.auditing()
        self._histories = Histories(config.history)
        self._sessions: BoundedCache[tuple[str, str], dict[str, Any]] = BoundedCache(
            config.history.max_histories, config.history.ttl_seconds
        )
        self._auditor: Auditor | None = None
        if self._auditing:
            workspace = Workspace(config.resolved_root(), max_file_bytes=config.limits.max_file_bytes)
            self._auditor = Auditor(config, context.provider, workspace)

    def tools(self) -> Sequence[Tool[Any, Any]]:
        return (
            Tool(
                name=TOOL_NAME,
                description=DESCRIPTION + (AUDIT_DESCRIPTION if self._auditing else ""),
                input_model=ThoughtInput,
                output_model=ThinkingResult,
                handler=self.think,
                annotations=ToolAnnotations(
                    title="Sequential Thinking",
                    read_only=not self._auditing,
                    idempotent=False,
                    destructive=self._auditing,  # applyFixes changes files in the workspace (not only additions)
                    open_world=False,
                ),
                text_indent=2,
                optional_scopes=(WORKSPACE_SCOPE,) if self._auditing else (),
            ),
        )

    def format_error(self, error: ToolError) -> dict[str, Any] | None:
        """The spec's error shape: ``{"error": message, "status": "failed", "details": {..., "code"}}``."""
        return {"error": error.message, "status": "failed", "details": {"code": error.code, **error.details}}

    async def think(self, args: ThoughtInput, ctx: CallContext) -> ThinkingResult:
        if len(args.thought) > self._config.max_thought_chars:
            limit = self._config.max_thought_chars
            raise ValidationFailed(
                f"thought is longer than {limit} characters",
                details={
                    "errors": [{"field": "thought", "message": f"at most {limit} characters", "type": "too_long"}]
                },
            )
        total = max(args.totalThoughts, args.thoughtNumber)
        record = ThoughtRecord(
            thought_number=args.thoughtNumber,
            total_thoughts=total,
            next_thought_needed=args.nextThoughtNeeded,
            is_revision=args.isRevision,
            revises_thought=args.revisesThought,
            branch_from_thought=args.branchFromThought,
            branch_id=args.branchId,
            needs_more_thoughts=args.needsMoreThoughts,
        )
        history = self._histories.record(ctx.principal.key, record)
        self._log(record, args.thought, ctx)
        result = ThinkingResult(
            thoughtNumber=args.thoughtNumber,
            totalThoughts=total,
            nextThoughtNeeded=args.nextThoughtNeeded,
            branches=history.branch_ids(),
            thoughtHistoryLength=len(history.thoughts),
        )
        if self._auditor is None:
            return result
        plan = await off_loop(partial(self._plan, args.thought), size=len(args.thought))
        if plan is None:
            return result
        trigger, config, warnings = plan
        session_id = args.branchId or f"gan-{uuid.uuid4().hex[:12]}"
        access = ctx.principal.allows(WORKSPACE_SCOPE)
        if not access:
            warnings.append(
                f"the workspace was not read{' and no fix applied' if config.apply_fixes else ''}: that needs the "
                f"{WORKSPACE_SCOPE} scope; only the code in the thought was reviewed"
            )
        gan = await self._auditor.audit(args.thought, config, warnings, workspace=access)
        self._remember(ctx.principal.key, session_id, gan)
        result.sessionId = session_id
        result.gan = gan
        if gan.verdict in ("revise", "reject"):
            result.nextThoughtNeeded = True
        log.info(
            "thinking.audit",
            trigger=trigger,
            session=session_id,
            outcome=gan.outcome,
            verdict=gan.verdict,
            overall=gan.overall,
        )
        return result

    def _plan(self, thought: str) -> tuple[str, session_config.SessionConfig, list[str]] | None:
        """Why ``thought`` is audited and with which settings, or ``None`` (a pass over the whole thought: it runs
        in a worker thread when the thought is long)."""
        trigger = audit_trigger(thought)
        if trigger is None:
            return None
        return (trigger, *self._session_config(thought))

    def _session_config(self, thought: str) -> tuple[session_config.SessionConfig, list[str]]:
        config, warnings = self._config.defaults, []
        allowed = self._config.allowed_judges
        for block in fenced_blocks(thought):
            if block.language != "gan-config":
                continue
            raw, problem = session_config.parse_block(block.body)
            if problem:
                warnings.append(problem)
                continue
            config, more = session_config.sanitize(raw, config, allowed_judges=allowed)
            warnings += more
        return config, warnings

    def _remember(self, identity: str, session_id: str, gan: GanReview) -> None:
        """Keep per-session audit rounds, so a later audit of the same session says how the score moved (only
        scores of code that was reviewed count: "nothing to review" and "unscored" are not scores of the code)."""
        state = self._sessions.get_or_create((identity, session_id), lambda: {"rounds": 0, "overall": None})
        state["rounds"] += 1
        previous = state["overall"]
        if gan.outcome == "reviewed":
            state["overall"] = gan.overall
        if state["rounds"] > 1:
            moved = f" (previous round: {previous})" if previous is not None else ""
            gan.review.summary += f" Session round {state['rounds']}{moved}."

    def _log(self, record: ThoughtRecord, thought: str, ctx: CallContext) -> None:
        """The reference server prints a box to stderr; we log the same facts at debug level."""
        if os.environ.get(LOGGING_ENV, "").strip().lower() == "true":
            return
        kind = "revision" if record.is_revision else "branch" if record.branch_from_thought else "thought"
        log.debug(
            "thinking.thought",
            kind=kind,
            principal=ctx.principal.key,
            number=record.thought_number,
            total=record.total_thoughts,
            revises=record.revises_thought,
            branch_from=record.branch_from_thought,
            branch_id=record.branch_id,
            thought=thought[:2000],
        )
