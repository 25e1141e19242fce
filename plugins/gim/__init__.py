"""Built-in gim plugin family."""
