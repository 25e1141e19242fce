"""The rule engine the offline layers share: declarative regex rules, overlap resolution and redaction.

Speed comes from never running a pattern where it cannot match, and running it as ``re`` runs fastest:
a pattern that starts with a literal is scanned for at memory speed, one that starts with a look-behind,
``\\b`` or a case-insensitive group is tried position by position (~10 MB/s), and every rule that runs
costs Python overhead even when it finds nothing. So:

* a :class:`RuleSet` asks its gate (:mod:`~gateway_plugins.sanitizers.gate`) which rules can match a text
  at all: those with one of their literals in it (``requires``, or the literal anchors) or, for rules
  anchored on patterns only, one of those. Most rules are skipped on most texts.
* A rule either starts with a literal (provider prefixes: ``sk-``, ``ghp_``, ``AIza``) and checks its left
  boundary in Python, or names *anchors* (literals such as ``@`` or ``password``, or literal-led patterns
  such as ``\\.\\d``) and runs its full pattern only in a ``window`` around the anchor hits.
* An ``anchored`` rule's match starts at a known place relative to each hit (``window[0]`` before it, or
  where its ``locate`` function says), so the pattern is *matched* there once instead of *searched* for
  across the window. Both strategies give exactly the matches ``pattern.finditer`` gives over the window.
* A span an earlier rule already found is not validated again (see :data:`Found`).

:meth:`RuleSet.scan` returns candidate spans, :func:`select` keeps non-overlapping ones (the longest first,
then the earliest rule) and :func:`redact` replaces each with a stable placeholder from the submission's
:class:`~gateway.api.PlaceholderMap`, so ``/home/alice/x.py`` reads ``/home/<PATH_USER_1>/x.py``.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gateway.api import Finding, PlaceholderMap, SanitizedText
from gateway.api.sanitizers import Category
from gateway_plugins.sanitizers.gate import Gate, build_gate

__all__ = [
    "Candidate",
    "Found",
    "Locator",
    "Rule",
    "RuleSet",
    "ScanText",
    "add",
    "find_all",
    "fold",
    "redact",
    "select",
]

Validator = Callable[[re.Match[str], str], bool]
"""Receives the match and the whole text; returns whether the match is really sensitive."""

Locator = Callable[[str, int, int, int], int]
"""``locate(text, hit, lo, hi)``: where the only match running through the anchor hit at ``hit`` can
start (it must lie within ``lo..hi``), or -1 when there is none."""

Found = dict[tuple[int, int], "Candidate"]
"""The candidates found so far in one text, by span, rule after rule in priority order. A rule skips a span
that is already there before validating it: a candidate with the same span, later in priority, can never
be selected (same length, overlapping), so ``sk-ant-…``, an Anthropic key, is not validated again by the
OpenAI rule and the ``api_key = …`` rule."""

_WORDISH = re.compile(r"[\w-]")


def find_all(haystack: str, literal: str) -> list[int]:
    """Start offsets of the non-overlapping occurrences of ``literal`` (what ``re.finditer`` would give)."""
    found: list[int] = []
    index = haystack.find(literal)
    while index >= 0:
        found.append(index)
        index = haystack.find(literal, index + len(literal))
    return found


_IGNORECASE_EXTRA = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
"""The characters ``re.IGNORECASE`` matches with an ASCII letter that ``str.lower`` does not turn into it:
capital I with dot, dotless i and long s (U+0130, U+0131, U+017F; the Kelvin sign lower-cases to ``k``)."""


def fold(text: str) -> str:
    """``text`` lower-cased with every offset kept, so that a lower-case ASCII literal occurs in it exactly
    where ``re.IGNORECASE`` would match it in ``text`` (``secret`` spelt with a long s reads ``secret``)."""
    if text.isascii():
        return text.lower()
    folded = text.translate(_IGNORECASE_EXTRA).lower()
    if len(folded) != len(text):  # no such character in Unicode 15 once ``İ`` is mapped; be safe anyway
        folded = "".join(low if len(low := ch.lower()) == 1 else ch for ch in folded)
    return folded


class ScanText:
    """One text being scanned, with its case-folded copy (same offsets)."""

    __slots__ = ("lowered", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = fold(text)

    def hits(self, anchor: str | re.Pattern[str], lower: bool) -> list[int]:
        """Start offsets of the non-overlapping occurrences of ``anchor``, in the folded text if ``lower``."""
        haystack = self.lowered if lower else self.text
        if isinstance(anchor, str):
            return find_all(haystack, anchor)
        return [match.start() for match in anchor.finditer(haystack)]


@dataclass(frozen=True, eq=False)
class Rule:
    """One detector. The sensitive span is the first participating group named ``s`` or ``s_<anything>``
    (alternatives of one pattern), else the whole match.

    ``anchors``: literal strings (searched in the case-folded text when ``anchor_lower``) or literal-led
    patterns; the full ``pattern`` then runs only within ``window`` = (chars before, chars after) each hit.
    ``anchored``: every match starts ``window[0]`` characters before an anchor hit, or where ``locate``
    says; the pattern is then matched at that one place per hit.
    ``boundary``: the span must not touch a word character or ``-`` on either side (``task-runner`` is
    not ``sk-…``), checked in Python so the pattern can start with its literal prefix.
    ``requires``: quick rejection: the rule runs only if one of these literals occurs (in the folded text
    when ``anchor_lower``); without it, a rule whose anchors are all literals requires one of them, and one
    whose anchors are all patterns is skipped when none of them occurs.
    """

    kind: str
    category: Category
    label: str
    pattern: re.Pattern[str]
    validate: Validator | None = None
    confidence: float = 0.9
    anchors: tuple[str | re.Pattern[str], ...] = ()
    anchor_lower: bool = False
    window: tuple[int, int] = (0, 0)
    boundary: bool = False
    requires: tuple[str, ...] = ()
    anchored: bool = False
    locate: Locator | None = None
    _groups: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        groups = tuple(n for n in self.pattern.groupindex if n == "s" or n.startswith("s_"))
        object.__setattr__(self, "_groups", groups)
        if (self.anchored or self.locate is not None) and not (self.anchored and self.anchors):
            raise ValueError(f"rule {self.kind!r}: 'locate' needs 'anchored', and 'anchored' needs anchors")

    def gate(self) -> tuple[tuple[str, bool], ...]:
        """Literals (with their case-folding flag) of which at least one must occur for this rule to match;
        empty when no literal is required."""
        if self.requires:
            return tuple((lit, self.anchor_lower) for lit in self.requires)
        if self.anchors and all(isinstance(a, str) for a in self.anchors):
            return tuple((a, self.anchor_lower) for a in self.anchors if isinstance(a, str))
        return ()

    def collect(self, scan_text: ScanText, out: Found) -> None:
        """Add this rule's candidates in ``scan_text`` to ``out``, which holds those of the rules before it
        (see :data:`Found`). The gate is the caller's."""
        text = scan_text.text
        if not self.anchors:
            self._search(text, 0, len(text), out)
            return
        hits = self._hits(scan_text)
        if not hits:
            return
        before, after = self.window
        length = len(text)
        # Merge the windows around the hits into disjoint regions, each with the hits it holds.
        first = 0
        start, end = max(0, hits[0] - before), min(length, hits[0] + after)
        for index in range(1, len(hits) + 1):
            if index < len(hits):
                lo, hi = max(0, hits[index] - before), min(length, hits[index] + after)
                if lo <= end:
                    end = max(end, hi)
                    continue
            if self.anchored:
                self._match_at_hits(text, hits[first:index], start, end, out)
            else:
                self._search(text, start, end, out)
            if index < len(hits):
                first, start, end = index, lo, hi

    def _hits(self, scan_text: ScanText) -> list[int]:
        if len(self.anchors) == 1:
            return scan_text.hits(self.anchors[0], self.anchor_lower)
        haystack = scan_text.lowered if self.anchor_lower else scan_text.text
        hits: list[int] = []
        for anchor in self.anchors:
            if isinstance(anchor, str):
                if anchor in haystack:  # most of several anchors are absent: skip the call
                    hits.extend(find_all(haystack, anchor))
            else:
                hits.extend(scan_text.hits(anchor, self.anchor_lower))
        hits.sort()
        return hits

    def _match_at_hits(self, text: str, hits: Sequence[int], lo: int, hi: int, out: Found) -> None:
        """What ``pattern.finditer(text, lo, hi)`` yields, for a pattern that can only match where the hits
        say: matched once per hit, skipping hits inside the previous match (finditer does not overlap)."""
        locate, offset, pattern = self.locate, self.window[0], self.pattern
        last_end = lo
        for hit in hits:
            start = locate(text, hit, last_end, hi) if locate is not None else hit - offset
            if start < last_end:
                continue
            match = pattern.match(text, start, hi)
            if match is not None:
                last_end = max(match.end(), start + 1)
                self._accept(match, text, out)

    def _search(self, text: str, start: int, end: int, out: Found) -> None:
        for match in self.pattern.finditer(text, start, end):
            self._accept(match, text, out)

    def _accept(self, match: re.Match[str], text: str, out: Found) -> None:
        start, end = match.span()
        for name in self._groups:
            if match.start(name) >= 0:
                start, end = match.span(name)
                break
        if start == end or (start, end) in out:
            return
        if self.boundary and (
            (start > 0 and _WORDISH.match(text, start - 1)) or (end < len(text) and _WORDISH.match(text, end))
        ):
            return
        if self.validate is not None and not self.validate(match, text):
            return
        out[start, end] = Candidate(start, end, self)


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
    for each text, the rules whose literals or anchor patterns do not occur in it, so a clean text costs a
    few microseconds. ``gate`` builds it (the fastest available by default)."""

    def __init__(self, rules: Sequence[Rule], *, gate: Callable[[Sequence[Rule]], Gate] = build_gate) -> None:
        self.rules = tuple(rules)
        self.order = {rule: index for index, rule in enumerate(self.rules)}
        self.gate = gate(self.rules)

    def scan(self, text: str) -> list[Candidate]:
        """Every candidate span of every rule, unresolved (a span once, for the first rule finding it)."""
        scan_text = ScanText(text)
        found: Found = {}
        rules = self.rules
        for index in self.gate.rules_for(text, scan_text.lowered):
            rules[index].collect(scan_text, found)
        return list(found.values())

    def select(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        return select(candidates, self.order)

    def find(self, text: str) -> list[Candidate]:
        """The non-overlapping spans to redact in ``text``, in text order."""
        found = self.scan(text)
        return select(found, self.order) if found else found


def select(candidates: Sequence[Candidate], order: dict[Rule, int]) -> list[Candidate]:
    """Non-overlapping candidates: longer spans win, then the rule listed first; returned in text order."""
    if len(candidates) < 2:
        return list(candidates)
    ranked = sorted(candidates, key=lambda c: (-(c.end - c.start), order.get(c.rule, 1 << 30), c.start))
    starts: list[int] = []  # sorted, disjoint intervals chosen so far
    ends: list[int] = []
    chosen: list[Candidate] = []
    for cand in ranked:
        index = bisect_left(starts, cand.start)
        if index < len(starts) and starts[index] < cand.end:
            continue
        if index > 0 and ends[index - 1] > cand.start:
            continue
        starts.insert(index, cand.start)
        ends.insert(index, cand.end)
        chosen.append(cand)
    chosen.sort(key=lambda c: c.start)
    return chosen


def redact(text: str, chosen: Sequence[Candidate], placeholders: PlaceholderMap, layer: str) -> SanitizedText:
    """Replace each chosen span with its stable placeholder; findings keep offsets into ``text``."""
    if not chosen:
        return SanitizedText(text, [])
    parts: list[str] = []
    findings: list[Finding] = []
    cursor = 0
    for cand in chosen:
        rule = cand.rule
        token = placeholders.placeholder(rule.label, text[cand.start : cand.end])
        parts.append(text[cursor : cand.start])
        parts.append(token)
        cursor = cand.end
        findings.append(Finding(rule.kind, rule.category, cand.start, cand.end, rule.confidence, layer, token))
    parts.append(text[cursor:])
    return SanitizedText("".join(parts), findings)
