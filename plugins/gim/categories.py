"""Root-cause categories (``root_cause_category``): a small general taxonomy, assigned by ordered rules.

The spec shows categories like ``API/Integration - Endpoint Deprecation``. Without a language model, the pack
assigns one from the vocabulary of the root cause (and, failing that, the error): the first rule whose pattern
matches wins, most specific first. The taxonomy is generic to software failures; it is a display and analytics
field and plays no part in matching.
"""

from __future__ import annotations

import re

__all__ = ["categorise"]

_RULES: tuple[tuple[str, str], ...] = (
    ("Hardware/Driver - GPU and CUDA", r"\b(cuda|gpu|nvidia|nvcc|cudnn|compute capability|driver)\b"),
    ("System - Resource Limit", r"\b(enospc|out of memory|oom|heap limit|too many open files|quota|max_user_\w+)\b"),
    (
        "System - Missing Native Library",
        r"(\.so(\.\d+)*\b|\bdll\b|shared (object|librar)|\blinker\b|pkg-config|\bapt(-get)? install\b)",
    ),
    ("Network - Connectivity", r"\b(econnrefused|connection refused|timed? ?out|dns|proxy|certificate|ssl|tls)\b"),
    ("Security - Permissions", r"\b(permission denied|eacces|forbidden|unauthori[sz]ed|access denied)\b"),
    (
        "API/Integration - Removed or Deprecated API",
        r"\b(removed|deprecat\w*|no longer|renamed|moved to|replaced (by|with)|dropped)\b",
    ),
    (
        "Dependency - Version Incompatibility",
        r"\b(incompatib\w*|version mismatch|requires? \S+ ?[<>=]|too (old|new)|pin\w*|upgrade|downgrade)\b",
    ),
    (
        "Dependency - Missing Package",
        r"\b(not installed|no module named|cannot find module|missing (package|dependency|module)|pip install)\b",
    ),
    ("Environment - Runtime Version", r"\b(python \d|node(\.js)? ?v?\d|runtime version|interpreter)\b"),
    ("Build - Compilation", r"\b(compil\w*|build (script|failed)|cmake|makefile|gcc|clang|rustc|cargo)\b"),
    ("Configuration", r"\b(config\w*|environment variable|setting|flag|option)\b"),
    ("Code - Type or Syntax Error", r"\b(typeerror|syntaxerror|type annotation|undefined|null pointer|none ?type)\b"),
)
_COMPILED = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _RULES)


def categorise(root_cause: str, error: str = "") -> str:
    """The category of a root cause (the error is consulted only when the root cause matches no rule)."""
    for text in (root_cause, error):
        for name, pattern in _COMPILED:
            if pattern.search(text):
                return name
    return "Other - Uncategorised"
