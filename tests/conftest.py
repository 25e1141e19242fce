"""Root fixtures. Fakes for services that cannot run here live in tests/fakes and are loaded as plugins."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
