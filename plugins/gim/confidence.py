"""Confidence of a fix: the posterior mean of a Beta distribution over "this fix works".

Each identity holds one vote per issue (a repeat replaces the earlier one), so the evidence is ``s`` identities
for whom the fix worked and ``f`` for whom it did not. With a ``Beta(alpha, beta)`` prior the posterior is
``Beta(alpha + s, beta + f)`` and its mean

    confidence = (alpha + s) / (alpha + beta + s + f)

is the score. The default prior ``Beta(2, 1)`` is a uniform prior plus the submitter's own report that the fix
resolved their issue (GIM only stores resolved issues), so a fresh issue scores 2/3, each independent success
pulls the score towards 1 and each failure towards 0, and a handful of votes cannot swing a well-confirmed fix.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BetaConfidence", "VoteTally"]


@dataclass(frozen=True)
class VoteTally:
    """Current votes on one issue (one per identity)."""

    successes: int = 0
    failures: int = 0


@dataclass(frozen=True)
class BetaConfidence:
    """The Beta prior; :meth:`score` maps a tally to a confidence in ``(0, 1)``."""

    alpha: float = 2.0
    beta: float = 1.0

    def __post_init__(self) -> None:
        if self.alpha <= 0 or self.beta <= 0:
            raise ValueError("Beta prior parameters must be positive")

    @property
    def prior(self) -> float:
        """The score of an issue nobody has confirmed yet."""
        return self.alpha / (self.alpha + self.beta)

    def score(self, tally: VoteTally) -> float:
        return (self.alpha + tally.successes) / (self.alpha + self.beta + tally.successes + tally.failures)
