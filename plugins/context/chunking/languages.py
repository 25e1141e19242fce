"""File name -> language, and the tree-sitter grammar of each code language (one maintained wheel per language)."""

from __future__ import annotations

from functools import cache
from pathlib import PurePosixPath
from typing import Any

__all__ = ["CODE_LANGUAGES", "language_of", "parser_for"]

_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
}

CODE_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "java", "rust"})


def language_of(path: str) -> str:
    """The language of a repository path (``text`` for anything without a grammar or a section splitter)."""
    suffix = PurePosixPath(path).suffix.lower()
    return _EXTENSIONS.get(suffix, "text")


def _grammar(language: str) -> Any:
    if language == "python":
        import tree_sitter_python as grammar

        return grammar.language()
    if language == "javascript":
        import tree_sitter_javascript as grammar

        return grammar.language()
    if language in ("typescript", "tsx"):
        import tree_sitter_typescript as grammar

        return grammar.language_typescript() if language == "typescript" else grammar.language_tsx()
    if language == "go":
        import tree_sitter_go as grammar

        return grammar.language()
    if language == "java":
        import tree_sitter_java as grammar

        return grammar.language()
    if language == "rust":
        import tree_sitter_rust as grammar

        return grammar.language()
    raise KeyError(language)


@cache
def parser_for(language: str) -> Any:
    """A tree-sitter parser for a code language (built once per process)."""
    from tree_sitter import Language, Parser

    return Parser(Language(_grammar(language)))
