"""Entry point of the built-in embedders plugin (filled in by its issue)."""
