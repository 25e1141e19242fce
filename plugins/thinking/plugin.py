"""Entry point of the built-in thinking plugin (filled in by its issue)."""
