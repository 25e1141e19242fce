"""The example rate limiter passes the rate-limiter contract (not the persistent one: it keeps nothing)."""

from __future__ import annotations

import pytest

from example_providers.rate_limiter import DictRateLimiter
from gateway.contracts.rate_limiter_contract import OpenLimiter, RateLimiterContract


class TestDictRateLimiterContract(RateLimiterContract):
    @pytest.fixture
    def open_limiter(self) -> OpenLimiter:
        return DictRateLimiter
