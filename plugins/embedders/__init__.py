"""Built-in embedders plugin family."""
