"""The context pack with hosted connectors (GitHub, Jira, Slack fakes on loopback) beside a file connector: sync
through index jobs, search filters, the work-context signal, related info, failures per connector, an interrupted
sync resumed without duplicates, deletions found by a full sync, and a token that reaches no log and no file."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from tests.fakes.github import FakeGitHub
from tests.fakes.hosted import Scripted
from tests.fakes.jira import FakeJira, adf
from tests.fakes.slack import FakeSlack
from tests.plugins.connectors.support import TOKEN
from tests.plugins.context.support import add_file_connector, call, context_config, index_and_wait

pytestmark = [pytest.mark.anyio]

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
NOW = time.time()


@pytest.fixture
def token_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HOSTED_TEST_TOKEN", TOKEN)
    return "HOSTED_TEST_TOKEN"


def seed_github(fake: FakeGitHub) -> None:
    fake.add_issue(1, "Card charge fails for expired cards", "Charging raises for SHOP-1 users.", updated=T0)
    fake.add_pull(
        2,
        "Round invoice totals to the cent",
        "Fixes #1.",
        updated=T0 + timedelta(days=1),
        head="feat/SHOP-2-rounding",
        files=["shop/money.py", "shop/billing.py"],
    )
    fake.add_issue(3, "Checkout page is slow", "Rendering takes seconds.", updated=T0 + timedelta(days=2))
    fake.add_issue(4, "Dark mode", "Please add dark mode.", updated=T0 + timedelta(days=3))
    fake.add_issue(5, "Typo in README", "Paymnets.", updated=T0 + timedelta(days=4))


def seed_jira(fake: FakeJira) -> None:
    fake.add_issue("SHOP-1", "Billing and checkout", adf("Charge cards at checkout."), updated=T0)
    fake.add_issue(
        "SHOP-2", "Invoice totals are off by a cent", adf("Totals drift by one cent."), updated=T0 + timedelta(days=5)
    )
    fake.comment("SHOP-2", adf("round_cents truncates instead of rounding"), at=T0 + timedelta(days=5, hours=1))


def seed_slack(fake: FakeSlack) -> str:
    fake.add_channel("C0DEV00001", "dev")
    parent = f"{NOW - 3600:.6f}"
    fake.post("C0DEV00001", parent, "Anyone seen SHOP-2? Invoices are off by a cent again")
    fake.reply("C0DEV00001", parent, f"{NOW - 3000:.6f}", "Yes, the rounding in money.py")
    fake.post("C0DEV00001", f"{NOW - 1800:.6f}", "Lunch at noon?")
    return parent


async def add(client: Any, kind: str, name: str, **options: Any) -> str:
    added = await call(
        client,
        "context.connector_management",
        {"action": "add", "connector_config": {"type": kind, "name": name, **options}},
    )
    return added["connectors"][0]["id"]


async def add_hosted(client: Any, github: FakeGitHub, jira: FakeJira, slack: FakeSlack, env: str) -> dict[str, str]:
    token = {"env": env}
    return {
        "github": await add(
            client, "github", "shop-gh", repository="octo/shop", base_url=github.base_url, token=token, per_page=2
        ),
        "jira": await add(
            client, "jira", "shop-jira", base_url=jira.base_url, email=jira.email, token=token, projects=["SHOP"]
        ),
        "slack": await add(
            client, "slack", "dev-chat", base_url=slack.base_url, token=token, channels=["dev"], workspace="acme"
        ),
    }


def search_args(query: str, **extra: Any) -> dict[str, Any]:
    return {"query": query, "top_k": 20, **extra}


async def test_hosted_sources_are_searchable_filtered_and_linked_to_the_code(
    repo: Path,
    data_dir: Path,
    fake_github: FakeGitHub,
    fake_jira: FakeJira,
    fake_slack: FakeSlack,
    token_env: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    seed_github(fake_github)
    seed_jira(fake_jira)
    parent = seed_slack(fake_slack)
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        ids = await add_hosted(client, fake_github, fake_jira, fake_slack, token_env)
        status = await index_and_wait(client)
        assert status["status"] == "completed" and status["current_job"]["error"] is None
        listed = {
            c["id"]: c for c in (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        }
        assert {listed[i]["status"] for i in ids.values()} == {"active"}
        assert listed[ids["github"]]["stats"]["documents_indexed"] == 5
        assert listed[ids["jira"]]["stats"]["documents_indexed"] == 2
        assert listed[ids["slack"]]["stats"]["documents_indexed"] == 2
        assert listed[ids["github"]]["config"]["token"] == "***"

        jira_hits = await call(
            client, "context.search", search_args("invoice totals off by a cent", filters={"source_types": ["jira"]})
        )
        assert jira_hits["results"] and {r["metadata"]["source_type"] for r in jira_hits["results"]} == {"jira"}
        top = jira_hits["results"][0]
        assert top["source"] == "jira://SHOP-2" and top["metadata"]["url"] == f"{fake_jira.base_url}/browse/SHOP-2"
        assert top["metadata"]["title"] == "SHOP-2: Invoice totals are off by a cent"
        slack_hits = await call(
            client, "context.search", search_args("invoices off by a cent", filters={"source_types": ["slack"]})
        )
        assert slack_hits["results"][0]["source"] == f"slack://C0DEV00001/{parent}"
        in_march = await call(
            client,
            "context.search",
            search_args(
                "invoice cent checkout card",
                filters={"date_range": {"from": "2025-03-01T00:00:00Z", "to": "2025-03-02T23:59:59Z"}},
            ),
        )
        assert {r["source"] for r in in_march["results"]} == {
            "github://octo/shop/issues/1",
            "github://octo/shop/pull/2",
            "jira://SHOP-1",
        }

        jira_only = {"source_types": ["jira"]}
        plain = await call(client, "context.search", search_args("checkout totals", filters=jira_only))
        scores = {r["source"]: r["score"] for r in plain["results"]}
        assert set(scores) == {"jira://SHOP-1", "jira://SHOP-2"}
        for work in ({"open_ticket_ids": ["SHOP-2"]}, {"git_branch": "feat/shop-2-fix-rounding"}):
            favoured = await call(
                client, "context.search", search_args("checkout totals", filters=jira_only, work_context=work)
            )
            boosted = {r["source"]: r["score"] for r in favoured["results"]}
            assert boosted["jira://SHOP-2"] == pytest.approx(1.5 * scores["jira://SHOP-2"], rel=1e-3), work
            assert boosted["jira://SHOP-1"] == pytest.approx(scores["jira://SHOP-1"], rel=1e-3), work
            assert favoured["results"][0]["source"] == "jira://SHOP-2"
        code = await call(client, "context.search", search_args("round cents", filters={"source_types": ["file"]}))
        linked = await call(
            client,
            "context.search",
            search_args(
                "round cents", filters={"source_types": ["file"]}, work_context={"open_ticket_ids": ["SHOP-2"]}
            ),
        )
        before = {r["metadata"]["path"]: r["score"] for r in code["results"]}
        after = {r["metadata"]["path"]: r["score"] for r in linked["results"]}
        assert after["shop/money.py"] == pytest.approx(1.3 * before["shop/money.py"], rel=1e-3)  # changed by its PR

        related = await call(client, "context.get_related_info", {"file_path": "shop/money.py"})
        assert [p["id"] for p in related["pull_requests"]] == ["octo/shop#2"]
        assert related["pull_requests"][0]["files"] == ["shop/money.py", "shop/billing.py"]
        assert {t["id"] for t in related["tickets"]} >= {"SHOP-1", "SHOP-2", "octo/shop#1"}
        assert [d["source"] for d in related["discussions"]] == [f"slack://C0DEV00001/{parent}"]
        assert "1 pull request(s)" in related["summary"]
        ticket = await call(client, "context.get_related_info", {"ticket_id": "shop-2"})
        assert ticket["ticket_id"] == "SHOP-2" and ticket["tickets"][0]["id"] == "SHOP-2"
        assert [p["id"] for p in ticket["pull_requests"]] == ["octo/shop#2"]
        assert len(ticket["discussions"]) == 1 and "shop/money.py" in ticket["co_changed"]
        issue = await call(client, "context.get_related_info", {"ticket_id": "#1"})
        assert issue["tickets"][0]["id"] == "octo/shop#1" and [p["id"] for p in issue["pull_requests"]] == [
            "octo/shop#2"
        ]

        resources = await client.list_resources()
        assert all(r.uri.startswith("engine://files/") and "issues" not in r.uri for r in resources.resources)

        service = client.runtime.packs["context"].service
        rows = await service.store.fetch_all("SELECT config, sync_state FROM ctx_connectors")
        assert all(TOKEN not in str(row) for row in rows)
        assert {str(r["config"].get("token")) for r in rows if r["config"].get("token")} == {str({"env": token_env})}
    captured = capsys.readouterr()
    assert TOKEN not in caplog.text and TOKEN not in captured.out and TOKEN not in captured.err
    for path in data_dir.rglob("*"):  # the SQLite files (WAL included) and the vector store
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


async def test_a_revoked_token_is_the_connectors_status_and_the_job_goes_on(
    data_dir: Path, fake_github: FakeGitHub, fake_jira: FakeJira, fake_slack: FakeSlack, token_env: str
) -> None:
    seed_github(fake_github)
    seed_jira(fake_jira)
    seed_slack(fake_slack)
    fake_github.revoke()
    async with running_gateway(context_config(), data_dir) as client:
        ids = await add_hosted(client, fake_github, fake_jira, fake_slack, token_env)
        status = await index_and_wait(client)
        assert status["status"] == "completed"
        assert ids["github"] in status["current_job"]["error"] and "1 of 3" in status["current_job"]["error"]
        listed = {
            c["id"]: c for c in (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        }
        github = listed[ids["github"]]
        assert (
            github["status"] == "error"
            and "GitHub rejected the token (401: Bad credentials)" in github["stats"]["last_error"]
        )
        assert token_env in github["stats"]["last_error"]
        assert listed[ids["jira"]]["status"] == "active" and listed[ids["jira"]]["stats"]["documents_indexed"] == 2
        assert listed[ids["slack"]]["status"] == "active"
        fake_github.tokens.add(TOKEN)  # a new token: the next run recovers
        await index_and_wait(client, [ids["github"]])
        listed = {
            c["id"]: c for c in (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        }
        assert listed[ids["github"]]["status"] == "active" and listed[ids["github"]]["stats"]["last_error"] is None


async def test_an_interrupted_sync_resumes_without_duplicates_and_asks_only_for_changes(
    data_dir: Path, fake_github: FakeGitHub, token_env: str
) -> None:
    seed_github(fake_github)
    async with running_gateway(context_config(), data_dir) as client:
        connector_id = await add(
            client,
            "github",
            "shop",
            repository="octo/shop",
            base_url=fake_github.base_url,
            token={"env": token_env},
            per_page=2,
            max_retries=0,
        )
        fake_github.comment(3, "Seen on mobile too", at=T0 + timedelta(days=2))  # read with issue 3, on page 2
        fake_github.script(Scripted(502, {"message": "Bad Gateway"}, match="/issues/3/comments"))
        status = await index_and_wait(client)
        assert status["status"] == "completed" and connector_id in status["current_job"]["error"]
        service = client.runtime.packs["context"].service
        stored = await service.store.fetch_all("SELECT path FROM ctx_files")
        assert sorted(r["path"] for r in stored) == ["octo/shop/issues/1", "octo/shop/pull/2"]  # page 1 only
        fake_github.requests.clear()
        await index_and_wait(client)
        listing = [r for r in fake_github.requests if r.path.endswith("/issues")]
        assert listing[0].query.get("since")  # resumed after page 1, not asked from the start
        rows = await service.store.fetch_all("SELECT id, path FROM ctx_files")
        paths = [r["path"] for r in rows]
        assert len(paths) == len(set(paths)) == 5
        before = {r["path"]: r["id"] for r in rows}

        fake_github.requests.clear()
        fake_github.now = lambda: datetime.now(UTC) + timedelta(hours=1)
        fake_github.comment(3, "Profiled: the template loop", at=datetime.now(UTC) + timedelta(minutes=30))
        await index_and_wait(client)
        listing = [r for r in fake_github.requests if r.path.endswith("/issues")]
        assert len(listing) == 1 and listing[0].query["since"]  # only what changed since the last sync
        after = {r["path"]: r["id"] for r in await service.store.fetch_all("SELECT id, path FROM ctx_files")}
        assert after["octo/shop/issues/3"] != before["octo/shop/issues/3"]
        assert all(after[p] == before[p] for p in after if p != "octo/shop/issues/3")  # the others untouched

        del fake_github.issues[4]  # deleted at the source: a full sync (force_reindex) finds it gone
        await index_and_wait(client, action="force_reindex")
        final = {r["path"] for r in await service.store.fetch_all("SELECT path FROM ctx_files")}
        assert "octo/shop/issues/4" not in final and len(final) == 4
        hits = await call(client, "context.search", search_args("dark mode"))
        assert all(r["source"] != "github://octo/shop/issues/4" for r in hits["results"])


async def test_a_literal_token_is_refused_naming_the_field(data_dir: Path, fake_github: FakeGitHub) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        result = await client.call_tool(
            "context.connector_management",
            {
                "action": "add",
                "connector_config": {
                    "type": "github",
                    "name": "x",
                    "repository": "octo/shop",
                    "base_url": fake_github.base_url,
                    "token": "ghp_literal_token_value",
                },
            },
        )
        assert result.is_error
        text = result.content[0].text
        assert "connector_config.token" in text and 'env = \\"NAME\\"' in text
        assert "ghp_literal_token_value" not in text
        service = client.runtime.packs["context"].service
        assert await service.store.fetch_all("SELECT id FROM ctx_connectors") == []


@pytest.mark.postgres
async def test_hosted_sync_and_links_on_postgres(
    repo: Path, data_dir: Path, postgres_db: str, fake_github: FakeGitHub, fake_jira: FakeJira, token_env: str
) -> None:
    seed_github(fake_github)
    seed_jira(fake_jira)
    config = context_config(store="postgres")
    config["plugins"]["store"] = {"postgres": {"dsn": postgres_db}}
    async with running_gateway(config, data_dir) as client:
        await add_file_connector(client, repo)
        token = {"env": token_env}
        await add(
            client, "github", "gh", repository="octo/shop", base_url=fake_github.base_url, token=token, per_page=2
        )
        await add(
            client, "jira", "j", base_url=fake_jira.base_url, email=fake_jira.email, token=token, projects=["SHOP"]
        )
        assert (await index_and_wait(client))["current_job"]["error"] is None
        assert (await index_and_wait(client))["status"] == "completed"  # the incremental one, from the stored cursors
    async with running_gateway(config, data_dir) as client:  # a restart: documents and links come from PostgreSQL
        ticket = await call(client, "context.get_related_info", {"ticket_id": "SHOP-2"})
        assert ticket["tickets"][0]["id"] == "SHOP-2" and [p["id"] for p in ticket["pull_requests"]] == ["octo/shop#2"]
        hits = await call(client, "context.search", search_args("invoice cent", filters={"source_types": ["jira"]}))
        assert hits["results"][0]["source"] == "jira://SHOP-2"


async def test_hosted_documents_are_embedded_and_missing_vectors_are_filled(
    embed_data_dir: Path, fake_jira: FakeJira, token_env: str
) -> None:
    seed_jira(fake_jira)
    async with running_gateway(context_config(embed=True), embed_data_dir) as client:
        token = {"env": token_env}
        await add(
            client, "jira", "j", base_url=fake_jira.base_url, email=fake_jira.email, token=token, projects=["SHOP"]
        )
        await index_and_wait(client)
        service = client.runtime.packs["context"].service
        rows = await service.store.fetch_all("SELECT path, embedded FROM ctx_files")
        assert len(rows) == 2 and all(r["embedded"] for r in rows)
        hits = await call(client, "context.search", search_args("a penny missing from the bill"))
        assert hits["query_metadata"]["embedder"] and hits["results"]
        await service.store.execute("UPDATE ctx_files SET embedded = '' WHERE path = 'SHOP-2'")  # an outage's gap
        fake_jira.requests.clear()
        await index_and_wait(client)
        repaired = await service.store.fetch_one("SELECT embedded FROM ctx_files WHERE path = 'SHOP-2'")
        assert repaired is not None and repaired["embedded"] == rows[0]["embedded"]
        searches = [r for r in fake_jira.requests if r.path.endswith("/search/jql")]
        assert all("updated >=" in r.json["jql"] for r in searches)  # filled from the store, not asked again
