"""The same-move path of the duplicate decision (:mod:`gateway_plugins.gim.dedup`), through the tools (real
gateway, MCP SDK client, local embedder, Qdrant Edge, SQLite): a reworded report whose fix makes the master's
upgrade with another package manager merges although its explanation reads less alike than rule 2 asks; a
look-alike that moves the same package the other way, or to versions the master's fix excludes, stays apart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from gateway_plugins.gim.dedup import decide_hybrid, gather_evidence
from tests.plugins.gim.support import call, gim_config, submission

pytestmark = pytest.mark.anyio

ENVIRONMENT = {"language": "Python", "framework": "black", "os": "Linux"}
ERROR = (
    "ImportError: cannot import name '_unicodefun' from 'click' "
    "(/home/dev/.venv/lib/python3.9/site-packages/click/__init__.py)"
)
EDITOR_LOG = (
    "2022-03-29 09:14:51.032 [error] Formatting with black failed.\nError: Traceback (most recent call last):\n"
    '  File "c:\\Users\\amir\\proj\\.venv\\lib\\site-packages\\black\\__init__.py", line 1409, '
    "in patch_click\n"
    "    from click import _unicodefun\nImportError: cannot import name '_unicodefun' from 'click'"
)
CAUSE = (
    "click 8.1.0 removed the private module `click._unicodefun`, which black releases before 22.3.0 import at "
    "start-up; the old black crashes with the new click."
)
REWORDED = (
    "The environment got click 8.1 while black is pinned below 22.3.0, which still reaches into click's removed "
    "_unicodefun."
)


def action(kind: str, command: str, explanation: str) -> list[dict[str, Any]]:
    return [{"order": 1, "type": kind, "command": command, "explanation": explanation}]


async def submit_master(client: Any) -> dict[str, Any]:
    return await call(
        client,
        "gim_submit_issue",
        submission(
            ERROR,
            CAUSE,
            actions=action("upgrade", 'pip install -U "black>=22.3.0"', "black 22.3.0 no longer imports it"),
            environment=ENVIRONMENT,
        ),
    )


async def submit_reworded(client: Any, command: str, kind: str = "upgrade") -> dict[str, Any]:
    return await call(
        client,
        "gim_submit_issue",
        submission(
            EDITOR_LOG,
            REWORDED,
            actions=action(kind, command, "bump the dev dependency to a black that works with click 8.1"),
            environment=ENVIRONMENT,
        ),
    )


@pytest.fixture
async def moving(data_dir: Path) -> AsyncIterator[Any]:
    """A GIM gateway with the same-move path on (it is off by default: see ``plugins/gim/config.py``)."""
    async with running_gateway(gim_config(gim={"dedup_same_move_path": True}), data_dir) as client:
        yield client


async def test_the_same_upgrade_with_another_manager_joins_the_master(moving: Any) -> None:
    """``holdout4``'s miss of the fifth pass: poetry's ``black@^22.3`` is pip's ``black>=22.3.0``."""
    master = await submit_master(moving)
    reworded = await submit_reworded(moving, 'poetry add --group dev "black@^22.3"')
    assert reworded["merged"] is True
    assert reworded["master_issue_id"] == master["master_issue_id"]


async def test_without_the_same_move_path_the_reworded_report_stays_apart(data_dir: Path) -> None:
    """What the path adds (the default): its explanation alone reads less alike than rule 2 asks."""
    config = gim_config()
    async with running_gateway(config, data_dir) as client:
        await submit_master(client)
        reworded = await submit_reworded(client, 'poetry add --group dev "black@^22.3"')
    assert reworded["merged"] is False


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ('pip install "black<22"', "downgrade"),  # the opposite direction
        ('poetry add --group dev "black@~22.1"', "upgrade"),  # the same direction, versions the master excludes
    ],
)
async def test_an_opposite_or_disjoint_move_of_the_same_package_stays_apart(
    moving: Any, command: str, kind: str
) -> None:
    master = await submit_master(moving)
    look_alike = await submit_reworded(moving, command, kind)
    assert look_alike["merged"] is False
    assert look_alike["master_issue_id"] != master["master_issue_id"]


def evidence(error: float, resolution: float, *, same_move: bool, conflicts: tuple = ()) -> dict:
    found = gather_evidence(
        error_hits=[("m1", error, "m1")], lexical_hits=[], resolution_hits=[("m1", resolution)], is_active=bool
    )
    found["m1"].same_move = same_move
    found["m1"].conflicts = conflicts
    return found


def decide(found: dict, same_move_path: bool = True):
    return decide_hybrid(
        found, exception_type=None, error_threshold=0.35, resolution_threshold=0.74, same_move_path=same_move_path
    )


def test_the_same_move_stands_in_for_rule_2_only() -> None:
    assert decide(evidence(0.88, 0.67, same_move=True)) is not None
    assert decide(evidence(0.88, 0.67, same_move=True), same_move_path=False) is None
    assert decide(evidence(0.88, 0.67, same_move=False)) is None
    assert decide(evidence(0.30, 0.95, same_move=True)) is None  # rule 1 still holds: not the same failure
    assert decide(evidence(0.88, 0.67, same_move=True, conflicts=("direction",))) is None  # every veto applies
