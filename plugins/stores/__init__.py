"""Built-in stores plugin family."""
