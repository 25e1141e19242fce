"""The worst-case calls of ``bench/worst_case.py``: the deployment it serves, and each tool's and route's inputs.

Sizes: a field's ``max_length`` where the schema has one; a free-text field without one gets :data:`UNBOUNDED_CHARS`
(the GIM fields' bound, well inside the default 1 MB body limit).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.adversarial import ADVERSARIAL, CODE_ADVERSARIAL
from tests.plugins.context.support import sample_repo
from tests.plugins.gim.support import gim_config

ROOT = Path(__file__).resolve().parent.parent
PY_SERVER = ROOT / "tests" / "plugins" / "remote" / "servers" / "py_server.py"
UNBOUNDED_CHARS = 200_000
QUERY_CHARS = 10_000
"""``context.search``'s ``query`` bound."""
SUGGEST_CHARS = 200
CURSOR_CHARS = 2_000
NAME_CHARS = 200
PACKS = ("gim", "thinking", "context", "remote")
UNLIMITED_TIERS = (
    "search", "index", "connectors", "config", "status", "suggestions", "index_status", "force_reindex",
    "connectors_write", "connectors_delete", "config_write",
)  # fmt: skip
"""The REST routes' rate-limit tiers, resized so that a run of worst-case calls is not refused."""


def deployment(scratch: Path, workspace: Path, packs: tuple[str, ...] = PACKS) -> dict[str, Any]:
    """GIM, Sequential Thinking (auditing with the ``internal`` judge), the Context Engine over a small sample
    repository, and ``remote`` in front of the test suite's SDK server (stdio), over HTTP."""
    config = gim_config(
        gateway={"data_dir": (scratch / "data").as_posix(), "log_level": "warning"},
        transport={"kind": "http", "max_body_bytes": 64_000_000},
        packs={"enabled": list(packs)},
        rest={"tiers": dict.fromkeys(UNLIMITED_TIERS, 1_000_000)},
    )
    config["plugins"]["thinking"] = {"audit": True, "workspace_root": workspace.as_posix()}
    repo = sample_repo(scratch / "context-repo")
    config["plugins"]["context"] = {
        "heartbeat_seconds": 0.2,
        "refresh_seconds": 0.0,
        "connectors": [{"type": "file", "name": "sample", "root": repo.as_posix()}],
    }
    config["plugins"]["remote"] = {
        "servers": [
            {
                "name": "py",
                "command": [sys.executable, str(PY_SERVER), "stdio", str(scratch / "py-state")],
                "prefix": "py_",
            }
        ]
    }
    return config


REPETITIVE_FILE = "repetitive.py"
"""A workspace file of 7,000 lines of 101 repeated statements, every other one with a trailing blank: the internal
judge proposes to strip them, and checking that fix diffs two versions of the file (cubic for a sequence matcher)."""


def make_workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    lines = (f"value_{n % 101} = {n % 101}" + (" " if n % 2 else "") for n in range(7000))
    (root / REPETITIVE_FILE).write_text("\n".join(lines) + "\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", "commit", "-q", "-m", "init"],
        cwd=root,
        check=True,
    )
    return root


# -- the worst-case calls -----------------------------------------------------------------------------------------


def _submit(text: str) -> dict[str, Any]:
    """Ten free-text fields at the maximum size."""
    return {
        "error_description": text,
        "error_message": text,
        "code_snippet": text,
        "root_cause": text,
        "fix_bundle": {
            "env_actions": [{"order": 1, "type": "command", "command": text, "explanation": text}],
            "verification": [{"order": 1, "command": text, "expected_output": text}],
            "code_fix": text,
            "patch_diff": text,
        },
        "model": "m" * 200,
        "provider": "p" * 100,
    }


