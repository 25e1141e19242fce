"""Fixtures of the judge tests: the real ``patterns`` sanitizer layer (the fake Gemini comes from the root)."""

from __future__ import annotations

import pytest

from gateway.api import Sanitizer
from gateway_plugins.sanitizers.patterns import PatternSanitizer


@pytest.fixture
def patterns() -> Sanitizer:
    return PatternSanitizer()
