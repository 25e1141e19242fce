"""The Context Engine's scopes, exactly as ``context-engine-api.md`` section 1.1 names them, shared by the MCP tools,
the ``engine://files`` resources and the REST routes."""

from __future__ import annotations

__all__ = [
    "CONFIG_READ",
    "CONFIG_WRITE",
    "CONNECTORS_READ",
    "CONNECTORS_WRITE",
    "INDEX_READ",
    "INDEX_WRITE",
    "SEARCH_READ",
]

SEARCH_READ = "search:read"
"""Search, suggestions, related information, the indexed files as resources."""
INDEX_READ = "index:read"
"""Index status (``GET /index/status``, ``GET /status``, ``context.index_control`` ``status``)."""
INDEX_WRITE = "index:write"
"""Start, stop and force indexing."""
CONNECTORS_READ = "connectors:read"
"""List and read connectors (``context.connector_management`` ``list``)."""
CONNECTORS_WRITE = "connectors:write"
"""Add, update and remove connectors."""
CONFIG_READ = "config:read"
CONFIG_WRITE = "config:write"
