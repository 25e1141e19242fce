"""Entry point of the built-in judges plugin (filled in by its issue)."""
