"""GIM's schema migrations on both stores. Migration 3 carries the identities of API keys made without a tenant
over to their escaped form (``key:<id>`` became ``key%3A<id>``), so such a key's later vote replaces its earlier
one and its earlier submissions stay its own."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.api import RelationalStore
from gateway_plugins.gim.migrations import MIGRATIONS, NAMESPACE
from gateway_plugins.stores.postgres import PostgresStore
from gateway_plugins.stores.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

OLD, NEW = "key:0123456789abcdef", "key%3A0123456789abcdef"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> RelationalStore:
    if request.param == "sqlite":
        opened: RelationalStore = SqliteStore(tmp_path / "gim.sqlite3")
    else:
        opened = PostgresStore(request.getfixturevalue("postgres_db"), min_size=0, max_size=2)
    yield opened
    await opened.close()


def _vote(issue: str, voter: str, success: bool, now: datetime) -> dict:
    return {"issue_id": issue, "voter": voter, "success": success, "created_at": now, "updated_at": now}


async def test_tenantless_key_identities_are_carried_to_their_escaped_form(store: RelationalStore) -> None:
    await store.migrate(NAMESPACE, MIGRATIONS[:2])
    now = datetime.now(UTC)
    insert = "INSERT INTO gim_votes (issue_id, voter, success, created_at, updated_at)"
    async with store.transaction() as tx:
        for row in (
            _vote("i1", OLD, True, now),  # before the upgrade
            _vote("i2", OLD, True, now),  # and, on i2, again after it: the later vote stands
            _vote("i2", NEW, False, now),
            _vote("i1", "acme:key:0123456789abcdef", True, now),  # a tenant's key: unchanged
            _vote("i1", "alice", True, now),
        ):
            await tx.execute(f"{insert} VALUES (:issue_id, :voter, :success, :created_at, :updated_at)", row)
        await tx.execute(
            "INSERT INTO gim_usage_events (id, event_type, issue_id, session_id, principal, ts) "
            "VALUES ('e1', 'issue_submitted', 'i1', :session, :principal, :ts)",
            {"session": f"principal:{OLD}", "principal": OLD, "ts": now},
        )
    await store.migrate(NAMESPACE, MIGRATIONS)
    votes = await store.fetch_all("SELECT issue_id, voter, success FROM gim_votes ORDER BY issue_id, voter")
    assert [(v["issue_id"], v["voter"], bool(v["success"])) for v in votes] == [
        ("i1", "acme:key:0123456789abcdef", True),
        ("i1", "alice", True),
        ("i1", NEW, True),
        ("i2", NEW, False),
    ]
    event = await store.fetch_one("SELECT session_id, principal FROM gim_usage_events WHERE id = 'e1'")
    assert event == {"session_id": f"principal:{NEW}", "principal": NEW}
