"""Entry point of the built-in rate_limits plugin (filled in by its issue)."""
