"""A judge: flags debugging leftovers (``debugger;``, ``breakpoint()``, ``console.log``...) on the lines a change
touched, and scores maintainability from their count."""

from __future__ import annotations

import re

from gateway.api import JudgeRequest, JudgeResult, ReviewComment

LEFTOVER = re.compile(r"\bdebugger\s*;|\bbreakpoint\(\)|\bpdb\.set_trace\(\)|\bconsole\.log\(|\bTODO\b|\bFIXME\b")
PENALTY = 20


class LeftoversJudge:
    """Deterministic and offline: equal requests give equal results."""

    @property
    def name(self) -> str:
        return "leftovers"

    async def review(self, request: JudgeRequest) -> JudgeResult:
        if not request.files:
            return JudgeResult.abstain(self.name, "nothing to review")
        comments = tuple(
            ReviewComment(
                file.path,
                number,
                f"debugging leftover: {match.group()}",
                "minor",
                "maintainability",
                rule="debug-leftover",
            )
            for file in request.files
            for number, line in enumerate(file.content.splitlines(), start=1)
            if file.in_scope(number) and (match := LEFTOVER.search(line))
        )
        score = max(0, 100 - PENALTY * len(comments))
        summary = f"{len(comments)} debugging leftover(s)" if comments else "no debugging leftovers"
        return JudgeResult(self.name, score, {"maintainability": score}, summary, comments)
