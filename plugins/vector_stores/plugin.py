"""Entry point of the built-in vector_stores plugin (filled in by its issue)."""
