"""What the two Qdrant stores share: their errors, the index settings, and the checks on what callers pass.

Both stores keep the :class:`gateway.api.VectorStore` contract the same way: point ids are UUID strings (returned
in canonical lower-case hyphenated form), vectors must have the collection's dimension, and a payload filter maps
a field to a value (equality) or to a list of values (any of them); the checks any store makes (ids, payloads,
filters, limits) are :mod:`gateway.api`'s, the ones on vectors (with numpy) are here. Errors a caller can act on
are built-in types (:class:`LookupError`, :class:`ValueError`) so that code written against the protocol needs no
import from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import VectorPoint, canonical_point_id, checked_payload


class CollectionNotFound(LookupError):
    """The collection does not exist (``ensure_collection`` creates it)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"vector collection {name!r} does not exist; call ensure_collection first")
        self.name = name


class DimensionMismatch(ValueError):
    """A vector, or a collection being ensured, has another dimension than the collection."""

    def __init__(self, name: str, expected: int, got: int, what: str = "vector") -> None:
        super().__init__(
            f"vector collection {name!r} holds vectors of dimension {expected}, but the {what} has dimension {got}"
        )
        self.name = name
        self.expected = expected
        self.got = got


class StoreClosed(RuntimeError):
    """The store was closed."""


class IndexSettings(BaseModel):
    """How a collection is indexed and searched (the GIM spec: HNSW, cosine, INT8 scalar quantization, rescoring
    with the original vectors after oversampling 2.0)."""

    model_config = ConfigDict(extra="forbid")

    hnsw_m: int = Field(16, ge=2, le=256, description="HNSW: edges per node.")
    hnsw_ef_construct: int = Field(100, ge=4, le=4096, description="HNSW: candidates kept while building.")
    hnsw_ef: int | None = Field(
        None, ge=1, le=4096, description="HNSW: candidates kept while searching (None: the engine's default)."
    )
    full_scan_threshold_kb: int = Field(
        10_000, ge=0, description="Below this many KB of matching vectors a filtered search scans instead of HNSW."
    )
    quantization: bool = Field(True, description="INT8 scalar quantization of the vectors.")
    quantile: float = Field(0.99, gt=0.5, le=1.0, description="Quantile of the values the INT8 range covers.")
    quantized_in_ram: bool = Field(True, description="Keep the quantized vectors in RAM.")
    rescore: bool = Field(True, description="Re-score quantized candidates with the original vectors.")
    oversampling: float = Field(2.0, ge=1.0, le=16.0, description="Quantized candidates fetched per result.")
    vectors_on_disk: bool = Field(False, description="Leave the original vectors on disk (memory-mapped).")
    hnsw_on_disk: bool = Field(False, description="Leave the HNSW graph on disk (memory-mapped).")
    payload_on_disk: bool = Field(True, description="Leave payloads on disk (memory-mapped).")


# -- checks on what callers pass --------------------------------------------------------------------------------


def checked_vector(name: str, vector: Sequence[float], dimension: int) -> list[float]:
    """``vector`` (a sequence of numbers or a numpy array) as a list of finite floats of length ``dimension``."""
    return checked_array(name, vector, dimension).tolist()


def checked_array(name: str, vector: Sequence[float], dimension: int | None) -> np.ndarray:
    """``vector`` as a one-dimensional float64 array of finite values (of length ``dimension`` unless ``None``)."""
    try:
        array = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"a vector for collection {name!r} is a sequence of numbers") from None
    if array.ndim != 1:
        raise ValueError(f"a vector for collection {name!r} is one-dimensional, got shape {array.shape}")
    if dimension is not None and array.shape[0] != dimension:
        raise DimensionMismatch(name, dimension, array.shape[0])
    if not np.isfinite(array).all():
        raise ValueError(f"a vector for collection {name!r} holds a NaN or infinite value")
    return array


@dataclass(frozen=True)
class CheckedPoint:
    id: str
    vector: list[float]
    payload: dict[str, Any]


def checked_points(name: str, points: Sequence[VectorPoint], dimension: int) -> list[CheckedPoint]:
    """Validate a batch before any of it is written (a bad point fails the whole batch, not half of it)."""
    checked: dict[str, CheckedPoint] = {}
    for point in points:
        point_id = canonical_point_id(point.id)
        payload = checked_payload(point_id, point.payload)
        # The last occurrence of an id wins, as if the points had been upserted one by one.
        checked[point_id] = CheckedPoint(point_id, checked_vector(name, point.vector, dimension), payload)
    return list(checked.values())


def encode_name(name: str, *, max_length: int = 255) -> str:
    """``name`` as a collection name any Qdrant server accepts, reversibly (see :func:`decode_name`).

    Names of letters, digits, ``_``, ``-`` and ``.`` (not starting with ``.``) are kept as they are; any other
    name becomes ``x--`` followed by the hex of its UTF-8 bytes (and names starting with ``x--`` are always
    encoded, so that decoding is unambiguous).
    """
    if not isinstance(name, str) or not name:
        raise ValueError("a collection name is a non-empty string")
    if _is_plain(name):
        encoded = name
    else:
        encoded = _ENCODED_PREFIX + name.encode("utf-8").hex()
    if len(encoded) > max_length:
        raise ValueError(f"collection name {name!r} is too long (at most {max_length} characters once encoded)")
    return encoded


def decode_name(encoded: str) -> str:
    """The inverse of :func:`encode_name`."""
    if encoded.startswith(_ENCODED_PREFIX):
        return bytes.fromhex(encoded[len(_ENCODED_PREFIX) :]).decode("utf-8")
    return encoded


_ENCODED_PREFIX = "x--"
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def _is_plain(name: str) -> bool:
    return not name.startswith((".", _ENCODED_PREFIX)) and all(c in _PLAIN for c in name)
