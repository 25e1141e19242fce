"""Necessary conditions for a merge: the submission's specific evidence must not contradict the master's.

The embeddings say how alike two reports *read*; these checks look for a concrete contradiction between the
:class:`~gateway_plugins.gim.evidence.Facts` of a submission and of a candidate master. Each one is a veto: one
contradiction keeps the submission apart, however similar the texts. None of them can cause a merge.

* **failure** — the two errors state the failure with the same template but different values in a slot
  (``cannot import name 'url_quote' from 'werkzeug.urls'`` vs ``... 'url_decode' ...``), and a value that one side
  *explains* (names in its root cause or fix) is never mentioned by the other side. A value that neither root
  cause talks about (a model name, a user's file) is incidental and does not count; nor does a value the other
  side mentions anywhere (a report of ``np.int`` meets a master whose root cause lists ``np.float / np.int``), nor
  a value of the submission that the master's root cause or fix names (a report of ``libxkbcommon.so`` meets a
  master whose fix installs ``libxkbcommon0`` among the libraries of the same failure), nor a value of a family
  that the master's root cause or fix lists (it names two or more identifiers with the same leading parts, as
  ``X509_V_FLAG_CA, X509_V_FLAG_NOTIFY_POLICY``, and the submission's value has those parts too:
  ``X509_V_FLAG_CB_ISSUER_CHECK``): such a master explains a family of values, not one of them.
* **component** — the submission's traceback passes through a library that its root cause or fix names and that
  the master never mentions: the same ``Engine`` error raised inside ``pandas`` and in the user's own code.
* **direction** — a package that one fix moves up (upgrade, ``>=``) and the other moves down (downgrade, ``<``),
  each side consistently: the same error with opposite fixes is two issues.
* **subject** — the packages the two root causes and fixes are about are both known, share nothing, and one
  side's are never named by the other's root cause or fix: the same ``AttributeError: 'str' object has no
  attribute 'decode'`` caused by PyJWT on one side and by h5py on the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway_plugins.gim.evidence import Facts, identifier_tokens

__all__ = ["Conflict", "conflicts"]


@dataclass(frozen=True)
class Conflict:
    """One contradiction: which check found it, and on what."""

    check: str
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.detail}"


def _distinct(value: str, other: str) -> set[str]:
    return identifier_tokens(value) - identifier_tokens(other)


_FAMILY_PARTS = 2
"""Leading parts a family's identifiers share (``x509_v_flag``: three): one part (``url`` of ``url_quote``,
``langchain`` of ``langchain_core``) names a library or a word, not a family of values."""


def _parts(identifier: str) -> tuple[str, ...]:
    return tuple(p for p in identifier.split("_") if p)


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _listed_family(mine: str, theirs: str, explained: frozenset[str]) -> bool:
    """Whether ``explained`` lists a family that ``theirs`` belongs to and ``mine`` joins: at least two of its
    identifiers share ``theirs``'s first :data:`_FAMILY_PARTS` parts or more, and ``mine`` starts with every part
    they all share."""
    own = [_parts(t) for t in identifier_tokens(theirs) if "_" in t]
    for anchor in own:
        members = [p for t in explained if "_" in t and len(_common(p := _parts(t), anchor)) >= _FAMILY_PARTS]
        if len(set(members)) < 2:
            continue
        prefix = members[0]
        for member in members[1:]:
            prefix = _common(prefix, member)
        if len(prefix) < _FAMILY_PARTS:
            continue
        for value in identifier_tokens(mine):
            parts = _parts(value)
            if len(parts) > len(prefix) and parts[: len(prefix)] == prefix:
                return True
    return False


def _value_conflict(mine: str, theirs: str, own: Facts, other: Facts) -> bool:
    """``mine`` (explained by ``own``) differs from ``theirs`` and ``other`` never mentions it."""
    tokens = _distinct(mine, theirs)
    return bool(tokens & own.explained) and not tokens & other.mentioned


def failure_conflict(sub: Facts, master: Facts) -> Conflict | None:
    """Same failure template, contradicting explained values, and no line of the master that agrees."""
    found: Conflict | None = None
    for line in sub.failure_lines:
        for other in master.failure_lines:
            if line.template != other.template or len(line.values) != len(other.values):
                continue
            if line.values == other.values:
                return None  # an item of the master failed the same way
            for mine, theirs in zip(line.values, other.values, strict=True):
                if mine == theirs:
                    continue
                if _distinct(mine, theirs) & master.explained:
                    continue  # the master's cause or fix accounts for the submission's value
                if _listed_family(mine, theirs, master.explained):
                    continue  # ... or lists the family of values it belongs to
                if _value_conflict(mine, theirs, sub, master) or _value_conflict(theirs, mine, master, sub):
                    found = found or Conflict("failure", f"'{mine}' vs '{theirs}' in '{line.template}'")
    return found


def component_conflict(sub: Facts, master: Facts) -> Conflict | None:
    """The submission's traceback passes through a library that its own root cause or fix names (the failure is
    *about* that library) and that the master never mentions. One-way: a bare report may join a master whose
    trace shows more (a master failing inside ``mysql`` and explaining it accepts a report without a trace)."""
    for component in sorted(sub.components - master.components):
        tokens = identifier_tokens(component)
        if tokens & sub.explained and not tokens & master.mentioned:
            return Conflict("component", component)
    return None


def direction_conflict(sub: Facts, master: Facts) -> Conflict | None:
    for package in sorted(set(sub.directions) & set(master.directions)):
        mine, theirs = sub.directions[package], master.directions[package]
        if len(mine) == 1 and len(theirs) == 1 and mine != theirs:
            return Conflict("direction", f"{package}: {next(iter(mine))} vs {next(iter(theirs))}")
    return None


def _unexplained(subjects: frozenset[str], other: Facts) -> bool:
    return not any(identifier_tokens(subject) & other.explained for subject in subjects)


def subject_conflict(sub: Facts, master: Facts) -> Conflict | None:
    """Both sides name what they are about, share none of it, and one side's root cause and fix never name the
    other's subjects. A fix may name a package by what pulls it in (``pip install 'pandas[parquet]'`` installs
    pyarrow) or by another spelling; an explanation that still names the other side's subject is about it too (the
    error text does not count: look-alikes share it)."""
    if not (sub.subjects and master.subjects) or sub.subjects & master.subjects:
        return None
    if _unexplained(sub.subjects, master) or _unexplained(master.subjects, sub):
        return Conflict("subject", f"{sorted(sub.subjects)} vs {sorted(master.subjects)}")
    return None


def conflicts(sub: Facts, master: Facts) -> list[Conflict]:
    """Every contradiction between a submission's facts and a master's (empty: the merge may go ahead)."""
    checks = (failure_conflict, component_conflict, direction_conflict, subject_conflict)
    found = [check(sub, master) for check in checks]
    return [c for c in found if c is not None]
