"""What a fix does to each package it names, and when two fixes make the same move.

Two reports of one cause are often fixed with the same move written with other tools and spellings: ``pip install
-U "black>=22.3.0"`` and ``poetry add --group dev "black@^22.3"`` both upgrade black to 22.3 or later, ``pip install
"moviepy<2.0"`` and ``conda install moviepy=1.0.3`` both keep MoviePy below 2. Their commands share only the
package's name, which weighs little once the memory stores it, so the mechanism check's weight test
(:meth:`gateway_plugins.gim.mechanism.ReportTerms.acts_like`) does not see them agree. A **move** is read from the
structured fix instead:

* the **package**, as the installer spells it (:func:`gateway_plugins.gim.evidence.canonical_package`), with its
  **variant** kept apart: ``opencv-python`` and ``opencv-python-headless``, ``tensorflow`` and ``tensorflow-gpu``,
  ``psycopg2`` and ``psycopg2-binary`` are one library but different distributions, and a fix that swaps one for
  the other moves between them;
* the **kind**: ``up`` (an upgrade: ``-U``, ``upgrade``, a lower bound, the action type ``upgrade``), ``down`` (an
  upper bound, the action type ``downgrade``), ``install`` (neither), ``remove`` (``uninstall``);
* the **versions** it allows, from the command's specifier (pip's ``>=``/``<``/``==``/``~=``, conda's ``=1.0.3``,
  poetry's and npm's ``@^22.3``/``@~0.17``) or else the fix's working version for that package.

An installer moving itself (``pip install -U pip``) is a routine step of many unrelated fixes and is no move.
Two fixes make the same move when they move one package of the same variant the same way and the versions they
allow intersect (a move without versions allows any). An upgrade never agrees with a downgrade, nor an install
with a removal, nor ``<0.18`` with ``>=0.18.7``: opposite or disjoint moves are the signature of two look-alike
causes (an SDK too old vs too new), which the direction veto (:mod:`gateway_plugins.gim.agreement`) also reads.

Two fixes can also name one package and still do different things to it, which their shared command words hide
(:func:`moves_differ`): one moves it up and the other down, one keeps it below a version and the other installs it
plainly — "install the theme" against "keep the theme below 2" —, or one removes a distribution that the other
installs (:func:`removes_what_other_installs`: ``opencv-python`` swapped for ``opencv-python-headless`` against the
reverse swap).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from gateway_plugins.gim.commands import DOWN, UP, named_packages
from gateway_plugins.gim.evidence import canonical_package
from gateway_plugins.gim.models import FixBundle

__all__ = ["INSTALL", "REMOVE", "Move", "fix_moves", "moves_differ", "removes_what_other_installs", "same_move"]

INSTALL, REMOVE = "install", "remove"
_VARIANTS = ("headless", "gpu", "cpu", "binary", "contrib", "full")
_VERSION = re.compile(r"^\d+(?:\.\d+)*(?:\.\*)?$")


@dataclass(frozen=True)
class Move:
    """One package a fix moves: its name, variant, kind (``up``, ``down``, ``install``, ``remove``) and the
    versions the fix allows (``None``: any)."""

    package: str
    variant: frozenset[str]
    kind: str
    versions: SpecifierSet | None = None

    @property
    def specific(self) -> bool:
        """An upgrade, a downgrade or a pin: a move that says which versions. A plain install or a removal is
        not: every fix of "X is missing" installs X, whatever made it missing."""
        return self.kind in (UP, DOWN) or (self.kind == INSTALL and self.versions is not None)

    def agrees_with(self, other: Move) -> bool:
        """The same specific move (:attr:`specific`) of the same package and variant, the same way, to versions
        that intersect."""
        return (
            self.specific
            and self.package == other.package
            and self.variant == other.variant
            and self.kind == other.kind
            and _intersect(self.versions, other.versions)
        )


def _variant(name: str) -> frozenset[str]:
    parts = set(re.split(r"[-_.]", name.lower()))
    return frozenset(v for v in _VARIANTS if v in parts)


def _caret(version: str, tilde: bool) -> str | None:
    """Poetry's/npm's ``^1.2`` (up to the next non-zero component) and ``~1.2`` (up to the next minor)."""
    if not _VERSION.match(version):
        return None
    parts = [int(p) for p in version.rstrip(".*").split(".")]
    if tilde:
        bump = min(1, len(parts) - 1)
    else:
        bump = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
    upper = [*parts[:bump], parts[bump] + 1]
    return f">={version},<{'.'.join(map(str, upper))}"


def specifier(op: str | None, version: str | None) -> SpecifierSet | None:
    """The versions an installer's specifier allows (``None``: any, or a form not understood)."""
    if not op or not version:
        return None
    version = version.strip("'\",;")
    text: str | None
    if op == "@" or op == "=":  # poetry/npm/uv (``@^1.2``, ``@1.2``) and conda (``=1.0.3``)
        if version[0] in "^~" and not version.startswith("~="):
            text = _caret(version[1:], tilde=version[0] == "~")
        elif version[0] in "<>=~!":
            text = version
        elif _VERSION.match(version):
            text = f"=={version}" if op == "@" else f"=={version.rstrip('.*')}.*"
        else:
            text = None  # @latest, @next, a tag
    else:
        text = op + version
    if text is None:
        return None
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def _working(spec: str) -> SpecifierSet | None:
    spec = spec.strip()
    if _VERSION.match(spec):
        spec = "==" + spec
    try:
        return SpecifierSet(spec) if spec else None
    except InvalidSpecifier:
        return None


