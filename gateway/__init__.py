"""mcp-gateway: a plugin-architecture Model Context Protocol host."""

from __future__ import annotations

__version__ = "0.1.0"
