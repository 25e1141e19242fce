"""Built-in thinking plugin family."""