def _intersect(a: SpecifierSet | None, b: SpecifierSet | None) -> bool:
    """Whether some version satisfies both: every bound of either set (and one just above it), a very low and a
    very high version are tried, which covers the intervals the specifier operators describe."""
    if a is None or b is None:
        return True
    candidates = {Version("0"), Version("999999")}
    for spec in (*a, *b):
        try:
            bound = Version(spec.version.rstrip(".*").rstrip("."))
            candidates |= {bound, Version(f"{bound.base_version}.post1"), Version(f"{bound.base_version}.0.1")}
        except InvalidVersion:
            return True  # a bound not understood: no evidence of disjoint versions
    return any(a.contains(v, prereleases=True) and b.contains(v, prereleases=True) for v in candidates)


def fix_moves(fix: FixBundle) -> frozenset[Move]:
    """The moves of a fix's install-like commands (package managers as :mod:`gateway_plugins.gim.commands` reads
    them); the fix's working versions give the versions of a package its command leaves open."""
    working: dict[str, SpecifierSet] = {}
    for name, spec in fix.constraints.working_versions.items():
        package, versions = canonical_package(name), _working(spec)
        if package is not None and versions is not None:
            working[package] = versions
    moves: set[Move] = set()
    for action in fix.env_actions:
        typed = {"upgrade": UP, "downgrade": DOWN}.get(action.type)
        for named in named_packages(action.command, canonical_package):
            if named.itself:
                continue  # an installer upgrading itself is a routine step, not what the fix is about
            if named.removing:
                moves.add(Move(named.package, _variant(named.name), REMOVE))
                continue
            kind = named.direction or typed or INSTALL
            versions = specifier(named.op, named.version) or working.get(named.package)
            moves.add(Move(named.package, _variant(named.name), kind, versions))
    return frozenset(moves)


def same_move(mine: Iterable[Move], theirs: Iterable[Move]) -> bool:
    """Whether the two fixes move one package the same way (:meth:`Move.agrees_with`)."""
    theirs = list(theirs)
    return any(m.agrees_with(t) for m in mine for t in theirs)


def _by_distribution(moves: Iterable[Move]) -> dict[tuple[str, frozenset[str]], set[str]]:
    out: dict[tuple[str, frozenset[str]], set[str]] = {}
    for move in moves:
        out.setdefault((move.package, move.variant), set()).add(move.kind)
    return out


def removes_what_other_installs(mine: Iterable[Move], theirs: Iterable[Move]) -> str | None:
    """A distribution (package and variant) that one fix removes without installing it again and the other
    installs or moves: the two fixes swap it opposite ways. ``None`` when there is none."""
    a, b = _by_distribution(mine), _by_distribution(theirs)
    for first, second in ((a, b), (b, a)):
        for (package, variant), kinds in sorted(first.items(), key=lambda item: (item[0][0], sorted(item[0][1]))):
            other = second.get((package, variant), set())
            if kinds == {REMOVE} and other - {REMOVE}:
                return "-".join([package, *sorted(variant)])
    return None


def moves_differ(mine: Iterable[Move], theirs: Iterable[Move]) -> bool:
    """Whether the two fixes do different things to a distribution both name: up against down, a move down (an
    upper bound, a downgrade) against a plain install, or a removal against an install
    (:func:`removes_what_other_installs`). A plain install against an upgrade is not different: both get a
    current release (a reworded fix often says ``pip install -U x`` for ``pip install x``)."""
    mine, theirs = list(mine), list(theirs)
    if removes_what_other_installs(mine, theirs) is not None:
        return True
    a, b = _by_distribution(mine), _by_distribution(theirs)
    for key in set(a) & set(b):
        directed_a, directed_b = a[key] & {UP, DOWN}, b[key] & {UP, DOWN}
        if directed_a and directed_b and directed_a != directed_b:
            return True
        if (directed_a == {DOWN} and not directed_b and INSTALL in b[key]) or (
            directed_b == {DOWN} and not directed_a and INSTALL in a[key]
        ):
            return True
    return False
