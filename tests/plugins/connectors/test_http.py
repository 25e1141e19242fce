"""The shared HTTP client: ``Retry-After`` in both of its forms, network errors retried, gives up with a clear
error, and never sleeps longer than allowed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from gateway.api import ServiceUnavailable
from gateway_plugins.connectors.http import HostedHttp, HttpPolicy, default_judge, retry_after_seconds
from tests.plugins.connectors.support import Sleeps

pytestmark = [pytest.mark.anyio]


def test_retry_after_in_seconds_or_as_a_date() -> None:
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds("17", now.timestamp()) == 17.0
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert retry_after_seconds(later, now.timestamp()) == pytest.approx(90.0)
    assert retry_after_seconds("soon", now.timestamp()) is None and retry_after_seconds(None, 0) is None


async def test_network_errors_are_retried_then_reported(sleeps: Sleeps) -> None:
    http = HostedHttp(  # port 9 (discard): nothing listens on loopback, the connection is refused at once
        "Example",
        "http://127.0.0.1:9",
        headers={},
        policy=HttpPolicy(max_retries=2, backoff_seconds=0.5),
        judge=default_judge("Example"),
        sleep=sleeps,
    )
    with pytest.raises(ServiceUnavailable, match=r"Example unreachable .*gave up after 2 retries"):
        await http.request("GET", "anything")
    await http.aclose()
    assert len(sleeps.waits) == 2 and all(0.25 <= wait <= 1.0 for wait in sleeps.waits)
