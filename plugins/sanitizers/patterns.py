"""Layer 1, ``patterns``: deterministic detection of published credential formats and personal data.

Fast (a keyword pre-filter skips rules whose anchors are absent), synchronous at its core so that the log
redactor can use it on every line (:meth:`PatternSanitizer.redact`), and conservative about what is *not*
sensitive: versions, hashes, UUIDs, timestamps, private and loopback addresses, ``localhost:PORT`` and
template placeholders pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from gateway.api import FieldKind, PlaceholderMap, SanitizedText
from gateway_plugins.sanitizers.engine import Rule, RuleSet, redact
from gateway_plugins.sanitizers.rules_assign import ASSIGNMENT_RULES
from gateway_plugins.sanitizers.rules_pii import PII_RULES
from gateway_plugins.sanitizers.rules_secrets import SECRET_RULES

__all__ = ["DEFAULT_RULES", "PatternSanitizer"]

DEFAULT_RULES: tuple[Rule, ...] = SECRET_RULES + ASSIGNMENT_RULES + PII_RULES
"""Every layer-1 rule, in priority order (provider formats before generic assignments before PII)."""

_THREAD_THRESHOLD = 256 * 1024
"""Texts longer than this are scanned in a worker thread so the event loop keeps serving."""


class PatternSanitizer:
    """Regex rules with validators; redacts each finding with a stable placeholder.

    ``disabled`` removes rules by kind (``{"phone"}``, say) for deployments that want less.
    """

    name = "patterns"

    def __init__(self, rules: Sequence[Rule] = DEFAULT_RULES, *, disabled: frozenset[str] = frozenset()) -> None:
        self._ruleset = RuleSet([rule for rule in rules if rule.kind not in disabled])

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self._ruleset.rules

    def sanitize_sync(self, text: str, *, placeholders: PlaceholderMap) -> SanitizedText:
        """The synchronous core of :meth:`sanitize` (the field kind does not change layer 1)."""
        return redact(text, self._ruleset.find(text), placeholders, self.name)

    async def sanitize(self, text: str, *, kind: FieldKind, placeholders: PlaceholderMap) -> SanitizedText:
        """Redact every layer-1 finding of ``text``."""
        if len(text) > _THREAD_THRESHOLD:
            return await anyio.to_thread.run_sync(lambda: self.sanitize_sync(text, placeholders=placeholders))
        return self.sanitize_sync(text, placeholders=placeholders)

    def redact(self, text: str) -> str:
        """Synchronous redaction for log lines: placeholders are numbered per call."""
        chosen = self._ruleset.find(text) if text else None
        if not chosen:
            return text
        return redact(text, chosen, PlaceholderMap(), self.name).text
