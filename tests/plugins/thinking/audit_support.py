"""What the audit tests share: a change with known defects, running one audit through the gateway, reading its
inline comments, and test judges (a spy, one proposing a patch, one that raises)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from gateway.api import JUDGE, JudgeRequest, JudgeResult, ProviderRegistrar, hookimpl
from gateway.testing import running_gateway
from tests.plugins.thinking.conftest import GitRepo, call, gateway_config, thought

ORIGINAL = """\
import os


def read_config(path):
    with open(path) as handle:
        return handle.read()
"""

CHANGED = """\
import os
import sys


def read_config(path):
    try:
        with open(os.fspath(path)) as handle:
            return handle.read()
    except:
        pass
    return DEFAULTS
"""
"""Against ORIGINAL: line 2 adds an unused import, line 9 a bare swallowed except, line 11 an undefined name."""


def applied(root: Path, path: str, diff: str, scratch: Path) -> str:
    """``path`` of ``root`` after ``git apply`` of ``diff``, on a copy (the workspace is left alone)."""
    (scratch / path).parent.mkdir(parents=True)
    (scratch / path).write_text((root / path).read_text())
    subprocess.run(["git", "apply", "-"], cwd=scratch, input=diff.encode(), check=True, capture_output=True)
    return (scratch / path).read_text()


def comments(body: dict[str, Any]) -> set[tuple[str, int, str]]:
    return {(c["path"], c["line"], c["judge"]) for c in body["gan"]["review"]["inline"]}


def lines_of(body: dict[str, Any], path: str) -> list[int]:
    return sorted(c["line"] for c in body["gan"]["review"]["inline"] if c["path"] == path)


async def audit(root: Path, data: Path, text: str, extra_plugins: Any = (), **config: Any) -> dict[str, Any]:
    async with running_gateway(gateway_config(root, **config), data, extra_plugins=extra_plugins) as client:
        return await call(client, thought(text, 2, 3, next_needed=False, branchId="review-1"))


class SpyJudges:
    """Test judges: ``spy`` records requests and scores 100; ``evil`` proposes a patch outside the workspace;
    ``broken`` raises."""

    def __init__(self, seen: list[JudgeRequest], evil_diff: str = "") -> None:
        self.seen = seen
        self.evil_diff = evil_diff

    @hookimpl
    def gateway_register_providers(self, register: ProviderRegistrar) -> None:
        register(JUDGE, "spy", lambda ctx: _Judge("spy", self.seen, None))
        register(JUDGE, "evil", lambda ctx: _Judge("evil", self.seen, self.evil_diff))
        register(JUDGE, "broken", lambda ctx: _Judge("broken", self.seen, None, crash=True))


class _Judge:
    def __init__(self, name: str, seen: list[JudgeRequest], diff: str | None, crash: bool = False) -> None:
        self.name = name
        self._seen, self._diff, self._crash = seen, diff, crash

    async def review(self, request: JudgeRequest) -> JudgeResult:
        self._seen.append(request)
        if self._crash:
            raise RuntimeError("judge bug")
        return JudgeResult(self.name, 100, {"correctness": 100}, "fine", proposed_diff=self._diff)


async def evil_judge_applies(repo: GitRepo, tmp_path: Path, diff: str) -> dict:
    """The ``gan`` block of an audit with ``applyFixes`` whose one judge proposes ``diff``."""
    config = '{"applyFixes": true, "judges": ["evil"]}'
    body = await audit(
        repo.root, tmp_path / "data", f"```gan-config\n{config}\n```",
        extra_plugins=[("evil", SpyJudges([], diff))], allowed_judges=["internal", "evil"],
    )  # fmt: skip
    return body["gan"]