def thought_arguments(text: str) -> dict[str, Any]:
    return {"thought": text, "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False, "branchId": "b" * 200}


def _fenced(text: str, size: int) -> str:
    head, tail = "```python\n", "\n```"
    return head + text[: size - len(head) - len(tail)] + tail


@dataclass(frozen=True)
class Case:
    """One call: a tool through the REST facade (``POST /api/v1/tools/TOOL``), or a pack's own REST route."""

    tool: str
    input: str
    chars: int
    arguments: dict[str, Any]
    method: str = "POST"
    route: str | None = None
    """A pack's route under ``/api/v1`` (``/search``); ``None``: the tool ``tool``. GET sends ``arguments`` as the
    query string."""

    @property
    def path(self) -> str:
        return f"/api/v1{self.route}" if self.route else f"/api/v1/tools/{self.tool}"


def cases(gim_chars: int, thought_chars: int, issue_id: str) -> Iterator[Case]:
    """GIM and Sequential Thinking."""
    now = datetime.now(UTC).isoformat()
    for name, make in ADVERSARIAL.items():
        text = make(gim_chars)
        yield Case("gim_search_issues", name, len(text), {"error_message": text, "limit": 100})
        yield Case("gim_submit_issue", name, 10 * len(text), _submit(text))
        notes = make(10_000)
        yield Case(
            "gim_confirm_fix",
            name,
            len(notes) + 200,
            {"issue_id": issue_id, "success": True, "notes": notes, "session_id": make(200)},
        )
        yield Case("gim_get_fix_bundle", name, 64, {"issue_id": make(64)})
        fields = {"session_id": make(200), "model": make(200), "provider": make(100)}
        yield Case("gim_report_usage", name, 500, {"event_type": "search", "timestamp": now, **fields})
        yield Case("sequentialthinking", name, thought_chars, thought_arguments(make(thought_chars)))
    for name, make in CODE_ADVERSARIAL.items():
        yield Case("gim_search_issues", name, gim_chars, {"error_message": make(gim_chars), "limit": 100})
        yield Case("gim_submit_issue", name, 10 * gim_chars, _submit(make(gim_chars)))
        yield Case("sequentialthinking", name, thought_chars, thought_arguments(make(thought_chars)))
        fenced = _fenced(make(thought_chars), thought_chars)
        yield Case("sequentialthinking", f"{name} (fenced)", thought_chars, thought_arguments(fenced))
    audit = f'```gan-config\n{{"scope": "paths", "paths": ["{REPETITIVE_FILE}"]}}\n```\nReview the module.'
    yield Case("sequentialthinking", "repetitive workspace file", len(audit), thought_arguments(audit))
    nested = json.loads("[" * 500 + "]" * 500)  # deeper than this, JSON decoders refuse it
    yield Case(
        "gim_confirm_fix",
        "nested-environment",
        1000,
        {"issue_id": issue_id, "success": True, "environment": {"a": nested}},
    )


def context_cases() -> Iterator[Case]:
    """The Context Engine's tools and its REST routes."""
    for name, make in {**ADVERSARIAL, **CODE_ADVERSARIAL}.items():
        query, unbounded = make(QUERY_CHARS), make(UNBOUNDED_CHARS)
        work = {"active_file": unbounded, "git_branch": unbounded, "open_ticket_ids": [make(NAME_CHARS)] * 100}
        yield Case("context.search", name, QUERY_CHARS, {"query": query, "top_k": 100})
        yield Case(
            "context.search", f"{name} (work context)", 3 * UNBOUNDED_CHARS, {"query": query, "work_context": work}
        )
        yield Case(
            "context.get_related_info", name, 2 * UNBOUNDED_CHARS, {"file_path": unbounded, "ticket_id": unbounded}
        )
        page = {"query": query, "pagination": {"cursor": make(CURSOR_CHARS), "limit": 100}}
        yield Case("POST /search", name, QUERY_CHARS + CURSOR_CHARS, page, route="/search")
        yield Case("POST /search", f"{name} (no cursor)", QUERY_CHARS, {"query": query, "top_k": 100}, route="/search")
        params = {"q": make(SUGGEST_CHARS), "limit": 50}
        yield Case("GET /search/suggestions", name, SUGGEST_CHARS, params, method="GET", route="/search/suggestions")
        connector = {"type": "file", "name": make(NAME_CHARS), "config": {"root": unbounded}}
        yield Case("POST /connectors", name, NAME_CHARS + UNBOUNDED_CHARS, connector, route="/connectors")
        yield Case(
            "GET /connectors/{id}",
            name,
            NAME_CHARS,
            {},
            method="GET",
            route=f"/connectors/{quote(make(NAME_CHARS), safe='')}",
        )


def remote_cases() -> Iterator[Case]:
    """A federated tool (``py_echo``): the gateway checks the arguments against the remote input schema, sends them,
    checks and sanitizes the answer."""
    for name, make in {**ADVERSARIAL, **CODE_ADVERSARIAL}.items():
        yield Case("py_echo", name, UNBOUNDED_CHARS, {"text": make(UNBOUNDED_CHARS)})
