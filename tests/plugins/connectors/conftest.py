"""Fixtures of the connector tests (the fakes themselves are pytest plugins of the root conftest)."""

from __future__ import annotations

from tests.plugins.connectors.support import sleeps, token_env

__all__ = ["sleeps", "token_env"]
