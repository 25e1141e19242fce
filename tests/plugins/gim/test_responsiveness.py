"""A worst-case request does its heavy work off the event loop: other requests are answered meanwhile.

Each test holds a request at the maximum size inside its CPU-bound pass (normalising the query, deriving a
submission's texts) until a small request has been answered; the order is the check (see tests/holding.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from gateway.testing import http_gateway
from gateway_plugins.gim import intake, search
from tests.adversarial import ADVERSARIAL
from tests.holding import PATIENCE, Hold
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, gim_config, submission

BIG = 200_000
"""The schema's maximum for a GIM text field."""
AT_LEAST = BIG // 2
"""What a held pass must receive (sanitizing may have shortened the text)."""


@pytest.fixture
def hold() -> Iterator[Hold]:
    held = Hold()
    yield held
    held.released.set()


@pytest.mark.anyio
async def test_a_small_search_is_answered_while_a_maximal_one_is_normalised(
    gim: Any, hold: Hold, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        search, "query_texts", hold.around(search.query_texts, lambda text, **_: len(text), at_least=AT_LEAST)
    )
    await call(gim, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    answers: list[dict[str, Any]] = []

    async def big() -> None:
        answers.append(await call(gim, "gim_search_issues", {"error_message": ADVERSARIAL["letters"](BIG)}))

    async with anyio.create_task_group() as group:
        group.start_soon(big)
        assert await anyio.to_thread.run_sync(hold.reached.wait, PATIENCE)
        small = await call(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert not answers, "the maximal search is still held"
        hold.released.set()
    assert small["issues"] and answers[0]["total_results"] >= 0
    assert hold.on_loop == [False]


@pytest.mark.anyio
async def test_a_search_is_answered_while_a_maximal_submission_is_prepared(
    gim: Any, hold: Hold, monkeypatch: pytest.MonkeyPatch
) -> None:
    def size(args: Any, clean: dict[str, str]) -> int:
        return max(map(len, clean.values()))

    monkeypatch.setattr(intake, "_derive", hold.around(intake._derive, size, at_least=AT_LEAST))
    await call(gim, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    text = ADVERSARIAL["traceback"](BIG)
    done: list[dict[str, Any]] = []

    async def big() -> None:
        done.append(await call(gim, "gim_submit_issue", submission(text, text, description=text)))

    async with anyio.create_task_group() as group:
        group.start_soon(big)
        assert await anyio.to_thread.run_sync(hold.reached.wait, PATIENCE)
        small = await call(gim, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert not done
        hold.released.set()
    assert small["issues"] and done[0]["status"] == "created"
    assert hold.on_loop == [False]


def test_health_answers_over_http_while_a_maximal_search_is_normalised(
    data_dir: Path, hold: Hold, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        search, "query_texts", hold.around(search.query_texts, lambda text, **_: len(text), at_least=AT_LEAST)
    )
    with http_gateway(gim_config(), data_dir) as (base, _runtime):
        outcome: list[httpx.Response] = []
        sender = threading.Thread(
            target=lambda: outcome.append(
                httpx.post(
                    f"{base}/api/v1/tools/gim_search_issues",
                    json={"error_message": ADVERSARIAL["blank-run"](BIG)},
                    timeout=PATIENCE,
                )
            )
        )
        sender.start()
        try:
            assert hold.reached.wait(PATIENCE)
            health = httpx.get(f"{base}/health", timeout=PATIENCE)
            small = httpx.post(
                f"{base}/api/v1/tools/gim_search_issues", json={"error_message": NUMPY_ERROR}, timeout=PATIENCE
            )
            assert not outcome
        finally:
            hold.released.set()
            sender.join(PATIENCE)
    assert health.status_code == 200 and small.status_code == 200
    assert outcome[0].status_code == 200 and hold.on_loop == [False]
