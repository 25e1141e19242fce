"""Built-in auth plugin family."""
