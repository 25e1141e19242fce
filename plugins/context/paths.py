"""What a repository path is: tests, examples, documentation (ranking priors, and what gets embedded).

Type declaration files (``.d.ts``, ``.pyi`` stubs) count as documentation: they restate an API's names, signatures
and doc comments without the code that implements them, which is what a behaviour question is about."""

from __future__ import annotations

import re

from gateway_plugins.context.chunking.languages import language_of

__all__ = ["is_declaration", "is_doc", "is_example", "is_secondary", "is_test"]

_TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|spec|specs|testing)/"
    r"|(?:^|/)(?:test_[^/]*|[^/]*_test\.\w+|[^/]*\.(?:test|spec)\.\w+|conftest\.py|[^/]*Tests?\.java)$"
)
_EXAMPLE_PATH = re.compile(r"(?:^|/)(?:examples?|samples?|demos?|benchmarks?|bench|docs?_src)/")
_DOC_LANGUAGES = frozenset({"markdown", "rst", "text"})
_DECLARATION = re.compile(r"\.d\.[mc]?ts$|\.pyi$", re.I)


def is_test(path: str) -> bool:
    return _TEST_PATH.search(path) is not None


def is_example(path: str) -> bool:
    return _EXAMPLE_PATH.search(path) is not None


def is_declaration(path: str) -> bool:
    """A type declaration file (``index.d.ts``, ``module.pyi``)."""
    return _DECLARATION.search(path) is not None


def is_doc(path: str) -> bool:
    """Prose (markdown, rst, plain text) or a type declaration file."""
    return language_of(path) in _DOC_LANGUAGES or is_declaration(path)


def is_secondary(path: str) -> bool:
    """Tests, examples and prose: ranked below library code for behaviour questions."""
    return is_test(path) or is_example(path) or is_doc(path)
