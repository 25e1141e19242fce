"""The data and the reference (a Python oracle) the vector store contract suite compares a store against: points
with payloads of every indexed type, exact cosine ranking, payload filters as the protocol defines them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from gateway.api import ScoredPoint, VectorPoint

DIM = 8
COLLECTION = "gim__local-all-minilm-l6-v2-384"
FIELDS: Mapping[str, Any] = {"lang": "keyword", "n": "integer", "ok": "bool", "weight": "float"}
LANGS = ("python", "go", "rust", "typescript")
TOLERANCE = 1e-3

# Filters the suite checks against the Python oracle (:func:`matches`).
FILTERS: list[dict[str, Any]] = [
    {}, {"lang": "go"}, {"n": 7}, {"ok": True}, {"ok": False}, {"mixed": True}, {"mixed": 1}, {"weight": 0.625},
    {"lang": ["go", "rust"]}, {"n": [1, 2, 3, 40]}, {"mixed": [True, "one"]}, {"lang": "python", "ok": True},
    {"lang": ["python", "go"], "n": [0, 1, 2, 4, 8, 12, 16], "tags": "even"}, {"tags": "mod7-3"},
    {"doc.title": "issue 5 ünïcödé"}, {"lang": []}, {"lang": "cobol"}, {"absent": "x"},
]  # fmt: skip


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def make_points(count: int = 48, seed: int = 7, dim: int = DIM) -> list[VectorPoint]:
    """Random directions with a payload of every JSON kind (strings, ints, floats, bools, lists, objects, null)."""
    rng = np.random.default_rng(seed)
    points = []
    for i in range(count):
        payload: dict[str, Any] = {
            "lang": LANGS[i % len(LANGS)],
            "n": i,
            "ok": i % 3 == 0,
            "weight": round(0.25 * (i % 5) + 0.125, 3),
            "tags": ["even" if i % 2 == 0 else "odd", f"mod7-{i % 7}"],
            "mixed": True if i % 4 == 0 else 1 if i % 4 == 1 else "one",  # bool and int must not cross-match
            "doc": {"title": f"issue {i} ünïcödé", "refs": [i, {"deep": None}]},
        }
        vector = (rng.standard_normal(dim) * rng.uniform(0.5, 3.0)).tolist()  # not normalised on purpose
        points.append(VectorPoint(id=str(uuid.uuid4()), vector=vector, payload=payload))
    return points


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(unit(np.asarray(a, dtype=np.float64)), unit(np.asarray(b, dtype=np.float64))))


def _lookup(payload: Mapping[str, Any], key: str) -> Any:
    value: Any = payload
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _same(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if isinstance(wanted, float):
        return isinstance(stored, int | float) and float(stored) == wanted
    return type(stored) is type(wanted) and stored == wanted


def matches(payload: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """The protocol's filter semantics, evaluated in Python (the oracle)."""
    for key, wanted in (filter or {}).items():
        stored = _lookup(payload, key)
        candidates = stored if isinstance(stored, list) else [stored]
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_same(c, w) for c in candidates for w in options):
            return False
    return True


def ranking(points: Sequence[VectorPoint], vector: Sequence[float], filter: Mapping[str, Any] | None = None):
    """(id, score) of the matching points, closest first, computed with numpy."""
    scored = [(p.id, cosine(p.vector, vector)) for p in points if matches(p.payload, filter)]
    return sorted(scored, key=lambda item: -item[1])


def assert_ranked_like(found: Sequence[ScoredPoint], expected: Sequence[tuple[str, float]]) -> None:
    assert len(found) == len(expected), ([p.id for p in found], expected)
    for got, (want_id, want_score) in zip(found, expected, strict=True):
        assert got.score == pytest.approx(want_score, abs=TOLERANCE)
        if got.id != want_id:  # only a (near) tie may swap places
            assert dict(expected)[got.id] == pytest.approx(want_score, abs=TOLERANCE)
    scores = [p.score for p in found]
    assert scores == sorted(scores, reverse=True)
