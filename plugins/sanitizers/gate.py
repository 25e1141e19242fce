"""Which rules of a :class:`~gateway_plugins.sanitizers.engine.RuleSet` can match a text at all.

A rule can only match where one of its gate literals occurs (its ``requires``, or else its literal anchors:
``sk-``, ``password``), and a rule anchored on patterns only (``\\.\\d{1,3}\\.\\d{1,3}\\.\\d``) only where one of
them occurs. Answering that for ~50 literals and a handful of patterns is most of what a clean text costs,
so :func:`build_gate` answers it in one pass with google-re2 (:class:`Re2Gate`: an ``re2.Set`` of all of
them; a pattern's answer is taken from it for ASCII texts only, where its ``\\d`` and Python's agree).
Without it, :class:`PythonGate` makes one substring test per distinct literal and one ``search`` per
pattern, about 1.4 times slower per record. The two give the same answer; only the speed differs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

try:
    import re2  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - the pure-Python gate is tested on its own
    re2 = None

if TYPE_CHECKING:
    from gateway_plugins.sanitizers.engine import Rule

__all__ = ["Gate", "PythonGate", "Re2Gate", "build_gate"]

_RE2_UNSAFE = re.compile(r"\\[sSwWbBAZuUN0-9]|\(\?|[$^]")
"""Pattern syntax whose meaning differs between ``re`` and RE2 even on ASCII text (``\\s`` takes in ``\\v``
in ``re`` only, ``$`` matches before a final newline in ``re`` only) or that RE2 lacks (look-arounds)."""


class Gate(Protocol):
    def rules_for(self, text: str, lowered: str) -> list[int]:
        """Indices, in priority order, of the rules that can match ``text`` (``lowered`` is its fold)."""


class PythonGate:
    """The gate with ``in`` and ``re``: one substring test per distinct literal, one search per pattern."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        needed: dict[tuple[str, bool], list[int]] = {}
        always: list[int] = []
        for index, rule in enumerate(rules):
            keys = _shortest(rule.gate())
            if not keys:
                always.append(index)
            for key in keys:
                needed.setdefault(key, []).append(index)
        self.always = frozenset(always)
        self.case = tuple((lit, tuple(ix)) for (lit, lower), ix in needed.items() if not lower)
        self.folded = tuple((lit, tuple(ix)) for (lit, lower), ix in needed.items() if lower)
        self.probes = tuple(_probes(rule) for rule in rules)

    def rules_for(self, text: str, lowered: str) -> list[int]:
        active = set(self.always)
        for lit, indices in self.case:
            if lit in text:
                active.update(indices)
        for lit, indices in self.folded:
            if lit in lowered:
                active.update(indices)
        probes = self.probes
        return [index for index in sorted(active) if not probes[index] or _occurs(probes[index], text)]


class Re2Gate:
    """The gate as two ``re2.Set`` passes: the case-sensitive literals and the patterns over the text, the
    folded literals over its fold. The literals are ASCII, so their UTF-8 occurrences are theirs in any
    text; the patterns are trusted on ASCII texts only, and searched with ``re`` in the others."""

    @staticmethod
    def available() -> bool:
        """Whether google-re2 is installed."""
        return re2 is not None

    def __init__(self, rules: Sequence[Rule]) -> None:
        if re2 is None:
            raise RuntimeError("google-re2 is not installed")
        self._python = python = PythonGate(rules)
        self._always = python.always
        # The text set: first the case-sensitive literals, then the probe patterns RE2 reads as ``re`` does.
        text_set = re2.Set.SearchSet()
        for lit, _indices in python.case:
            text_set.Add(re2.escape(lit))
        self._literal_rules = tuple(indices for _lit, indices in python.case)
        probe_rules: list[int] = []
        left: list[tuple[re.Pattern[str], ...]] = []  # probes RE2 cannot take stay Python searches
        for index, patterns in enumerate(python.probes):
            for pattern in patterns:
                if _re2_reads_alike(pattern):
                    text_set.Add(pattern.pattern)
                    probe_rules.append(index)
            left.append(tuple(pattern for pattern in patterns if not _re2_reads_alike(pattern)))
        self._probe_rules, self._left = tuple(probe_rules), tuple(left)
        self._probed = frozenset(index for index, patterns in enumerate(python.probes) if patterns)
        folded_set = re2.Set.SearchSet()
        for lit, _indices in python.folded:
            folded_set.Add(re2.escape(lit))
        self._folded_rules = tuple(indices for _lit, indices in python.folded)
        text_set.Compile()
        folded_set.Compile()
        self._text_set, self._folded_set = text_set, folded_set

    def rules_for(self, text: str, lowered: str) -> list[int]:
        try:
            in_text, in_folded = self._text_set.Match(text) or (), self._folded_set.Match(lowered) or ()
        except UnicodeEncodeError:  # a lone surrogate: not UTF-8
            return self._python.rules_for(text, lowered)
        active = set(self._always)
        found_probe: set[int] = set()
        literal_rules, probe_rules = self._literal_rules, self._probe_rules
        literals = len(literal_rules)
        for entry in in_text:
            if entry < literals:
                active.update(literal_rules[entry])
            else:
                found_probe.add(probe_rules[entry - literals])
        folded_rules = self._folded_rules
        for entry in in_folded:
            active.update(folded_rules[entry])
        probed = self._probed
        if not text.isascii():  # RE2's \d is ASCII, ``re``'s is not: search the patterns with ``re``
            all_probes = self._python.probes
            return [i for i in sorted(active) if i not in probed or _occurs(all_probes[i], text)]
        left = self._left
        return [
            index
            for index in sorted(active)
            if index not in probed or index in found_probe or (left[index] and _occurs(left[index], text))
        ]


def build_gate(rules: Sequence[Rule]) -> Gate:
    """The fastest gate available: :class:`Re2Gate` with google-re2, else :class:`PythonGate`."""
    return Re2Gate(rules) if re2 is not None else PythonGate(rules)


def _re2_reads_alike(pattern: re.Pattern[str]) -> bool:
    """Whether RE2 matches ``pattern`` as ``re`` does on ASCII text (no flags, no syntax of ``_RE2_UNSAFE``)."""
    return pattern.flags == re.UNICODE and not _RE2_UNSAFE.search(pattern.pattern)


def _occurs(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    for pattern in patterns:
        if pattern.search(text):
            return True
    return False


def _probes(rule: Rule) -> tuple[re.Pattern[str], ...]:
    """For a rule whose anchors are all patterns (searched in the text as is), those: a ``search`` each
    rejects a text without a hit before any of the rule's Python runs."""
    if rule.anchors and not rule.anchor_lower and all(isinstance(a, re.Pattern) for a in rule.anchors):
        return tuple(a for a in rule.anchors if isinstance(a, re.Pattern))
    return ()


def _shortest(gate: tuple[tuple[str, bool], ...]) -> tuple[tuple[str, bool], ...]:
    """The gate without a literal that contains another of its literals (of the same folding): it cannot
    occur without the shorter one, so ``password`` is tested only as ``pass``."""
    return tuple(
        key
        for key in gate
        if not any(other[1] == key[1] and other[0] != key[0] and other[0] in key[0] for other in gate)
    )
