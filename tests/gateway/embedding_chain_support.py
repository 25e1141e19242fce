"""What the embedder chain tests share: the Gemini key and vector size they configure."""

from __future__ import annotations

KEY = "chain-test-key-42"
DIM = 256
