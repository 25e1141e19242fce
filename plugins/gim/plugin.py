"""Entry point of the built-in gim plugin (filled in by its issue)."""
