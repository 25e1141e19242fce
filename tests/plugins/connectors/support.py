"""Helpers of the connector tests: a sleep that records instead of waiting, and a token in the environment."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

TOKEN = "good-token"
"""The token the fakes accept (and that must appear in no cursor, log line or stored row)."""


@dataclass
class Sleeps:
    """An injectable sleep: records each wait and returns at once (tests never wait for a backoff)."""

    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def token_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """The variable holding the fakes' token: connectors are configured with ``{"env": token_env}``."""
    monkeypatch.setenv("CONNECTOR_TEST_TOKEN", TOKEN)
    return "CONNECTOR_TEST_TOKEN"
