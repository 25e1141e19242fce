"""Built-in vector_stores plugin family."""
