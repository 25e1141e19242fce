"""The mechanism check: two explanations of one error must share what they add beyond the error text.

Two reports of one cause, in different words, still name the same specifics: the package, the setting, the
command, the file, the concept ("corporate proxy", "page file", "transformIgnorePatterns"). Two different causes
behind the same error text share the error's words (every explanation of ``npm ERR! EACCES`` restates "npm",
"permission", "root") and differ in the rest ("global prefix", "nvm" vs "sudo", "cache", "chown"). Embeddings see
mostly the shared restatement, so the resolution similarity of such look-alikes is high; this check looks at the
rest.

For a submission *S* and one item *M* of a candidate master (its own report or a child whose error matched):

* the **distinguishing terms** of each are the stemmed terms of its resolution text (root cause + fix) minus every
  term of either error text (:func:`gateway_plugins.gim.vocabulary.explanation_terms`);
* each term weighs its inverse document frequency over the stored explanations
  (:class:`~gateway_plugins.gim.vocabulary.ExplanationVocabulary`), so words every explanation uses, and a
  deployment's boilerplate, weigh nearly nothing;
* the **overlap** is the weighted Dice coefficient of the two sets, smoothed by one unseen term on each side
  (``(2·w(S∩M) + 2u) / (w(S) + w(M) + 2u)``, ``u`` the weight of a term no explanation uses): explanations that
  add little beyond the error carry no evidence either way and stay near 1.

The check vetoes a merge when the overlap with every item of the master is below ``min_overlap`` (the only
parameter, calibrated on the calibration part of ``bench/data/gim_dedup``) **and** the two fixes' actions do not
agree: the terms of the submission's commands and working-version names shared with the master's own fix weigh
less than one unseen term, or none of them is something both commands act on. What a command acts on is its text
without its program (an installer's tool and verb): two fixes that run the same tool (``pip install numba`` and
``pip install numpy``, ``gunicorn --timeout 120`` and ``gunicorn --workers 4``) do not agree by the tool's name,
and removing a package is not installing it. A reworded duplicate whose fix is written differently (``pip
install tf-keras`` and ``python -m pip install tf-keras``) keeps its shared actions; two look-alikes whose fixes
are a generic pointer or act on different things have none. Two fixes that make the same specific move of one
package (:func:`gateway_plugins.gim.moves.same_move`: ``pip install -U "black>=22.3.0"`` and ``poetry add
"black@^22.3"``) agree however differently they are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway_plugins.gim.agreement import Conflict
from gateway_plugins.gim.commands import REMOVED, action_objects, installs_extra
from gateway_plugins.gim.models import FixBundle
from gateway_plugins.gim.moves import Move, fix_moves, moves_differ, removes_what_other_installs, same_move
from gateway_plugins.gim.vocabulary import ExplanationVocabulary, explanation_terms

__all__ = ["ReportTerms", "best_overlap", "mechanism_conflict", "move_conflict", "overlap", "report_terms"]

_SHOWN = 4
"""Distinguishing terms named per side in a conflict's detail (the heaviest)."""


@dataclass(frozen=True)
class ReportTerms:
    """The terms of one report: its error, its explanation (resolution text) and its fix's actions."""

    error: frozenset[str]
    explanation: frozenset[str]
    actions: frozenset[str] = frozenset()
    """Terms of the fix's commands and working-version names; empty when the structured fix is not at hand."""
    objects: frozenset[str] = frozenset()
    """Terms of what the fix's commands act on (:func:`gateway_plugins.gim.commands.action_objects`: without the
    program, or an installer's tool and verb; a removed package's terms marked), its working-version names, and
    what the explanation of an action installing an extra says it pulls in."""
    moves: frozenset[Move] = frozenset()
    """What the fix does to each package it names (:func:`gateway_plugins.gim.moves.fix_moves`)."""

    def acts_like(self, other: ReportTerms, vocabulary: ExplanationVocabulary) -> bool:
        """Whether the two fixes' actions agree: their shared command terms weigh at least one unseen term and
        they act on something in common (a shared tool or verb alone is not the same action), or they make the
        same move of one package (:func:`gateway_plugins.gim.moves.same_move`: the same way, to versions that
        intersect), however differently it is written. Shared words do not count when the fixes do different
        things to a package both name (:func:`gateway_plugins.gim.moves.moves_differ`: up against down, a move
        against a plain install, a removal against an install)."""
        if same_move(self.moves, other.moves):
            return True
        if moves_differ(self.moves, other.moves):
            return False  # shared words, different things done to one package
        shared = vocabulary.weight(self.actions & other.actions)
        return shared >= vocabulary.unseen and bool(self.objects & other.objects)


