"""Which rules of a :class:`~gateway_plugins.sanitizers.engine.RuleSet` can match a text at all.

A rule can only match where one of its ``requires`` literals occurs (``sk-``, ``password``) and where its
``probe`` occurs (``\\d\\.\\d{1,3}\\.\\d{1,3}\\.\\d`` for dotted quads). Answering that for ~60 literals and a
handful of probes is most of what a clean text costs, so the gate answers it in two linear passes with
google-re2 ``Set``\\s: the case-sensitive literals and the probes over the text, the folded literals over its
case fold. Probes are RE2 expressions like the rules themselves, so both read a text the same way.

An RE2 set runs on a DFA only, and a DFA can give up on a pathological input (too many states for its
memory budget). Each set therefore carries a sentinel that matches every text: an answer without it means
the set gave up, and then every rule runs. The gate can make a text slower, never let a rule skip it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import re2  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from gateway_plugins.sanitizers.engine import Rule, ScanText

__all__ = ["Gate"]

_SENTINEL = "(?:)"


class _Set:
    """An ``re2.Set`` of patterns, each unlocking some rule indices as a literal or as a probe, plus the
    sentinel."""

    def __init__(self, literals: dict[str, list[int]], probes: dict[str, list[int]]) -> None:
        self._set = re2.Set.SearchSet()
        self._sentinel = self._set.Add(_SENTINEL)
        self._unlocks: dict[int, tuple[bool, tuple[int, ...]]] = {}
        for literal, indices in literals.items():
            self._unlocks[self._set.Add(re2.escape(literal))] = (False, tuple(indices))
        for probe, indices in probes.items():
            self._unlocks[self._set.Add(probe)] = (True, tuple(indices))
        self._set.Compile()

    def found(self, subject: str | bytes) -> tuple[set[int], set[int]] | None:
        """The rule indices whose literals, and those whose probes, occur in ``subject``; None when the set
        gave up (then every rule runs)."""
        if not self._unlocks:
            return set(), set()
        entries = self._set.Match(subject) or ()
        if self._sentinel not in entries:
            return None
        literals: set[int] = set()
        probes: set[int] = set()
        for entry in entries:
            if entry != self._sentinel:
                is_probe, indices = self._unlocks[entry]
                (probes if is_probe else literals).update(indices)
        return literals, probes


class Gate:
    """Per text, the indices (in priority order) of the rules that can match it."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        case: dict[str, list[int]] = {}
        folded: dict[str, list[int]] = {}
        probes: dict[str, list[int]] = {}
        for index, rule in enumerate(rules):
            for literal, lower in _shortest(rule.gate()):
                (folded if lower else case).setdefault(literal, []).append(index)
            if rule.probe is not None:
                probes.setdefault(rule.probe, []).append(index)
        self._count = len(rules)
        needs_literal = frozenset(i for i, rule in enumerate(rules) if rule.gate())
        needs_probe = frozenset(i for i, rule in enumerate(rules) if rule.probe is not None)
        everyone = frozenset(range(len(rules)))
        self._always = everyone - needs_literal - needs_probe
        self._needs_probe = needs_probe
        self._no_literal = everyone - needs_literal
        self._text = _Set(case, probes)
        self._folded = _Set(folded, {})

    def rules_for(self, scan_text: ScanText) -> list[int]:
        """Indices, in priority order, of the rules that can match the text."""
        in_text = self._text.found(scan_text.subject)
        in_folded = self._folded.found(scan_text.lowered_subject)
        if in_text is None or in_folded is None:
            return list(range(self._count))
        literals, probes = in_text
        literals |= in_folded[0]
        # a rule runs when each of its gates is passed: its literal (if any) and its probe (if any)
        active = self._always | (literals - self._needs_probe) | (probes & (literals | self._no_literal))
        return sorted(active)


def _shortest(gate: tuple[tuple[str, bool], ...]) -> tuple[tuple[str, bool], ...]:
    """The gate without a literal that contains another of its literals (of the same folding): it cannot
    occur without the shorter one, so ``password`` is tested only as ``pass``."""
    return tuple(
        key
        for key in gate
        if not any(other[1] == key[1] and other[0] != key[0] and other[0] in key[0] for other in gate)
    )
