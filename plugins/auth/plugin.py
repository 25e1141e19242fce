"""Entry point of the built-in auth plugin (filled in by its issue)."""
