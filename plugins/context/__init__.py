"""The Context Engine pack: index code repositories and answer questions about them (``context.*`` tools)."""
