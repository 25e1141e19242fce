"""Built-in rate_limits plugin family."""
