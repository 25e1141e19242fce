"""Layer 1, ``patterns``: deterministic detection of credentials, personal data and internal identifiers.

One pass finds every candidate span of every rule (published credential formats, URL credentials, generic
assignments, random-looking tokens, e-mails, IPs, phones, cards, project paths, internal hosts); overlaps
are then resolved together (:func:`~gateway_plugins.sanitizers.engine.select`), so no rule can cut another's
finding in two. Linear in the text (RE2 rules, bounded checks), synchronous at its core so that the log
redactor can use it on every line (:meth:`PatternSanitizer.redact`), and conservative about what is *not*
sensitive: versions, hashes, UUIDs, timestamps, loopback addresses, ``localhost:PORT``, library paths and
template placeholders pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from gateway.api import FieldKind, PlaceholderMap, SanitizedText
from gateway_plugins.sanitizers.engine import Rule, RuleSet, redact
from gateway_plugins.sanitizers.rules_assign import ASSIGNMENT_RULES
from gateway_plugins.sanitizers.rules_internal import INTERNAL_RULES
from gateway_plugins.sanitizers.rules_pii import PII_RULES
from gateway_plugins.sanitizers.rules_secrets import SECRET_RULES
from gateway_plugins.sanitizers.rules_tokens import TOKEN_RULES
from gateway_plugins.sanitizers.rules_urls import URL_RULES

__all__ = ["DEFAULT_RULES", "PatternSanitizer"]

DEFAULT_RULES: tuple[Rule, ...] = SECRET_RULES + URL_RULES + ASSIGNMENT_RULES + TOKEN_RULES + PII_RULES + INTERNAL_RULES
"""Every layer-1 rule, in priority order (provider formats, URL credentials, generic assignments, random
tokens, then personal data and internal identifiers): the first names a span several rules find."""

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
