"""Hook markers. Plugins decorate their hook functions with :data:`hookimpl`."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "mcp_gateway"
"""The pluggy project name, and the entry-point group plugins are discovered from."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
