"""The ``remote`` pack: existing MCP servers (stdio commands or Streamable HTTP endpoints) served through the
gateway, behind its authentication, scopes, rate limits, logs and metrics."""
