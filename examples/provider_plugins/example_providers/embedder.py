"""An embedder: feature hashing of words and character trigrams (no model, no network)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from gateway.api import EmbedTask

WORDS = re.compile(r"\w+")


class HashingEmbedder:
    """Symmetric (``task`` is ignored), deterministic, L2-normalised vectors of ``dimension`` floats."""

    def __init__(self, dimension: int = 256, max_input_chars: int = 2000) -> None:
        self._dimension = dimension
        self._max_input_chars = max_input_chars

    @property
    def id(self) -> str:
        return f"hashing/words-trigrams/{self._dimension}"  # provider/model/dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_batch(self) -> int:
        return 64

    @property
    def max_input_chars(self) -> int:
        return self._max_input_chars

    async def embed(self, texts: Sequence[str], *, task: EmbedTask) -> list[list[float]]:
        return [self._vector(text[: self._max_input_chars]) for text in texts]  # longer input is cut, not refused

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        lowered = text.lower()
        features = WORDS.findall(lowered) + [lowered[i : i + 3] for i in range(len(lowered) - 2)]
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self._dimension
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(value * value for value in vector))
        if norm == 0.0:  # nothing to hash, or features that cancelled out: still a unit vector
            return [1.0] + [0.0] * (self._dimension - 1)
        return [value / norm for value in vector]

    async def aclose(self) -> None:
        pass
