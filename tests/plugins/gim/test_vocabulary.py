"""The explanation vocabulary in a running pack: every item's terms are stored with it, and a restart rebuilds the
same document frequencies, also from items written before the ``terms`` column existed (migration 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.testing import running_gateway
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, gim_config, submission

pytestmark = pytest.mark.anyio

DISTUTILS_ERROR = "ModuleNotFoundError: No module named 'distutils'"
DISTUTILS_CAUSE = "Python 3.12 removed distutils from the standard library; setuptools provides a shim."


async def test_a_restart_rebuilds_the_vocabulary_also_from_items_without_stored_terms(data_dir: Path) -> None:
    config = gim_config()
    async with running_gateway(config, data_dir) as client:
        await call(client, "gim_submit_issue", submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS))
        legacy = await call(client, "gim_submit_issue", submission(DISTUTILS_ERROR, DISTUTILS_CAUSE))
        core = client.runtime.packs["gim"].core
        rows = await core.store.fetch_all("SELECT id, terms FROM gim_items")
        assert len(rows) == 2 and all("fix" in row["terms"].split() for row in rows)
        assert "setuptool" in next(r["terms"] for r in rows if r["id"] == legacy["issue_id"]).split()
        before = [len(core.vocabulary), core.vocabulary.idf("setuptool"), core.vocabulary.idf("fix")]
        assert before[1] > before[2]  # a term of one explanation outweighs one of every explanation
        # as an item written before migration 2 left it
        await core.store.execute("UPDATE gim_items SET terms = NULL WHERE id = :id", {"id": legacy["issue_id"]})

    async with running_gateway(config, data_dir) as client:
        core = client.runtime.packs["gim"].core
        assert [len(core.vocabulary), core.vocabulary.idf("setuptool"), core.vocabulary.idf("fix")] == before
