"""A database and its vector store are a pair: a gateway whose vector store is not the one the database's vectors
were written to (two gateways sharing one database, each with its own embedded store) is refused at start-up,
saying what to do, instead of splitting the issue memory in two; ``adopt_vector_store`` pairs a replacement."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway.api import ConfigError
from gateway.testing import running_gateway
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, gim_config, submission

pytestmark = pytest.mark.anyio


def _sharing(database: Path, **gim: Any) -> dict[str, Any]:
    """The embedded deployment, its SQLite database at ``database`` (shared), its vectors in its own data dir."""
    return gim_config(gim=gim, plugins={"store": {"sqlite": {"path": str(database)}}})


async def test_a_second_gateway_with_its_own_vector_store_is_refused_until_it_adopts_it(tmp_path: Path) -> None:
    database = tmp_path / "shared.sqlite3"
    first, second = tmp_path / "first", tmp_path / "second"
    async with running_gateway(_sharing(database), first) as client:
        stored = await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
    async with running_gateway(_sharing(database), first) as client:  # its own pair: starts as before
        found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert found["issues"][0]["issue_id"] == stored["master_issue_id"]

    with pytest.raises(ConfigError, match="not the one this database's vectors were written to") as refused:
        async with running_gateway(_sharing(database), second):
            pass
    assert "adopt_vector_store" in str(refused.value) and "share its vector store" in str(refused.value)

    async with running_gateway(_sharing(database, adopt_vector_store=True), second) as client:
        found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert found["issues"][0]["issue_id"] == stored["master_issue_id"]  # re-embedded into this store
    async with running_gateway(_sharing(database), second):  # paired now: no flag needed
        pass
    with pytest.raises(ConfigError, match="not the one"):  # the first's store is no longer the pair
        async with running_gateway(_sharing(database), first):
            pass


async def test_a_vector_store_of_another_database_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with running_gateway(_sharing(tmp_path / "one.sqlite3"), data_dir):
        pass
    with pytest.raises(ConfigError, match="another database"):
        async with running_gateway(_sharing(tmp_path / "two.sqlite3"), data_dir):
            pass


def _state(database: Path) -> dict[str, int]:
    with closing(sqlite3.connect(database)) as db:
        return dict(db.execute("SELECT name, value FROM gim_state WHERE name LIKE 'vector_store_pairing%'").fetchall())


async def test_a_first_pairing_stopped_half_way_is_finished_by_the_next_start(tmp_path: Path) -> None:
    database, data_dir = tmp_path / "shared.sqlite3", tmp_path / "data"
    async with running_gateway(_sharing(database), data_dir):
        pass
    (token,) = _state(database).values()
    with closing(sqlite3.connect(database)) as db, db:  # as a start stopped after its marker, before confirming
        db.execute("DELETE FROM gim_state WHERE name = 'vector_store_pairing'")
        db.execute("INSERT INTO gim_state (name, value) VALUES ('vector_store_pairing_pending', ?)", (token,))
    async with running_gateway(_sharing(database), data_dir):
        pass
    assert _state(database) == {"vector_store_pairing": token}


async def test_adopting_the_store_that_is_already_the_pair_changes_nothing_and_says_so(tmp_path: Path) -> None:
    database, data_dir = tmp_path / "shared.sqlite3", tmp_path / "data"
    async with running_gateway(_sharing(database), data_dir):
        pass
    before = _state(database)
    with capture_logs() as logs:
        async with running_gateway(_sharing(database, adopt_vector_store=True), data_dir):
            pass
    assert _state(database) == before
    assert [e["event"] for e in logs if e["event"].startswith("gim.adopt")] == ["gim.adopt_vector_store_not_needed"]
