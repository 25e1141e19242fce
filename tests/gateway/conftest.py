from __future__ import annotations

import pytest

from tests.gateway.sample_plugin import SamplePlugin


@pytest.fixture
def sample() -> SamplePlugin:
    """A fresh sample plugin (and so a fresh trace) per test."""
    return SamplePlugin()
