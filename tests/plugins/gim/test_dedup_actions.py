"""What a fix's actions say about a duplicate, through the tools (real gateway, MCP SDK client, local embedder,
Qdrant Edge, SQLite): a reworded fix that installs the master's package through an extra or another package
manager merges; a look-alike whose fix runs the same tool on something else stays apart."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.gim.support import call, submission

pytestmark = pytest.mark.anyio

ENVIRONMENT = {"language": "Python", "framework": "pandas", "os": "Linux"}
PARQUET_ERROR = (
    "ImportError: Unable to find a usable engine; tried using: 'pyarrow', 'fastparquet'.\n"
    "A suitable version of pyarrow or fastparquet is required for parquet support.\n"
    " - Missing optional dependency 'pyarrow'. pyarrow is required for parquet support. Use pip or conda to install "
    "pyarrow."
)


def action(kind: str, command: str, explanation: str) -> list[dict[str, Any]]:
    return [{"order": 1, "type": kind, "command": command, "explanation": explanation}]


async def test_a_reworded_fix_installing_an_extra_joins_the_master(gim: Any) -> None:
    """``pip install 'pandas[parquet]'`` installs pyarrow: the subject check and the action agreement read it so."""
    master = await call(
        gim,
        "gim_submit_issue",
        submission(
            PARQUET_ERROR,
            "Neither pyarrow nor fastparquet is installed, so pandas has no engine for Parquet I/O (pandas does not "
            "depend on either; they are optional dependencies).",
            actions=action("install", "pip install pyarrow", "the Parquet engine pandas uses by default"),
            environment=ENVIRONMENT,
        ),
    )
    reworded = await call(
        gim,
        "gim_submit_issue",
        submission(
            "FAILED tests/test_export.py::test_roundtrip - ImportError: Missing optional dependency 'pyarrow'.  Use "
            "pip or conda to install pyarrow.",
            "The Parquet support of pandas lives in pyarrow or fastparquet, and neither package was ever installed "
            "in this virtualenv.",
            actions=action("install", "pip install 'pandas[parquet]'", "pulls in pyarrow as the Parquet engine"),
            environment=ENVIRONMENT,
        ),
    )
    assert reworded["merged"] is True
    assert reworded["master_issue_id"] == master["master_issue_id"]


async def test_a_look_alike_running_the_same_tool_on_another_package_stays_apart(gim: Any) -> None:
    error = "ImportError: Numba needs NumPy 1.26 or less. Got NumPy 2.0."
    environment = {"language": "Python", "framework": "numba", "os": "Linux"}
    master = await call(
        gim,
        "gim_submit_issue",
        submission(
            error,
            "The installed numba predates NumPy 2 support; numba releases before 0.60 refuse NumPy 2.0.",
            actions=action("upgrade", "pip install -U numba", "numba 0.60 supports NumPy 2.0"),
            environment=environment,
        ),
    )
    look_alike = await call(
        gim,
        "gim_submit_issue",
        submission(
            error,
            "numba is current, but a requirements file pulled NumPy 2.0 into an environment where another "
            "dependency still needs NumPy 1.x; pin NumPy back.",
            actions=action("downgrade", "pip install 'numpy==1.26.4'", "the NumPy the other dependency needs"),
            environment=environment,
        ),
    )
    assert look_alike["merged"] is False
    assert look_alike["master_issue_id"] != master["master_issue_id"]
