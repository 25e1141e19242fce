"""Root fixtures. Fakes for what cannot run here (the Gemini API) and the real PostgreSQL server the tests start
themselves live in tests/fakes and are loaded as plugins for every test."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fakes.gemini", "tests.fakes.postgres"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
