"""The rule engine the offline layers share: RE2 rules, candidate spans, overlap resolution and redaction.

Cost is linear in the text, whatever the text. Three things make it so:

* Every rule's ``pattern`` is an RE2 expression (google-re2), which matches in time linear in the text for any
  pattern and any input: no backtracking, so no long run of letters, digits, ``@`` or ``:`` can make it
  quadratic. Each rule the gate lets run (:mod:`~gateway_plugins.sanitizers.gate`) scans the text once.
* What RE2 cannot say (look-arounds, the words around a value, checksums) is checked in Python by the rule's
  ``validate``/``refine``, which see a match through a :class:`View`: the matched text and at most
  :data:`CONTEXT` characters on either side. A check costs at most the candidate's length plus a constant,
  and a rule's candidates never overlap, so the checks of one rule cost at most the text's length.
* :func:`select` resolves overlaps in one sweep over the candidates sorted by position.

Rules that are not one regex (:mod:`~gateway_plugins.sanitizers.rules_assign`, the ``contextual`` layer's
proximity rule) implement :meth:`Rule.collect` themselves and keep to the same budget: literal searches over
the text, and bounded work per hit.

:meth:`RuleSet.scan` returns candidate spans, :func:`select` merges overlapping ones (see why there) and
:func:`redact` replaces each with a stable placeholder from the submission's
:class:`~gateway.api.PlaceholderMap`: ``/srv/app/agent.py`` reads ``<PATH_1>/agent.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import re2  # type: ignore[import-untyped]

from gateway.api import Finding, PlaceholderMap, SanitizedText
from gateway.api.sanitizers import Category

__all__ = [
    "CONTEXT",
    "Candidate",
    "Found",
    "Rule",
    "RuleSet",
    "ScanText",
    "View",
    "add",
    "find_all",
    "fold",
    "redact",
    "select",
]

CONTEXT = 256
"""How many characters on either side of a match a validator may read."""

Validator = Callable[["View"], bool]
"""Whether the match seen through the view is really sensitive."""

Refiner = Callable[["View"], "tuple[int, int] | None"]
"""The span to redact for a validated match (offsets into the text), or None to drop it."""

Found = dict[tuple[int, int], "Candidate"]
"""The candidates found so far in one text, by span, rule after rule in priority order. A rule skips a span
that is already there: a candidate with the same span, later in priority, can never be selected."""

_NON_ASCII = re.compile("[^\x00-\x7f]")
_FOLDS_TO_ASCII = (("\u017f", "s"), ("\u212a", "k"))


def find_all(haystack: str, literal: str) -> list[int]:
    """Start offsets of the non-overlapping occurrences of ``literal`` (what ``re.finditer`` would give)."""
    found: list[int] = []
    index = haystack.find(literal)
    while index >= 0:
        found.append(index)
        index = haystack.find(literal, index + len(literal))
    return found


_IGNORECASE_EXTRA = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))
"""The characters ``re.IGNORECASE`` matches with an ASCII letter that ``str.lower`` does not turn into it:
capital I with dot, dotless i and long s (U+0130, U+0131, U+017F; the Kelvin sign lower-cases to ``k``)."""


def fold(text: str) -> str:
    """``text`` lower-cased with every offset kept, so that a lower-case ASCII literal occurs in it exactly
    where ``re.IGNORECASE`` would match it in ``text`` (``secret`` spelt with a long s reads ``secret``)."""
    if text.isascii():
        return text.lower()
    folded = text
    for char, ascii_fold in _IGNORECASE_EXTRA:  # three replace() passes run at memory speed; translate() does not
        if char in folded:
            folded = folded.replace(char, ascii_fold)
    folded = folded.lower()
    if len(folded) != len(text):  # no such character in Unicode 15 once ``İ`` is mapped; be safe anyway
        folded = "".join(low if len(low := ch.lower()) == 1 else ch for ch in folded)
    return folded


class ScanText:
    """One text being scanned: the text, its case fold, and what RE2 reads of each: ASCII bytes, one byte
    per character, so that match offsets are character offsets with no conversion.

    Every rule pattern reads characters as ASCII classes (RE2's ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are
    ASCII, and no pattern names a non-ASCII character), so a non-ASCII character matches exactly what DEL
    (U+007F) matches: any negated class, no named one. It is read as DEL, lone surrogates included (UTF-8
    cannot carry them). The two characters that case-insensitive matching folds onto ASCII letters, long s
    and the Kelvin sign, are read as ``s`` and ``k``. Python-side checks read the text itself.
    """

    __slots__ = ("ascii", "lowered", "lowered_subject", "subject", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()
        self.lowered = fold(text)
        self.subject = _as_ascii(text, self.ascii)
        self.lowered_subject = _as_ascii(self.lowered, self.ascii)

    def matches(self, regex: re2._Regexp) -> Iterator[re2._Match]:
        """``regex.finditer`` over the text; spans are offsets into :attr:`text`."""
        return regex.finditer(self.subject)


def _as_ascii(text: str, ascii: bool) -> bytes:
    if ascii:
        return text.encode("ascii")
    for char, ascii_fold in _FOLDS_TO_ASCII:
        if char in text:
            text = text.replace(char, ascii_fold)
    return _NON_ASCII.sub("\x7f", text).encode("ascii")


class View:
    """What a validator sees of one match: the candidate span, the match's groups, and at most
    :data:`CONTEXT` characters on either side of the candidate."""

    __slots__ = ("_match", "_text", "end", "start")

    def __init__(self, text: str, match: re2._Match | None, start: int, end: int) -> None:
        self._text = text
        self._match = match
        self.start = start
        self.end = end

    @property
    def value(self) -> str:
        return self._text[self.start : self.end]

    def before(self, n: int = CONTEXT) -> str:
        """Up to ``n`` (at most :data:`CONTEXT`) characters right before the span."""
        return self._text[max(0, self.start - min(n, CONTEXT)) : self.start]

    def after(self, n: int = CONTEXT) -> str:
        """Up to ``n`` (at most :data:`CONTEXT`) characters right after the span."""
        return self._text[self.end : self.end + min(n, CONTEXT)]

    def line_before(self) -> str:
        """The span's line up to the span (at most :data:`CONTEXT` characters of it)."""
        before = self.before()
        return before[before.rfind("\n") + 1 :]

    def group(self, group: int) -> str | None:
        """The text of a group of the match (by number), None when it did not take part."""
        start, end = self._match.span(group) if self._match is not None else (-1, -1)
        return None if start < 0 else self._text[start:end]

    def at(self, start: int, end: int) -> View:
        """The same match seen around another span (within the match)."""
        return View(self._text, self._match, start, end)


