"""What gets embedded, indexed and displayed for a submission or a query (pure functions).

Vector kinds:

* ``error`` — the normalised error signature (:func:`gateway_plugins.gim.signatures.normalise_error`): what a
  later search, which only has an error, is compared with.
* ``resolution`` — root cause and fix: what tells two look-alike errors with different causes apart.
* ``combined`` — the public GIM algorithm's single vector: ``Error: ... Root cause: ... Fix: ...`` (baseline).
"""

from __future__ import annotations

import re

from gateway_plugins.gim.models import FixBundle
from gateway_plugins.gim.signatures import (
    ErrorSignature,
    failure_line,
    lexical_tokens,
    normalise_error,
    normalise_text,
    readable_placeholders,
)

__all__ = [
    "COMBINED",
    "ERROR",
    "RESOLUTION",
    "baseline_query_text",
    "canonical_title",
    "combined_text",
    "error_text",
    "fix_text",
    "query_texts",
    "resolution_text",
]

ERROR = "error"
RESOLUTION = "resolution"
COMBINED = "combined"

_TITLE_LIMIT = 120


def fix_text(fix: FixBundle) -> str:
    """The fix as prose: each action as ``type command: explanation``, then the code fix."""
    parts = [f"{a.type} {a.command}: {a.explanation}".strip() for a in fix.env_actions]
    if fix.code_fix:
        parts.append(fix.code_fix.strip())
    return "\n".join(parts)


def error_text(signature: ErrorSignature, fallback: str) -> str:
    return signature.text or normalise_text(fallback)


def resolution_text(root_cause: str, fix: FixBundle) -> str:
    return f"{normalise_text(root_cause)}\nFix: {fix_text(fix)}"


def combined_text(error: str, root_cause: str, fix: FixBundle) -> str:
    """The system design's combined text: error message, root cause and fix summary."""
    return f"Error: {error}\nRoot cause: {root_cause}\nFix: {fix.summary()}"


def baseline_query_text(error: str) -> str:
    """The baseline's query: the error with empty root-cause and fix sections."""
    return f"Error: {error}\nRoot cause: \nFix: "


_WORD_CHARACTER = re.compile(r"[^\W_]")
"""A letter or digit (what ``str.isalnum`` accepts), found without a Python loop over the text."""


def query_texts(text: str, *, hybrid: bool) -> tuple[str, list[str]] | None:
    """What a search embeds and (``hybrid``) looks up lexically, or ``None`` when ``text`` has no letter or digit."""
    if not _WORD_CHARACTER.search(text):
        return None
    if not hybrid:
        return baseline_query_text(text), []
    query = error_text(normalise_error(text), text)
    return query, lexical_tokens(query)


_SPACE_BEFORE_STOP = re.compile(r" ([.,;)])(?=\s|$)")
"""A blank left before a full stop or comma where a port or number was taken out ("<internal host> ." )."""


def _shorten(text: str, limit: int = _TITLE_LIMIT) -> str:
    text = _SPACE_BEFORE_STOP.sub(r"\1", re.sub(r"\s+", " ", text).strip())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "\u2026"


def canonical_title(description: str, error_message: str | None, signature: ErrorSignature) -> str:
    """A machine-independent title: the submitter's description when it is their own words, otherwise (it merely
    repeats the error) the normalised failure line, so the title carries no path, version or line number. A value the
    sanitizer replaced reads as its kind (``<internal host>``)."""
    first = next((line for line in description.splitlines() if line.strip()), description)
    copied = bool(error_message) and first.strip() in (error_message or "")
    if (copied or not first.strip()) and signature.key_lines:
        return _shorten(failure_line(error_message or description, signature) or signature.key_lines[-1])
    return _shorten(normalise_text(readable_placeholders(first))) or _shorten(signature.head) or "Untitled issue"
