"""The example judge passes the judge contract and flags the leftover in the contract's defective change."""

from __future__ import annotations

import pytest

from example_providers.judge import LeftoversJudge
from gateway.contracts.judge_contract import JudgeContract, defective_request


class TestLeftoversJudgeContract(JudgeContract):
    deterministic = True

    @pytest.fixture
    def judge(self) -> LeftoversJudge:
        return LeftoversJudge()


@pytest.mark.anyio
async def test_flags_the_debugger_statement_on_a_changed_line() -> None:
    result = await LeftoversJudge().review(defective_request())
    assert [(c.path, c.line, c.rule) for c in result.comments] == [("web/total.js", 2, "debug-leftover")]
    assert result.score == 80 and result.dimensions == {"maintainability": 80}