@dataclass(frozen=True, eq=False)
class Rule:
    """One detector: an RE2 ``pattern``, then Python checks on each match.

    The sensitive span is the first participating group named ``s`` or ``s_<anything>`` (alternatives of one
    pattern), else the whole match. ``left``/``right``: a character class the character right before/after
    the span must not belong to (``boundary`` sets both to ``[\\w-]``, so ``task-runner`` is not ``sk-…``).
    ``validate`` decides whether the span is sensitive; ``refine`` may narrow it (a path keeps its library
    part). ``requires``: the rule runs only if one of these literals occurs (in the case-folded text when
    ``requires_lower``); ``probe``: only if this RE2 pattern, which every match of ``pattern`` contains,
    occurs. Both are read by the gate.
    """

    kind: str
    category: Category
    label: str
    pattern: str
    validate: Validator | None = None
    confidence: float = 0.9
    requires: tuple[str, ...] = ()
    requires_lower: bool = False
    probe: str | None = None
    boundary: bool = False
    left: str | None = None
    right: str | None = None
    refine: Refiner | None = None
    regex: re2._Regexp = field(init=False, repr=False)
    _groups: tuple[int, ...] = field(init=False, repr=False)
    _left: re.Pattern[str] | None = field(init=False, repr=False)
    _right: re.Pattern[str] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        regex = re2.compile(self.pattern) if self.pattern else None
        object.__setattr__(self, "regex", regex)
        names = regex.groupindex if regex is not None else {}
        groups = tuple(index for name, index in sorted(names.items(), key=lambda kv: kv[1]) if _is_span_group(name))
        object.__setattr__(self, "_groups", groups)
        left = self.left or (r"[\w-]" if self.boundary else None)
        right = self.right or (r"[\w-]" if self.boundary else None)
        object.__setattr__(self, "_left", re.compile(left) if left else None)
        object.__setattr__(self, "_right", re.compile(right) if right else None)

    def gate(self) -> tuple[tuple[str, bool], ...]:
        """Literals (with their case-folding flag) of which at least one must occur for this rule to match;
        empty when no literal is required."""
        return tuple((literal, self.requires_lower) for literal in self.requires)

    def collect(self, scan_text: ScanText, out: Found) -> None:
        """Add this rule's candidates in ``scan_text`` to ``out``, which holds those of the rules before it
        (see :data:`Found`). The gate is the caller's."""
        text = scan_text.text
        groups = self._groups
        for match in scan_text.matches(self.regex):
            start, end = match.span()
            for group in groups:
                group_start, group_end = match.span(group)
                if group_start >= 0:
                    start, end = group_start, group_end
                    break
            if start == end or (start, end) in out:
                continue
            self._accept(View(text, match, start, end), out)

    def _accept(self, view: View, out: Found) -> None:
        text, start, end = view._text, view.start, view.end
        if self._left is not None and start > 0 and self._left.match(text, start - 1):
            return
        if self._right is not None and end < len(text) and self._right.match(text, end):
            return
        if self.validate is not None and not self.validate(view):
            return
        if self.refine is not None:
            span = self.refine(view)
            if span is None or span[0] >= span[1] or span in out:
                return
            start, end = span
        out[start, end] = Candidate(start, end, self)


