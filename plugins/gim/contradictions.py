"""Rule 3 of the duplicate decision against the stores: the candidates' evidence, and their contradictions.

For each candidate master that passes rules 1-2 (:mod:`gateway_plugins.gim.dedup`), the master's evidence is
rebuilt from what is stored: its root cause and fix bundle (the master row) and the texts of the master's own item
and of its items whose error matched the submission (``gim_items.texts``: the normalised error signature and the
resolution text). The specific checks (:mod:`gateway_plugins.gim.agreement`) read the master and those items
together; the mechanism check (:mod:`gateway_plugins.gim.mechanism`) compares the submission with each item on its
own, weighting terms by the explanation vocabulary (:attr:`GimCore.vocabulary`), and the submission's fix with the
master's own fix for an opposite swap of two distributions (:func:`~gateway_plugins.gim.mechanism.move_conflict`).
Masters written before these rules existed are checked alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import structlog

from gateway.api import off_loop
from gateway_plugins.gim.agreement import conflicts
from gateway_plugins.gim.dedup import Evidence, SecondPath
from gateway_plugins.gim.evidence import Facts, extract_facts
from gateway_plugins.gim.mechanism import ReportTerms, best_overlap, mechanism_conflict, move_conflict, report_terms
from gateway_plugins.gim.models import MasterIssue
from gateway_plugins.gim.moves import fix_moves, same_move
from gateway_plugins.gim.texts import ERROR, RESOLUTION, resolution_text

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore
    from gateway_plugins.gim.intake import Prepared

log = structlog.get_logger(__name__)

__all__ = ["attach_conflicts", "master_facts", "master_terms", "submission_facts"]

_ITEMS_PER_MASTER = 8
"""Matched items of one master whose texts are read (the master's own item always is)."""


def submission_facts(prepared: Prepared) -> Facts:
    """The evidence of a prepared (sanitised) submission."""
    texts = prepared.texts
    return extract_facts(texts[ERROR], prepared.root_cause, prepared.fix_bundle, extra_text=[texts[RESOLUTION]])


def master_facts(
    master: MasterIssue, own: Mapping[str, str] | None, matched: Iterable[Mapping[str, str]] = ()
) -> Facts:
    """The evidence of a master: its root cause and fix with its own item's texts (``own``), plus the failure
    lines, traced libraries and mentions of its ``matched`` items (children whose error matched)."""
    own = own or {}
    facts = extract_facts(
        own.get(ERROR, ""), master.root_cause, master.fix_bundle, extra_text=[own.get(RESOLUTION, "")]
    )
    for texts in matched:
        facts = facts.merged_with(extract_facts(texts.get(ERROR, ""), "", None, extra_text=[texts.get(RESOLUTION, "")]))
    return facts


def master_terms(
    master: MasterIssue, own: Mapping[str, str] | None, matched: Iterable[Mapping[str, str]] = ()
) -> list[ReportTerms]:
    """The terms of a master's own report (with its fix's actions), then of each matched child."""
    own = own or {}
    resolution = own.get(RESOLUTION) or resolution_text(master.root_cause, master.fix_bundle)
    items = [report_terms(own.get(ERROR, ""), resolution, master.fix_bundle)]
    return items + [report_terms(texts.get(ERROR, ""), texts.get(RESOLUTION, "")) for texts in matched]


async def attach_conflicts(
    core: GimCore,
    prepared: Prepared,
    evidence: Mapping[str, Evidence],
    *,
    error_threshold: float,
    resolution_threshold: float,
    mechanism_overlap: float,
    second_path: SecondPath | None = None,
    same_move_path: bool = False,
) -> None:
    """Fill ``conflicts`` of every candidate that passes rules 1-2, is admitted by ``second_path`` or, with
    ``same_move_path``, passes rule 1 (the others cannot merge anyway), their ``overlap`` (what the second path
    needs) and ``same_move`` (what the same-move path needs). ``mechanism_overlap``: the mechanism check's
    ``min_overlap`` (0 leaves the check out)."""
    candidates = [
        e
        for e in evidence.values()
        if e.passes(error_threshold, resolution_threshold) or (second_path is not None and second_path.admits(e))
    ]
    # The same-move path needs a specific move on both sides: only a candidate that passes rule 1 and whose own
    # fix makes the same move as the submission's gets its evidence read (its fix is read alone first: cheap
    # beside the evidence), not every candidate that passes rule 1.
    my_moves = fix_moves(prepared.fix_bundle) if same_move_path else frozenset()
    taken = {e.master_id for e in candidates}
    by_rule_1 = [e for e in evidence.values() if my_moves and e.error >= error_threshold and e.master_id not in taken]
    if by_rule_1:
        fixes = await core.repo.fix_bundles(core.store, sorted(e.master_id for e in by_rule_1))
        candidates += [
            e for e in by_rule_1 if e.master_id in fixes and same_move(my_moves, fix_moves(fixes[e.master_id]))
        ]
    if not candidates:
        return
    matched = {e.master_id: sorted(e.item_ids - {e.master_id})[: _ITEMS_PER_MASTER - 1] for e in candidates}
    masters = await core.repo.masters(core.store, sorted(matched))
    item_ids = sorted(set(matched) | {i for ids in matched.values() for i in ids})
    by_item: dict[str, Any] = {
        str(row["id"]): row["texts"] for row in await core.repo.items_texts(core.store, item_ids)
    }
    # the texts are up to 200 kB each: their facts and terms are worked out in a worker thread when long (the
    # checks below only compare sets, and read the vocabulary, which the event loop changes, on the loop)
    reports = {
        e.master_id: (
            masters[e.master_id],
            by_item.get(e.master_id),
            [by_item[i] for i in matched[e.master_id] if i in by_item],
        )
        for e in candidates
        if e.master_id in masters
    }
    size = sum(map(len, prepared.texts.values())) + sum(
        _chars(master, own, children) for master, own, children in reports.values()
    )
    (mine, my_terms), theirs = await off_loop(partial(_evidence_of, prepared, reports), size=size)
    for e in candidates:
        if e.master_id not in theirs:
            continue
        facts, terms = theirs[e.master_id]
        found = conflicts(mine, facts)
        if terms and (swapped := move_conflict(my_terms, terms[0])) is not None:
            found.append(swapped)
        mechanism = mechanism_conflict(my_terms, terms, core.vocabulary, min_overlap=mechanism_overlap)
        e.overlap = best_overlap(my_terms, terms, core.vocabulary)
        e.same_move = bool(terms) and same_move(my_terms.moves, terms[0].moves)
        e.conflicts = tuple(found if mechanism is None else [*found, mechanism])
        if e.conflicts:
            log.info("gim.dedup.contradiction", master=e.master_id, conflicts=[str(c) for c in e.conflicts])


def _chars(master: MasterIssue, own: Mapping[str, str] | None, children: list[Mapping[str, str]]) -> int:
    """About how many characters a master's evidence reads."""
    fix = master.fix_bundle
    actions = sum(len(a.command) + len(a.explanation or "") for a in fix.env_actions)
    texts = sum(len(v) for t in (own or {}, *children) for v in t.values() if isinstance(v, str))
    return len(master.root_cause) + actions + len(fix.code_fix or "") + texts


_Report = tuple[MasterIssue, Mapping[str, str] | None, list[Mapping[str, str]]]


def _evidence_of(
    prepared: Prepared, reports: Mapping[str, _Report]
) -> tuple[tuple[Facts, ReportTerms], dict[str, tuple[Facts, list[ReportTerms]]]]:
    """The submission's facts and terms, and each candidate master's (from its row, own item and matched items)."""
    mine = (
        submission_facts(prepared),
        report_terms(prepared.texts[ERROR], "", prepared.fix_bundle, explanation=prepared.terms),
    )
    theirs = {
        master_id: (master_facts(master, own, children), master_terms(master, own, children))
        for master_id, (master, own, children) in reports.items()
    }
    return mine, theirs
