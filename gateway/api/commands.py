"""What a plugin's CLI command receives (as click's ``obj``) to reach the configured deployment."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

from gateway.api.tools import ToolPack


class CommandEnvironment(Protocol):
    """Built from ``--config``; nothing is started until a command asks."""

    @property
    def config_path(self) -> Path: ...

    def running_pack(self, name: str) -> AbstractAsyncContextManager[ToolPack]:
        """Start the deployment's providers and the named pack (started), stop them on exit."""

    def running_provider(self, kind: str, name: str | None = None) -> AbstractAsyncContextManager[Any]:
        """Build the configured provider of ``kind`` (or the named one), close it on exit."""