def _is_span_group(name: str) -> bool:
    return name == "s" or name.startswith("s_")


@dataclass(frozen=True)
class Candidate:
    start: int
    end: int
    rule: Rule


def add(found: Found, candidate: Candidate) -> None:
    """Add ``candidate`` unless its span is already there (see :data:`Found`)."""
    found.setdefault((candidate.start, candidate.end), candidate)


class RuleSet:
    """Rules in priority order behind a shared gate (:mod:`~gateway_plugins.sanitizers.gate`) that skips,
    for each text, the rules whose literals or probes do not occur in it."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        from gateway_plugins.sanitizers.gate import Gate

        self.rules = tuple(rules)
        self.order = {rule: index for index, rule in enumerate(self.rules)}
        self.gate = Gate(self.rules)

    def scan(self, text: str) -> list[Candidate]:
        """Every candidate span of every rule, unresolved (a span once, for the first rule finding it)."""
        scan_text = ScanText(text)
        found: Found = {}
        rules = self.rules
        for index in self.gate.rules_for(scan_text):
            rules[index].collect(scan_text, found)
        return list(found.values())

    def find(self, text: str) -> list[Candidate]:
        """The non-overlapping spans to redact in ``text``, in text order."""
        found = self.scan(text)
        return select(found, self.order) if found else found


def select(candidates: Sequence[Candidate], order: dict[Rule, int]) -> list[Candidate]:
    """Non-overlapping spans to redact, in text order: overlapping candidates become one span, their union.

    Dropping one of two overlapping candidates would leave the part of it outside the other in clear (an
    e-mail rule's ``3xyz@db01…`` cutting the password of ``postgresql://admin:Tr0ub4dor&3xyz@db01…`` in
    two), so nothing is dropped: the union is redacted, under the rule of its best member: secrets before
    other classes, then the longer span, then the rule listed first. Rules keep unions rare by not
    matching inside each other's territory (the e-mail rule skips URL credentials).
    """
    if len(candidates) < 2:
        return list(candidates)
    ordered = sorted(candidates, key=lambda c: (c.start, c.end))
    chosen: list[Candidate] = []
    best = ordered[0]
    start, end = best.start, best.end
    for cand in ordered[1:]:
        if cand.start < end:
            end = max(end, cand.end)
            if _rank(cand, order) < _rank(best, order):
                best = cand
            continue
        chosen.append(_union(best, start, end))
        best = cand
        start, end = cand.start, cand.end
    chosen.append(_union(best, start, end))
    return chosen


def _union(best: Candidate, start: int, end: int) -> Candidate:
    return best if (best.start, best.end) == (start, end) else Candidate(start, end, best.rule)


def _rank(cand: Candidate, order: dict[Rule, int]) -> tuple[int, int, int]:
    return (cand.rule.category != "secret", cand.start - cand.end, order.get(cand.rule, 1 << 30))


def redact(text: str, chosen: Sequence[Candidate], placeholders: PlaceholderMap, layer: str) -> SanitizedText:
    """Replace each chosen span with its stable placeholder; findings keep offsets into ``text``."""
    if not chosen:
        return SanitizedText(text, [])
    parts: list[str] = []
    findings: list[Finding] = []
    cursor = 0
    for cand in chosen:
        rule = cand.rule
        token = placeholders.placeholder(rule.label, text[cand.start : cand.end], category=rule.category)
        parts.append(text[cursor : cand.start])
        parts.append(token)
        cursor = cand.end
        findings.append(Finding(rule.kind, rule.category, cand.start, cand.end, rule.confidence, layer, token))
    parts.append(text[cursor:])
    return SanitizedText("".join(parts), findings)
