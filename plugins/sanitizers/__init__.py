"""Built-in sanitizers plugin family."""
