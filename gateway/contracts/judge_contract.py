"""The contract every :class:`gateway.api.Judge` honours, as a reusable test base class.

Use it from a test module (a third-party judge runs it against its own class)::

    from gateway.contracts.judge_contract import JudgeContract

    class TestMyJudge(JudgeContract):
        @pytest.fixture
        async def judge(self):
            return MyJudge(...)

What it checks: the judge satisfies the protocol and has a name; a review of code with known defects returns a
:class:`JudgeResult` whose score and dimensions are integers in 0-100 (or that abstains with a reason, never a
made-up score); comments cite reviewed files at lines that exist, with a known severity; a proposed diff touches
only reviewed workspace files and applies with ``git apply`` to the reviewed contents; an empty request does not
raise; concurrent reviews do not interfere (equal requests give equal results when the judge is deterministic).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import anyio
import pytest

from gateway.api import RUBRIC, SEVERITIES, Judge, JudgeRequest, JudgeResult, ReviewFile, source_lines

DEFECTIVE_PYTHON = """\
import os
import sys


def load(path):
    try:
        with open(os.fspath(path)) as handle:
            return handle.read()
    except:
        pass
    return undefined_default
"""
"""A Python file with an unused import (line 2), a bare swallowed ``except`` (line 9) and an undefined name
(line 11)."""

DEFECTIVE_SCRIPT = """\
export function total(items) {
  debugger;
  return items.reduce((a, b) => a + b, 0);
}
"""


def defective_request() -> JudgeRequest:
    """A diff-scope request over two changed files with known defects."""
    files = (
        ReviewFile("pkg/loader.py", DEFECTIVE_PYTHON, changed_lines=frozenset(range(1, 12))),
        ReviewFile("web/total.js", DEFECTIVE_SCRIPT, changed_lines=frozenset({2})),
    )
    return JudgeRequest(
        task="Review the loader change",
        scope="diff",
        files=files,
        changed_paths=("pkg/loader.py", "web/total.js"),
        thought="Check the new loader before merging.",
    )


def git_apply_check(files: tuple[ReviewFile, ...], diff: str) -> subprocess.CompletedProcess[bytes]:
    """``git apply --check`` of ``diff`` on a scratch copy of ``files``."""
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        for file in files:
            target = base / file.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(file.content)
        return subprocess.run(
            ["git", "apply", "--check", "-"], cwd=base, input=diff.encode(), capture_output=True, check=False
        )


class JudgeContract:
    """Subclass and provide a ``judge`` fixture. Override ``request`` to review other code."""

    deterministic: bool = False
    """Set to ``True`` for judges that must give equal results for equal requests."""

    @pytest.fixture
    def request_under_review(self) -> JudgeRequest:
        return defective_request()

    @pytest.mark.anyio
    async def test_satisfies_the_protocol(self, judge: Judge) -> None:
        assert isinstance(judge, Judge)
        assert isinstance(judge.name, str) and judge.name

    @pytest.mark.anyio
    async def test_result_is_well_formed(self, judge: Judge, request_under_review: JudgeRequest) -> None:
        result = await judge.review(request_under_review)
        assert isinstance(result, JudgeResult)
        assert result.judge
        if result.score is None:
            assert result.notes, "an abstaining judge must say why"
            assert not result.dimensions and not result.comments
            return
        assert isinstance(result.score, int) and 0 <= result.score <= 100
        assert result.dimensions, "a scoring judge scores at least one dimension"
        for name, score in result.dimensions.items():
            assert isinstance(name, str) and name
            assert isinstance(score, int) and 0 <= score <= 100
        assert any(name in RUBRIC for name in result.dimensions)

    @pytest.mark.anyio
    async def test_comments_cite_reviewed_lines(self, judge: Judge, request_under_review: JudgeRequest) -> None:
        result = await judge.review(request_under_review)
        sizes = {file.path: len(source_lines(file.content)) for file in request_under_review.files}
        for comment in result.comments:
            assert comment.path in sizes, comment
            assert 1 <= comment.line <= sizes[comment.path], comment
            assert comment.end_line is None or comment.line <= comment.end_line <= sizes[comment.path], comment
            assert comment.severity in SEVERITIES
            assert comment.message.strip()

    @pytest.mark.anyio
    async def test_proposed_diff_applies_to_reviewed_files(
        self, judge: Judge, request_under_review: JudgeRequest
    ) -> None:
        result = await judge.review(request_under_review)
        if result.proposed_diff is None:
            return
        editable = {file.path for file in request_under_review.files if file.origin == "workspace"}
        headers = [line for line in result.proposed_diff.splitlines() if line.startswith(("--- ", "+++ "))]
        assert headers, "a proposed diff has file headers"
        for header in headers:
            path = header[4:].split("\t")[0]
            assert path == "/dev/null" or path[2:] in editable, header
        check = git_apply_check(request_under_review.files, result.proposed_diff)
        assert check.returncode == 0, check.stderr.decode()

    @pytest.mark.anyio
    async def test_empty_request_does_not_raise(self, judge: Judge) -> None:
        result = await judge.review(JudgeRequest(task="nothing", scope="diff", files=()))
        assert isinstance(result, JudgeResult)
        assert result.score is None or 0 <= result.score <= 100

    @pytest.mark.anyio
    async def test_concurrent_reviews(self, judge: Judge, request_under_review: JudgeRequest) -> None:
        results: list[JudgeResult] = []

        async def review() -> None:
            results.append(await judge.review(request_under_review))

        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(review)
        assert len(results) == 4
        if self.deterministic:
            assert all(result == results[0] for result in results)
