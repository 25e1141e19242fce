"""Entry point of the built-in sanitizers plugin (filled in by its issue)."""
