"""Reading a request body ahead of the application: chunks joined, then replayed, and what came after kept."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.asgi_body import BodyTooLarge, buffered

pytestmark = pytest.mark.anyio


def _receiver(messages: list[dict[str, Any]]) -> Any:
    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    return receive


async def test_chunks_are_joined_and_replayed_once() -> None:
    receive = _receiver(
        [
            {"type": "http.request", "body": b'{"a":', "more_body": True},
            {"type": "http.request", "body": b" 1}", "more_body": False},
            {"type": "http.disconnect"},
        ]
    )
    body, replay = await buffered(receive)
    assert body == b'{"a": 1}'
    assert await replay() == {"type": "http.request", "body": b'{"a": 1}', "more_body": False}
    assert await replay() == {"type": "http.disconnect"}  # read from the connection only now


async def test_a_disconnect_during_the_body_is_kept_for_its_turn() -> None:
    receive = _receiver([{"type": "http.request", "body": b"par", "more_body": True}, {"type": "http.disconnect"}])
    body, replay = await buffered(receive)
    assert body == b"par"
    assert (await replay())["type"] == "http.request"
    assert await replay() == {"type": "http.disconnect"}


async def test_reading_stops_past_the_limit() -> None:
    receive = _receiver(
        [
            {"type": "http.request", "body": b"x" * 6, "more_body": True},
            {"type": "http.request", "body": b"x" * 6, "more_body": True},
            {"type": "http.request", "body": b"never read", "more_body": False},
        ]
    )
    with pytest.raises(BodyTooLarge):
        await buffered(receive, limit=10)
    body, _ = await buffered(_receiver([{"type": "http.request", "body": b"x" * 10}]), limit=10)
    assert body == b"x" * 10  # exactly the limit is allowed
