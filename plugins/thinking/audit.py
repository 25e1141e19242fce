"""One audit: gather the code, run the judges, try candidate fixes over further cycles, apply the fix if asked.

Cycles (``maxCycles``): cycle 1 reviews the code as it is; its scores, verdict and comments are the ones
reported. Each further cycle applies up to ``candidates`` candidate fixes in memory — first all judges' proposed
diffs combined, then each judge's own — re-runs the judges on each, and keeps the best if it beats the current
best score. The loop stops when a candidate passes, none improves, or there is nothing left to try.
``proposed_diff`` is then the cumulative diff from the workspace to the best verified candidate (or, with one
cycle, the unverified cycle-1 proposal); ``iterations`` counts the judge cycles run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import anyio
import structlog

from gateway.api import JUDGE, GatewayError, Judge, JudgeRequest, JudgeResult, ReviewFile, off_loop
from gateway_plugins.thinking import diffs, git
from gateway_plugins.thinking.combine import Combined, combine
from gateway_plugins.thinking.config import ThinkingConfig
from gateway_plugins.thinking.context import AuditContext, ContextCollector
from gateway_plugins.thinking.models import GanReview, Review
from gateway_plugins.thinking.session_config import SessionConfig
from gateway_plugins.thinking.workspace import PathRefused, Workspace

log = structlog.get_logger(__name__)

ProviderLookup = Callable[..., object]


@dataclass(frozen=True)
class _Round:
    files: tuple[ReviewFile, ...]
    results: list[JudgeResult]
    combined: Combined


class Auditor:
    def __init__(self, config: ThinkingConfig, provider: ProviderLookup, workspace: Workspace) -> None:
        self._config = config
        self._provider = provider
        self._workspace = workspace
        self._collector = ContextCollector(workspace, config.limits)
        self._apply_lock = anyio.Lock()

    async def audit(
        self, thought: str, session: SessionConfig, warnings: list[str], *, workspace: bool = True
    ) -> GanReview:
        """Review the code of ``thought`` and of ``session``'s scope; ``workspace`` false: the thought's alone, and
        nothing is applied."""
        context = await self._collector.collect(session, thought, workspace=workspace)
        warnings = [*warnings, *context.warnings]
        refused = [] if session.apply_fixes and not workspace else None  # applyFixes asked for, not allowed
        if not context.files:
            summary = "Nothing to review: no code in the thought and none in the selected scope."
            if context.diff:
                summary = "Nothing to review: the change has no readable text file (deletions, binaries, size limits)."
            if not workspace:
                summary = (
                    f"Nothing reviewed: no code in the thought, and the workspace (scope {session.scope!r}) was not"
                    " read: the caller lacks the thinking:workspace scope."
                )
            return GanReview(
                overall=100,  # no code, so no finding: the score a judge gives code it finds nothing wrong with
                verdict="pass",
                outcome="nothing_to_review",
                review=Review(summary=summary),
                warnings=warnings,
                applied=refused,
                config=session.public(),
            )
        judges = self._judges(session)
        base = self._request(session, context, thought, tuple(context.files))
        first = await self._round(judges, base, session)
        proposal = await self._first_proposal(first, warnings)
        best, iterations, best_cycle = await self._improve(judges, base, session, first, warnings)
        if best is not first:
            proposal = await self._cumulative_diff(first.files, best.files, warnings)
        overall = first.combined.overall  # None: no judge could score
        review = GanReview(
            overall=overall if overall is not None else 0,
            dimensions=first.combined.dimensions,
            verdict=first.combined.verdict,
            review=first.combined.review,
            proposed_diff=proposal,
            iterations=iterations,
            judge_cards=first.combined.cards,
            outcome="reviewed" if overall is not None else "unscored",
            abstained=first.combined.abstained,
            warnings=list(dict.fromkeys(warnings)),
            config=session.public(),
        )
        if best is not first:
            review.review.summary += (
                f" Applying proposed_diff raises the overall score to {best.combined.overall}"
                f" (verdict {best.combined.verdict}, verified in cycle {best_cycle})."
            )
        if session.apply_fixes and workspace:
            review.applied = await self._apply(proposal, context, review.warnings)
        else:
            review.applied = refused
        return review

    async def _improve(
        self,
        judges: Sequence[tuple[str, Judge | str]],
        base: JudgeRequest,
        session: SessionConfig,
        first: _Round,
        warnings: list[str],
    ) -> tuple[_Round, int, int]:
        """Further cycles: the best round, the number of cycles run, and the cycle that produced the best."""
        best, cycle, best_cycle = first, 1, 1
        while cycle < session.max_cycles and best.combined.verdict != "pass":
            candidates = await self._candidates(best, warnings)
            if not candidates:
                break
            cycle += 1
            rounds = [
                await self._round(judges, replace(base, files=files), session)
                for files in candidates[: session.candidates]
            ]
            winner = max(rounds, key=_score)
            if _score(winner) <= _score(best):
                break
            best, best_cycle = winner, cycle
        return best, cycle, best_cycle

    def _judges(self, session: SessionConfig) -> list[tuple[str, Judge | str]]:
        """The session's judges in order; an unavailable one comes with the reason instead."""
        judges: list[tuple[str, Judge | str]] = []
        for name in session.judges:
            try:
                judges.append((name, self._provider(JUDGE, name)))  # type: ignore[arg-type]
            except GatewayError as error:
                judges.append((name, f"unavailable: {getattr(error, 'reason', None) or error}"))
        return judges

    def _request(
        self, session: SessionConfig, context: AuditContext, thought: str, files: tuple[ReviewFile, ...]
    ) -> JudgeRequest:
        return JudgeRequest(
            task=session.task,
            scope=session.scope,
            files=files,
            diff=context.diff,
            changed_paths=tuple(dict.fromkeys(context.changed_paths)),
            overview=context.overview,
            thought=thought[:20_000],
        )

    async def _round(
        self, judges: Sequence[tuple[str, Judge | str]], request: JudgeRequest, session: SessionConfig
    ) -> _Round:
        results: list[JudgeResult] = [
            JudgeResult.abstain(name, judge) if isinstance(judge, str) else JudgeResult.abstain(name, "not run")
            for name, judge in judges
        ]

        async def run(index: int, name: str, judge: Judge) -> None:
            try:
                with anyio.fail_after(self._config.judge_timeout_seconds):
                    results[index] = await judge.review(request)
            except TimeoutError:
                results[index] = JudgeResult.abstain(name, f"no verdict within {self._config.judge_timeout_seconds:g}s")
            except Exception as error:  # a judge is a plugin: its failure must not sink the audit
                log.exception("thinking.judge_failed", judge=name)
                results[index] = JudgeResult.abstain(name, f"failed ({type(error).__name__}: {error})")

        async with anyio.create_task_group() as group:
            for index, (name, judge) in enumerate(judges):
                if not isinstance(judge, str):
                    group.start_soon(run, index, name, judge)
        limits = {"reject_margin": self._config.reject_margin, "max_comments": self._config.max_comments}
        combined = combine(results, request.files, threshold=session.threshold, **limits)
        return _Round(request.files, results, combined)

    async def _first_proposal(self, first: _Round, warnings: list[str]) -> str | None:
        """Every judge's proposed diff that applies, in judge order, combined into one diff (unverified)."""
        files, usable = first.files, []
        for result in first.results:
            if result.proposed_diff and (
                patched := await self._patched(files, result.proposed_diff, result.judge, warnings)
            ):
                files = patched
                usable.append(result.proposed_diff)
        if len(usable) <= 1:
            return usable[0] if usable else None
        return await self._cumulative_diff(first.files, files, warnings)

    async def _candidates(self, best: _Round, warnings: list[str]) -> list[tuple[ReviewFile, ...]]:
        """The candidate file sets: all judges' diffs applied in turn, then each judge's diff alone."""
        proposals = [(r.judge, r.proposed_diff) for r in best.results if r.proposed_diff]
        candidates: list[tuple[ReviewFile, ...]] = []
        if len(proposals) > 1:
            files: tuple[ReviewFile, ...] | None = best.files
            for judge, diff in proposals:
                files = await self._patched(files, diff, judge, []) if files is not None else None
            if files is not None:
                candidates.append(files)
        for judge, diff in proposals:
            files = await self._patched(best.files, diff, judge, warnings)
            if files is not None and files not in candidates:
                candidates.append(files)
        return [files for files in candidates if files != best.files]

    async def _patched(
        self, files: tuple[ReviewFile, ...], diff: str, judge: str, warnings: list[str]
    ) -> tuple[ReviewFile, ...] | None:
        """``files`` with a judge's ``diff`` applied in memory, or ``None`` (with a warning) when it may not or
        does not apply: it must touch only workspace files under review, by plain relative paths."""
        patches = await off_loop(partial(diffs.parse, diff), size=len(diff))
        editable = {f.path: f for f in files if f.origin == "workspace" and not f.fragment and not f.truncated}
        problems = diffs.patch_problems(patches)
        problems += [f"{p}: not a reviewed workspace file" for p in diffs.touched_paths(patches) if p not in editable]
        timeout = self._config.limits.git_timeout_seconds
        if not problems:
            problems += await _unseen_paths(self._workspace.root, None, diff, patches, timeout)
        if problems:
            warnings.append(f"{judge}: proposed diff ignored ({problems[0]})")
            return None
        touched = {path: editable[path].content for path in diffs.touched_paths(patches)}
        try:
            patched = await git.apply_in_memory(touched, diff, time_limit=timeout)
            if patched is None:
                warnings.append(f"{judge}: proposed diff ignored (it does not apply to the reviewed files)")
                return None
            return tuple([await self._updated(f, patched[f.path]) if f.path in touched else f for f in files])
        except git.GitError as error:
            warnings.append(f"{judge}: proposed diff not checked ({error})")
            return None

    async def _updated(self, file: ReviewFile, content: str) -> ReviewFile:
        """``file`` with new ``content``; its changed lines follow the change (lines the change adds join)."""
        text = await git.diff(file.path, file.content, content, time_limit=self._config.limits.git_timeout_seconds)
        patch = next(iter(await off_loop(partial(diffs.parse, text), size=len(text))), None)
        return replace(file, content=content, changed_lines=diffs.carry_lines(patch, file.changed_lines))

    async def _cumulative_diff(
        self, original: Sequence[ReviewFile], final: Sequence[ReviewFile], warnings: list[str]
    ) -> str | None:
        """The diff from the reviewed workspace files to their ``final`` versions (``None`` when none changed)."""
        before = {f.path: f.content for f in original if f.origin == "workspace"}
        timeout = self._config.limits.git_timeout_seconds
        try:
            parts = [
                await git.diff(f.path, before[f.path], f.content, time_limit=timeout) for f in final if f.path in before
            ]
        except git.GitError as error:
            warnings.append(f"proposed diff not written ({error})")
            return None
        return "".join(parts) or None

    async def _apply(self, diff: str | None, context: AuditContext, warnings: list[str]) -> list[str]:
        """Apply ``diff`` to the workspace when it is safe and applies cleanly; the paths changed."""
        if not diff:
            warnings.append("applyFixes: there is no proposed diff to apply")
            return []
        patches = await off_loop(partial(diffs.parse, diff), size=len(diff))
        problems = diffs.patch_problems(patches)
        for path in diffs.touched_paths(patches):
            try:
                self._workspace.editable(path)
            except PathRefused as refused:
                problems.append(str(refused))
        timeout = self._config.limits.git_timeout_seconds
        root = self._workspace.root
        if not problems:
            problems += await _unseen_paths(root, context.repo, diff, patches, timeout)
        if problems:
            warnings.append(f"applyFixes refused: {'; '.join(problems)}")
            return []
        try:
            async with self._apply_lock:
                failure = await git.apply_to_workspace(root, context.repo, diff, check=True, time_limit=timeout)
                if failure is None:
                    failure = await git.apply_to_workspace(root, context.repo, diff, check=False, time_limit=timeout)
        except git.GitError as error:
            failure = str(error)
        if failure is not None:
            warnings.append(f"applyFixes: the diff does not apply cleanly; nothing changed ({failure})")
            return []
        applied = [patch.path for patch in patches]
        log.info("thinking.fixes_applied", paths=applied)
        return applied


async def _unseen_paths(
    root: Path, repo: git.RepoInfo | None, diff: str, patches: list[diffs.FilePatch], time_limit: float
) -> list[str]:
    """A problem when ``git apply`` would touch other paths than the checks read in ``diff`` (a line break git does
    not take for one, a header git strips differently): what was checked must be what is applied."""
    try:
        applied = await git.paths_git_applies(root, repo, diff, time_limit=time_limit)
    except git.GitError as error:
        return [f"the diff could not be read by git ({error})"]
    if applied is None:
        return ["git could not read the diff"]
    checked = set(diffs.touched_paths(patches))
    unseen = sorted(applied ^ checked)
    return [f"git reads the diff as touching {', '.join(unseen)}, which the checks did not see"] if unseen else []


def _score(round_: _Round) -> int:
    return -1 if round_.combined.overall is None else round_.combined.overall
