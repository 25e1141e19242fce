"""A long thought is scanned off the event loop: a small thought is answered while it is held in its scan.

The order is the check (see tests/holding.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from gateway.api import PROCESS_CHARS
from gateway.testing import running_gateway
from gateway_plugins.thinking import thought_code
from gateway_plugins.thinking.config import ThinkingConfig
from gateway_plugins.thinking.pack import ThinkingPack
from tests.adversarial import CODE_ADVERSARIAL
from tests.holding import PATIENCE, Hold
from tests.plugins.thinking.conftest import GitRepo, call, gateway_config, thought

pytestmark = pytest.mark.anyio

MAX_CHARS = ThinkingConfig().max_thought_chars


@pytest.mark.parametrize(
    ("where", "size"),
    [
        ("plan", MAX_CHARS),
        ("scan", PROCESS_CHARS - 1000),  # longer thoughts are scanned in a worker process, which cannot be held here
    ],
)
async def test_a_small_thought_is_answered_while_a_long_one_is_scanned(
    where: str, size: int, repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.write("app.py", "def add(a, b):\n    return a + b\n")
    repo.commit()
    hold = Hold()
    owner, name = (ThinkingPack, "_plan") if where == "plan" else (thought_code, "_scan")
    held = hold.around(getattr(owner, name), lambda *args: len(args[-1]), at_least=size // 2)  # the thought
    monkeypatch.setattr(owner, name, held)
    code = CODE_ADVERSARIAL["dotted-call"](size - 20)
    answers: list[dict[str, Any]] = []
    async with running_gateway(gateway_config(repo.root), tmp_path / "data") as client:

        async def big() -> None:
            answers.append(await call(client, thought(f"```python\n{code}\n```")))

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(big)
                assert await anyio.to_thread.run_sync(hold.reached.wait, PATIENCE)
                small = await call(client, thought("I will check the sum next.", number=2))
                assert not answers, "the maximal thought is still held"
                hold.released.set()
        finally:
            hold.released.set()
    assert small["thoughtNumber"] == 2 and answers[0]["gan"]["verdict"] in ("pass", "revise", "reject")
    assert hold.on_loop == [False]
