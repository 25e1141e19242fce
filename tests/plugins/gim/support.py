"""Shared helpers of the GIM tests and benchmarks: deployment configs, submissions, calls through the MCP SDK client."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w

SANITIZE = {
    "error_message": ["patterns", "contextual"],
    "code": ["patterns", "contextual"],
    "free_text": ["patterns", "contextual"],
    "query": ["patterns"],
}

VERIFY = [{"order": 1, "command": "re-run the failing step", "expected_output": "the error no longer appears"}]


def gim_config(*, gim: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    """The embedded deployment (local embedder, Qdrant Edge, SQLite, patterns + contextual sanitizers), with
    ``[plugins.gim]`` = ``gim`` and any top-level section replaced by ``sections``."""
    config: dict[str, Any] = {
        "gateway": {"log_level": "warning"},
        "packs": {"enabled": ["gim"]},
        "providers": {
            "embedder": ["local"],
            "vector_store": "qdrant-edge",
            "store": "sqlite",
            "rate_limiter": "memory",
            "auth": "none",
        },
        "sanitize": copy.deepcopy(SANITIZE),
        "plugins": {"gim": dict(gim or {})},
    }
    for key, value in sections.items():
        if key == "plugins":
            config["plugins"].update(value)
        else:
            config[key] = value
    return config


def served_deployment(
    data_dir: Path, *, name: str, search_limit: int, gim: dict[str, Any] | None = None
) -> dict[str, Any]:
    """:func:`gim_config` as the benchmarks serve it: data in ``data_dir``, the SQLite rate limiter, and the
    ``rate_limit`` interceptor with daily quotas of ``search_limit`` searches and as many fix-bundle fetches (each
    its own count, as in ``config.toml``)."""
    config = gim_config(gim=gim, gateway={"name": name, "data_dir": data_dir.as_posix(), "log_level": "warning"})
    config["providers"]["rate_limiter"] = "sqlite"
    config["pipeline"] = {"interceptors": [{"name": "rate_limit", "on_error": "fail_closed"}]}
    rules = [
        {"name": f"gim-daily-{kind}", "pack": "gim", "tools": [tool], "kind": "daily", "limit": search_limit}
        for kind, tool in (("search", "gim_search_issues"), ("fix-bundle", "gim_get_fix_bundle"))
    ]
    config["plugins"]["interceptor"] = {"rate_limit": {"rules": rules}}
    return config


def write_config(path: Path, config: Mapping[str, Any]) -> Path:
    """``config`` as the TOML file a ``gateway`` subprocess reads."""
    path.write_text(tomli_w.dumps(dict(config)))
    return path


def seed_model_cache(data_dir: Path, graph: Path) -> None:
    """Put the built MiniLM graph where the local embedder of a gateway on ``data_dir`` caches it (saves the
    one-off graph build per fresh data dir; without it the embedder simply builds it again)."""
    target = data_dir / "providers" / "embedder" / "local"
    target.mkdir(parents=True, exist_ok=True)
    destination = target / graph.name
    if not destination.exists():
        try:
            destination.hardlink_to(graph)
        except OSError:
            shutil.copy2(graph, destination)


def submission(
    error: str,
    root_cause: str,
    *,
    description: str | None = None,
    actions: list[dict[str, Any]] | None = None,
    code_fix: str | None = None,
    model: str = "claude-3-opus-20240229",
    provider: str = "anthropic",
    environment: dict[str, str] | None = None,
) -> dict[str, Any]:
    bundle: dict[str, Any] = {
        "env_actions": actions
        or [{"order": 1, "type": "command", "command": "apply the fix", "explanation": root_cause}],
        "verification": VERIFY,
    }
    if code_fix:
        bundle["code_fix"] = code_fix
    return {
        "error_description": description or error.strip().splitlines()[-1][:200],
        "error_message": error,
        "root_cause": root_cause,
        "fix_bundle": bundle,
        "model": model,
        "provider": provider,
        "environment": environment or {"language": "python", "os": "linux"},
    }


def body(result: Any) -> dict[str, Any]:
    """The JSON body of a tool result (structured content, or the text block for errors)."""
    if result.structured_content is not None and not result.is_error:
        return result.structured_content
    return json.loads(result.content[0].text)


async def call(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, body(result)
    return result.structured_content


async def call_error(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must fail; its error body."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return body(result)


NUMPY_ERROR = (
    'Traceback (most recent call last):\n  File "/home/alice/project/train.py", line 12, in <module>\n'
    "    x = np.float(3)\nAttributeError: module 'numpy' has no attribute 'float'.\n"
    "`np.float` was a deprecated alias for the builtin `float`."
)
NUMPY_CAUSE = "NumPy 1.24 removed the deprecated aliases np.float, np.int and np.bool; old code using them crashes."
NUMPY_ACTIONS = [
    {"order": 1, "type": "downgrade", "command": 'pip install "numpy<1.24"', "explanation": "keep the aliases"},
]
NUMPY_FIX = "x = float(3)  # use the builtin float or np.float64"
