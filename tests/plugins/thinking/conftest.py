"""Fixtures of the thinking-pack tests: throwaway git repositories, gateway configs, and a call helper."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest


class GitRepo:
    """A real repository in a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "tests@example.invalid")
        self.git("config", "user.name", "Tests")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.root, capture_output=True, check=True)
        return done.stdout.decode()

    def write(self, path: str, text: str) -> Path:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target

    def commit(self, message: str = "commit") -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def state(self) -> tuple[str, str, str]:
        """Status, index digest and HEAD: equal before and after means the repository was not changed."""
        index = self.root / ".git" / "index"
        digest = hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else ""
        head = self.git("rev-parse", "--verify", "-q", "HEAD") if (self.root / ".git" / "refs").exists() else ""
        return self.git("status", "--porcelain", "--untracked-files=all"), digest, head


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def gateway_config(root: Path | None = None, *, audit: bool = True, **plugin: Any) -> dict[str, Any]:
    """A gateway serving only the thinking pack, auditing ``root``."""
    table: dict[str, Any] = {"audit": audit, **plugin}
    if root is not None:
        table["workspace_root"] = str(root)
    return {"packs": {"enabled": ["thinking"]}, "plugins": {"thinking": table}}


def thought(text: str, number: int = 1, total: int = 3, next_needed: bool = True, **extra: Any) -> dict[str, Any]:
    return {"thought": text, "nextThoughtNeeded": next_needed, "thoughtNumber": number, "totalThoughts": total, **extra}


async def call(client: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call ``sequentialthinking`` and return its JSON body, checking the text block mirrors it."""
    result = await client.call_tool("sequentialthinking", arguments)
    body = json.loads(result.content[0].text)
    if not result.is_error:
        assert result.structured_content == body
        assert result.content[0].text == json.dumps(body, indent=2, ensure_ascii=False)
    return body
