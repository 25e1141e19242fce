"""Built-in judges plugin family."""
