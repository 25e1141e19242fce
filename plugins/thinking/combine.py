"""Several judges' results → one review: overall score, dimensions, verdict, comments, citations, cards.

* ``overall``: the mean of the scores of the judges that scored (abstaining judges are left out).
* ``dimensions``: per dimension, the mean over the judges that scored it (rubric order first).
* ``verdict``: ``reject`` on any blocking finding (parse error, secret, conflict marker) or when ``overall`` is
  ``reject_margin`` or more below the threshold; ``pass`` when ``overall`` reaches the threshold; ``revise``
  otherwise — and ``revise`` when no judge could score at all (the code is unreviewed, not approved).
* ``cards``: one per judge that scored; ``abstained``: the others, with the reason.

``overall`` is ``None`` here when no judge scored; the published review turns that into the ``unscored``
outcome with a numeric score (:class:`gateway_plugins.thinking.models.GanReview`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.api import RUBRIC, JudgeResult, ReviewFile
from gateway_plugins.thinking.models import Abstention, Dimension, InlineComment, JudgeCard, Review, Verdict

_RANK = {"blocking": 0, "major": 1, "minor": 2, "info": 3}


@dataclass(frozen=True)
class Combined:
    overall: int | None
    dimensions: list[Dimension]
    verdict: Verdict
    review: Review
    cards: list[JudgeCard]
    blocking: list[str]
    abstained: list[Abstention]


def verdict_for(overall: int | None, blocking: bool, threshold: int, reject_margin: int) -> Verdict:
    if overall is None:
        return "revise"
    if blocking or overall <= threshold - reject_margin:
        return "reject"
    return "pass" if overall >= threshold else "revise"


def combine(
    results: Sequence[JudgeResult],
    files: Sequence[ReviewFile],
    *,
    threshold: int,
    reject_margin: int,
    max_comments: int,
) -> Combined:
    scored = [result for result in results if result.score is not None]
    scores = [r.score for r in scored if r.score is not None]
    overall = round(sum(scores) / len(scores)) if scores else None
    names = sorted({name for r in scored for name in r.dimensions}, key=_dimension_order)
    dimensions = [
        Dimension(name=name, score=round(sum(v) / len(v)))
        for name in names
        if (v := [r.dimensions[name] for r in scored if name in r.dimensions])
    ]
    blocking = [
        f"{c.rule or c.message} at {c.path}:{c.line}" for r in scored for c in r.comments if c.severity == "blocking"
    ]
    verdict = verdict_for(overall, bool(blocking), threshold, reject_margin)
    uris = {file.path: file.uri for file in files}
    seen: set[tuple[str, int, str]] = set()
    ranked: list[tuple[int, InlineComment, str]] = []
    for result in scored:
        for comment in result.comments:
            key = (comment.path, comment.line, comment.message)
            if key in seen:
                continue
            seen.add(key)
            inline = InlineComment(
                path=comment.path, line=comment.line, comment=comment.message, severity=comment.severity,
                judge=result.judge,
            )  # fmt: skip
            end = comment.end_line or comment.line
            citation = f"{uris.get(comment.path, f'repo://{comment.path}')}:{comment.line}-{end}"
            ranked.append((_RANK.get(comment.severity, 4), inline, citation))
    ranked.sort(key=lambda item: item[0])
    kept = sorted(ranked[:max_comments], key=lambda item: (item[1].path, item[1].line))
    citations = list(dict.fromkeys(citation for _, _, citation in kept))
    cards = [JudgeCard(model=r.judge, score=r.score, notes=r.notes) for r in scored if r.score is not None]
    abstained = [Abstention(model=r.judge, reason=r.notes or "no reason given") for r in results if r.score is None]
    summary = _summary(results, overall, verdict, threshold, blocking, len(ranked) - len(kept))
    review = Review(summary=summary, inline=[inline for _, inline, _ in kept], citations=citations)
    return Combined(overall, dimensions, verdict, review, cards, blocking, abstained)


def _dimension_order(name: str) -> tuple[int, str]:
    """Rubric dimensions first, in rubric order; a judge's own dimensions after them, by name."""
    order = list(RUBRIC)
    return (order.index(name), "") if name in order else (len(order), name)


def _summary(
    results: Sequence[JudgeResult],
    overall: int | None,
    verdict: Verdict,
    threshold: int,
    blocking: list[str],
    hidden: int,
) -> str:
    if overall is None:
        head = "No judge could score this code, so it is not approved: overall 0, verdict revise (unscored)."
    else:
        head = f"Verdict {verdict}: overall {overall} against a threshold of {threshold}."
        if blocking:
            head += f" Blocking: {'; '.join(blocking[:3])}."
    parts = [head]
    for result in results:
        if result.score is None:
            parts.append(f"{result.judge}: left out ({result.notes or 'no reason given'}).")
        elif result.summary:
            parts.append(f"{result.judge}: {result.summary}")
    if hidden > 0:
        parts.append(f"{hidden} less severe comment(s) not shown (max_comments).")
    return " ".join(parts)
