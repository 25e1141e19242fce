"""Entry point of the built-in stores plugin (filled in by its issue)."""