def report_terms(
    error: str, resolution: str, fix: FixBundle | None = None, *, explanation: frozenset[str] | None = None
) -> ReportTerms:
    """``error``: the normalised error signature; ``resolution``: the resolution text (root cause + fix), or its
    terms already computed (``explanation``)."""
    actions: frozenset[str] = frozenset()
    objects: frozenset[str] = frozenset()
    moves: frozenset[Move] = frozenset()
    if fix is not None:
        moves = fix_moves(fix)
        commands = [action.command for action in fix.env_actions]
        versions = list(fix.constraints.working_versions)
        actions = explanation_terms("\n".join([*commands, *versions]))
        acted_on = [action_objects(command) for command in commands]
        removed = explanation_terms("\n".join(o[1] for o in acted_on))
        objects = explanation_terms("\n".join([*(o[0] for o in acted_on), *versions]))
        objects |= {REMOVED + term for term in removed}
        pulled_in = [action.explanation for action in fix.env_actions if installs_extra(action.command)]
        objects |= explanation_terms("\n".join(pulled_in))
    explained = explanation if explanation is not None else explanation_terms(resolution)
    return ReportTerms(explanation_terms(error), explained, actions, objects, moves)


def overlap(sub: ReportTerms, item: ReportTerms, vocabulary: ExplanationVocabulary) -> tuple[float, set[str], set[str]]:
    """The smoothed weighted Dice overlap of the two reports' distinguishing terms, and those terms."""
    shared_error = sub.error | item.error
    mine = set(sub.explanation - shared_error)
    theirs = set(item.explanation - shared_error)
    unit = vocabulary.unseen
    both = vocabulary.weight(mine & theirs)
    value = (2.0 * both + 2.0 * unit) / (vocabulary.weight(mine) + vocabulary.weight(theirs) + 2.0 * unit)
    return value, mine, theirs


def best_overlap(sub: ReportTerms, items: Sequence[ReportTerms], vocabulary: ExplanationVocabulary) -> float:
    """The submission's best overlap with one of the master's items (0 without items)."""
    return max((overlap(sub, item, vocabulary)[0] for item in items), default=0.0)


def mechanism_conflict(
    sub: ReportTerms, items: Sequence[ReportTerms], vocabulary: ExplanationVocabulary, *, min_overlap: float
) -> Conflict | None:
    """``items``: the master's own report first, then its matched children. ``None`` when the submission agrees
    with one of them, or when its fix's actions agree with the master's."""
    if not items or min_overlap <= 0.0:
        return None
    best: tuple[float, set[str], set[str]] | None = None
    for item in items:
        found = overlap(sub, item, vocabulary)
        if found[0] >= min_overlap:
            return None
        if best is None or found[0] > best[0]:
            best = found
    if sub.acts_like(items[0], vocabulary):
        return None
    assert best is not None
    value, mine, theirs = best

    def heaviest(terms: set[str]) -> str:
        ranked = sorted(terms, key=lambda t: (-vocabulary.idf(t), t))[:_SHOWN]
        return ", ".join(ranked) or "nothing"

    only_mine, only_theirs = mine - theirs, theirs - mine
    return Conflict(
        "mechanism",
        f"overlap {value:.2f} < {min_overlap:.2f}; submission adds {heaviest(only_mine)}; master adds "
        f"{heaviest(only_theirs)}",
    )


def move_conflict(sub: ReportTerms, master: ReportTerms) -> Conflict | None:
    """A veto: one fix removes a distribution that the other installs (an opposite swap, such as
    ``opencv-python`` for ``opencv-python-headless`` against the reverse). ``master``: the terms of the master's
    own report, which carry its fix's moves."""
    swapped = removes_what_other_installs(sub.moves, master.moves)
    return None if swapped is None else Conflict("move", f"{swapped}: removed by one fix, installed by the other")
