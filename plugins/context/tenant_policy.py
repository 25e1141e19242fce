"""What connectors added by authenticated callers may reach on the gateway's machine.

A connector added over an authenticated API (MCP over HTTP with tokens or keys, the REST API) runs inside the
gateway's process: a ``file`` connector reads the directory it names, and a hosted connector sends the token of the
environment variable it names to the URL it names. Left open, any tenant could index another tenant's checkout (or
``/etc``), or have the gateway send the operator's secrets to a server of its choosing. So such connectors may only
name what the operator allows in ``[plugins.context.tenant_connectors]``:

* ``roots``: directories a ``root`` must lie inside (after resolving links); ``{tenant}`` stands for the caller's
  tenant, so ``/srv/repos/{tenant}`` gives each tenant a directory of its own;
* ``secret_env``: the environment variables a ``{ env = "NAME" }`` reference may name (shell-style patterns;
  ``{TENANT}`` / ``{tenant}`` stand for the caller's tenant, so ``"{TENANT}_*"`` gives each tenant its own);
* ``base_urls``: the URLs a ``base_url`` may start with (without one, a connector type uses its own service's URL).

All three are empty by default: an authenticated caller can add hosted connectors on their default URLs with no
secret of the operator's, and nothing else until the operator says so. Connectors declared in config, and callers of
a deployment without authentication (the operator's own, over stdio or a local HTTP port), are not restricted. The
checks read the connector's options by the names every built-in connector uses (``root``, ``base_url``,
``{ env = ... }``); a connector plugin that reaches files or services through other options should use these names.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gateway.api import CallContext, ValidationFailed

__all__ = ["TenantConnectorPolicy", "restricted"]

_SAFE_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")
_SECTION = "[plugins.context.tenant_connectors]"


class TenantConnectorPolicy(BaseModel):
    """``[plugins.context.tenant_connectors]``: what connectors added by authenticated callers may name."""

    model_config = ConfigDict(extra="forbid")

    roots: list[str] = Field(
        default_factory=list,
        description="Directories a file connector's root must lie inside; {tenant} is the caller's tenant.",
    )
    secret_env: list[str] = Field(
        default_factory=list,
        description='Environment variables a { env = "NAME" } may name (shell-style patterns); {TENANT} is the '
        "caller's tenant in capitals, {tenant} as it is.",
    )
    base_urls: list[str] = Field(default_factory=list, description="URLs a connector's base_url may start with.")

    def check(self, tenant: str, options: Mapping[str, Any]) -> None:
        """Refuse ``options`` naming a directory, secret or URL this policy does not allow, naming the field."""
        errors = []
        for field, value in _walk(options, "connector_config"):
            problem = self._problem(tenant, field, value)
            if problem:
                errors.append({"field": field, "message": problem})
        if errors:
            summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
            raise ValidationFailed(f"invalid connector_config: {summary}", details={"errors": errors})

    def _problem(self, tenant: str, field: str, value: Any) -> str | None:
        key = field.rsplit(".", 1)[-1]
        if isinstance(value, Mapping) and set(value) == {"env"}:
            name = value["env"]
            if isinstance(name, str) and any(fnmatch.fnmatchcase(name, pattern) for pattern in self._secrets(tenant)):
                return None
            return f"connectors added over the API may only name the environment variables {_SECTION} secret_env allows"
        if key == "root" and isinstance(value, str):
            try:
                absolute = Path(value).expanduser().is_absolute()
            except (RuntimeError, ValueError):  # ~nosuchuser: no home directory to expand
                absolute = False
            if not absolute:  # the connector reads a relative root from the config's directory
                return f"connectors added over the API must give root as an absolute path inside {_SECTION} roots"
            return (
                None
                if self._inside_roots(tenant, value)
                else (f"connectors added over the API may only index directories inside {_SECTION} roots")
            )
        if key == "base_url" and isinstance(value, str):
            if any(_starts_with_url(value, allowed) for allowed in self.base_urls):
                return None
            return f"connectors added over the API may only use the URLs {_SECTION} base_urls allows"
        return None

    def _secrets(self, tenant: str) -> list[str]:
        """The ``secret_env`` patterns for ``tenant``: one naming the tenant counts only for a tenant whose name
        holds no pattern character (a tenant named ``*`` must not widen ``{TENANT}_*`` to every variable)."""
        patterns = []
        for pattern in self.secret_env:
            if "{tenant}" in pattern or "{TENANT}" in pattern:
                if not _SAFE_TENANT.fullmatch(tenant):
                    continue
                pattern = pattern.replace("{tenant}", tenant).replace("{TENANT}", tenant.upper())
            patterns.append(pattern)
        return patterns

    def _inside_roots(self, tenant: str, root: str) -> bool:
        if not self.roots or "\0" in root:
            return False
        try:
            path = Path(os.path.realpath(Path(root).expanduser()))
        except (OSError, ValueError, RuntimeError):
            return False
        for template in self.roots:
            if "{tenant}" in template:
                if not _SAFE_TENANT.fullmatch(tenant):  # a tenant named "../x" must not climb out of its directory
                    continue
                template = template.replace("{tenant}", tenant)
            allowed = Path(os.path.realpath(Path(template).expanduser()))
            if path == allowed or allowed in path.parents:
                return True
        return False


def _starts_with_url(value: str, allowed: str) -> bool:
    """``value`` is ``allowed`` or lies under it (``https://a.example/api`` allows ``https://a.example/api/v3``, not
    ``https://a.example/apix`` nor ``https://a.example.evil``)."""
    value, allowed = value.rstrip("/"), allowed.rstrip("/")
    return value == allowed or value.startswith(allowed + "/")


def _walk(value: Any, field: str) -> Iterator[tuple[str, Any]]:
    """Every option with its field path; an ``{ env = ... }`` reference is one value, not a table to descend into."""
    if isinstance(value, Mapping) and set(value) != {"env"}:
        for key, item in value.items():
            yield from _walk(item, f"{field}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{field}[{index}]")
    else:
        yield field, value


def restricted(ctx: CallContext) -> bool:
    """Whether the caller is held to the policy: it was authenticated (a deployment without authentication is the
    operator's own, and its callers may name what config may)."""
    return not ctx.principal.all_scopes
