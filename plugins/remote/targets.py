"""Where a configured server is reached, with its secrets resolved at connection time (never logged)."""

from __future__ import annotations

import re

from gateway.api import HttpTarget, StdioTarget, UpstreamTarget
from gateway_plugins.remote.config import ServerConfig

_NOT_IN_A_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters (a tab is allowed): HTTP refuses them in a header value."""


def target_of(config: ServerConfig) -> UpstreamTarget:
    """The connector's target for ``config`` (secrets resolved here, at connection time, never logged)."""
    if config.url is not None:
        headers = {k: v.get_secret_value() for k, v in config.headers.items() if v is not None}
        return HttpTarget(config.url, headers, config.protocol)
    assert config.command is not None
    env = {k: v.get_secret_value() for k, v in config.env.items() if v is not None}
    secrets = {where: value for where, value in secret_values(config).items() if where.startswith("env.")}
    return StdioTarget(tuple(config.command), env, config.cwd, secrets=secrets)


def secret_values(config: ServerConfig) -> dict[str, str]:
    """Where each secret of ``config`` goes (``headers.Authorization``, ``env.TOKEN``) -> its value."""
    where = {f"headers.{k}": v for k, v in config.headers.items()} | {f"env.{k}": v for k, v in config.env.items()}
    return {
        field: value.get_secret_value()
        for field, value in where.items()
        if value is not None and config.is_secret(field)
    }


def unusable_secrets(config: ServerConfig) -> str | None:
    """Why ``config``'s secrets cannot be used (an unset variable; a header value with a line break: a token read
    from a file with its line ending), naming where and which variable, never the value; ``None`` when they can."""
    missing = config.missing_secrets()
    if missing:
        unset = ", ".join(f"{key} ({variable})" for key, variable in missing.items())
        return f"secret environment variable unset: {unset}"
    broken = [
        field
        for field, value in secret_values(config).items()
        if field.startswith("headers.") and _NOT_IN_A_HEADER.search(value)
    ]
    if broken:
        return f"secret value holds a line break or control character: {', '.join(broken)}"
    return None
