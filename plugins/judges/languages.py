"""What a path is: its language, and whether it is a test or a source file."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_BY_SUFFIX = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".rb": "ruby",
    ".php": "php",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".swift": "swift",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".md": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".html": "html",
    ".css": "css",
}
_BY_NAME = {"makefile": "make", "gnumakefile": "make", "dockerfile": "docker"}
_ALIASES = {
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "golang": "go",
    "rs": "rust",
    "sh": "shell",
    "bash": "shell",
    "zsh": "shell",
    "c++": "cpp",
    "cs": "csharp",
    "c#": "csharp",
    "rb": "ruby",
    "yml": "yaml",
    "md": "markdown",
    "patch": "diff",
    "udiff": "diff",
}
_SUFFIX_FOR = {"python": ".py", "javascript": ".js", "typescript": ".ts", "go": ".go", "rust": ".rs", "java": ".java"}

CODE_LANGUAGES = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "go",
        "rust",
        "java",
        "kotlin",
        "scala",
        "ruby",
        "php",
        "c",
        "cpp",
        "csharp",
        "swift",
        "shell",
        "sql",
    }
)
"""Languages whose files are source code (changing them calls for tests; long lines are a style matter)."""

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/"
    r"|(^|/)test_[^/]*$"
    r"|_test\.[a-z]+$"
    r"|\.(test|spec)\.[a-z]+$"
    r"|(^|/)[A-Z]\w*Tests?\.(java|kt|cs|scala|swift)$"
    r"|(^|/)conftest\.py$"
)


def language_of(path: str) -> str | None:
    """The language of a file from its name, or ``None``."""
    pure = PurePosixPath(path)
    by_name = _BY_NAME.get(pure.name.lower())
    if by_name:
        return by_name
    return _BY_SUFFIX.get(pure.suffix.lower())


def normalise_language(info: str) -> str | None:
    """The language named by a Markdown fence info string (```` ```py ````, ```` ```typescript title=x ````)."""
    word = info.strip().split(maxsplit=1)[0].lower() if info.strip() else ""
    if not word:
        return None
    word = word.strip("{}.")
    return _ALIASES.get(word, word)


def suffix_for(language: str | None) -> str:
    """A file suffix for code of ``language`` (``.txt`` when unknown)."""
    if language is None:
        return ".txt"
    return _SUFFIX_FOR.get(language) or next((s for s, lang in _BY_SUFFIX.items() if lang == language), ".txt")


def looks_like_test(path: str) -> bool:
    """Whether ``path`` names a test file (``tests/``, ``test_x.py``, ``x_test.go``, ``x.spec.ts``, ``XTest.java``)."""
    return bool(_TEST_PATH.search(path))


def is_source_path(path: str) -> bool:
    """Whether ``path`` is code that is not itself a test."""
    return language_of(path) in CODE_LANGUAGES and not looks_like_test(path)


def subject_stem(path: str) -> str:
    """The name a test of ``path`` would mention: ``src/pkg/parser.py`` → ``parser``."""
    return PurePosixPath(path).stem.lower()
