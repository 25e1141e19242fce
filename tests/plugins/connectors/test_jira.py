"""The ``jira`` connector against the local Jira fake: the contract, JQL sync with ADF rendered, comment pages,
incremental ``updated >=`` in the user's time zone, token pagination, 429 and 5xx, revoked token, config errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from gateway.api import ServiceUnavailable, Unauthenticated
from gateway.contracts.connector_contract import IncrementalConnectorContract, Seeded, full_sync
from gateway_plugins.connectors.jira import JiraConfig, JiraConnector
from tests.fakes.hosted import Scripted
from tests.fakes.jira import FakeJira, adf, rate_limited
from tests.plugins.connectors.support import TOKEN, Sleeps

pytestmark = [pytest.mark.anyio]

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)

RICH = {
    "type": "doc",
    "version": 1,
    "content": [
        {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": "Steps"}]},
        {
            "type": "orderedList",
            "content": [
                {
                    "type": "listItem",
                    "content": [{"type": "paragraph", "content": [{"type": "text", "text": "Log in"}]}],
                },
                {"type": "listItem", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "Wait"}]}]},
            ],
        },
        {
            "type": "paragraph",
            "content": [
                {"type": "text", "text": "See "},
                {
                    "type": "text",
                    "text": "the runbook",
                    "marks": [{"type": "link", "attrs": {"href": "https://x.io/r"}}],
                },
                {"type": "text", "text": ", ask "},
                {"type": "mention", "attrs": {"id": "123", "text": "@Bob Builder"}},
                {"type": "hardBreak"},
                {"type": "text", "text": "refresh_token()", "marks": [{"type": "code"}]},
            ],
        },
        {"type": "codeBlock", "attrs": {"language": "python"}, "content": [{"type": "text", "text": "raise Expired"}]},
    ],
}


def seed(fake: FakeJira) -> None:
    fake.add_issue("PROJ-1", "Login fails after token refresh", RICH, updated=T0, labels=("auth",))
    for number in range(4):
        fake.comment("PROJ-1", adf(f"Seen again ({number})."), at=T0 + timedelta(minutes=number))
    fake.add_issue("PROJ-2", "Invoices rounded wrongly", adf("Rounding of cents."), updated=T0 + timedelta(hours=1))
    fake.add_issue("PROJ-3", "Checkout button", None, updated=T0 + timedelta(hours=2), status="Done")
    fake.add_issue("OTHER-1", "Not ours", adf("x"), updated=T0)


def connector(fake: FakeJira, token_env: str, sleeps: Sleeps | None = None, **options: object) -> JiraConnector:
    config = JiraConfig(
        base_url=fake.base_url,
        email=fake.email,
        token={"env": token_env},
        projects=["PROJ"],
        page_size=2,
        **options,
    )
    return JiraConnector(config, sleep=sleeps or Sleeps())


class TestJiraContract(IncrementalConnectorContract):
    @pytest.fixture
    async def seeded(self, fake_jira: FakeJira, token_env: str) -> AsyncIterator[Seeded]:
        seed(fake_jira)
        instance = connector(fake_jira, token_env)
        texts = {d.path: d.text for page in await full_sync(instance) for d in page.documents}

        async def edit(key: str) -> None:
            fake_jira.comment(key, adf("An edit."), at=datetime.now(UTC) + timedelta(minutes=30))

        yield Seeded(instance, texts, edit=edit, secret=TOKEN)
        await instance.aclose()


async def test_a_sync_reads_issues_with_every_comment_and_adf_as_text(fake_jira: FakeJira, token_env: str) -> None:
    seed(fake_jira)
    jira = connector(fake_jira, token_env)
    documents = {d.path: d for page in await full_sync(jira) for d in page.documents}
    await jira.aclose()
    assert set(documents) == {"PROJ-1", "PROJ-2", "PROJ-3"}
    first = documents["PROJ-1"]
    assert first.keys == ("PROJ-1",) and first.url == f"{fake_jira.base_url}/browse/PROJ-1"
    assert first.state == "To Do" and first.source_type == "jira" and first.author == "Ada Lovelace"
    text = first.text
    assert text.startswith("# PROJ-1: Login fails after token refresh\nBug · To Do · priority High")
    assert "## Steps\n\n1. Log in\n2. Wait" in text
    assert "See the runbook (https://x.io/r), ask @Bob Builder\n`refresh_token()`" in text
    assert "```python\nraise Expired\n```" in text
    assert [s.text.splitlines()[-1] for s in first.sections[1:]] == [f"Seen again ({n})." for n in range(4)]
    pages = [r for r in fake_jira.requests if r.path.endswith("/comment")]
    assert [r.query["startAt"] for r in pages] == ["2"]  # the search brought 2 of 4 comments
    assert documents["PROJ-3"].text.endswith("(no description)") and documents["PROJ-3"].state == "Done"
    sent = [r for r in fake_jira.requests if r.path.endswith("/search/jql")]
    assert sent[0].method == "POST" and sent[0].json["jql"] == 'project in ("PROJ") ORDER BY updated ASC, key ASC'
    assert "nextPageToken" not in sent[0].json and sent[1].json["nextPageToken"]
    assert sent[0].json["maxResults"] == 2 and "comment" in sent[0].json["fields"]


async def test_the_next_sync_asks_updated_since_the_last_in_the_users_time_zone(
    fake_jira: FakeJira, token_env: str
) -> None:
    seed(fake_jira)
    jira = connector(fake_jira, token_env)
    first = await full_sync(jira)
    date = next(a for a in fake_jira.answers if a.request.path.endswith("/search/jql")).headers["date"]
    server = datetime.strptime(date, "%a, %d %b %Y %H:%M:%S GMT").replace(tzinfo=UTC)
    fake_jira.requests.clear()
    await full_sync(jira, first[-1].cursor)
    await jira.aclose()
    jql = next(r for r in fake_jira.requests if r.path.endswith("/search/jql")).json["jql"]
    from zoneinfo import ZoneInfo

    local = (server - timedelta(minutes=5)).astimezone(ZoneInfo("Europe/Berlin"))
    assert jql == f'project in ("PROJ") AND updated >= "{local:%Y-%m-%d %H:%M}" ORDER BY updated ASC, key ASC'


async def test_an_issue_changed_after_the_sync_is_offered_again(fake_jira: FakeJira, token_env: str) -> None:
    seed(fake_jira)
    jira = connector(fake_jira, token_env, jql="labels = auth")
    first = await full_sync(jira)
    assert [d.path for p in first for d in p.documents] == ["PROJ-1"]
    fake_jira.comment("PROJ-1", adf("Fixed in 2.1"), at=datetime.now(UTC) + timedelta(minutes=1))
    second = await full_sync(jira, first[-1].cursor)
    await jira.aclose()
    assert [d.path for p in second for d in p.documents] == ["PROJ-1"]
    assert second[-1].documents[0].text.endswith("Fixed in 2.1")


async def test_an_interrupted_sync_resumes_with_its_page_token(
    fake_jira: FakeJira, token_env: str, sleeps: Sleeps
) -> None:
    seed(fake_jira)
    jira = connector(fake_jira, token_env, sleeps, max_retries=1)
    first = await jira.changes(None)
    fake_jira.script(Scripted(503, match="/search/jql"), Scripted(503, match="/search/jql"))
    with pytest.raises(ServiceUnavailable):
        await jira.changes(first.cursor)
    fake_jira.requests.clear()
    rest = await full_sync(jira, first.cursor)
    await jira.aclose()
    searches = [r for r in fake_jira.requests if r.path.endswith("/search/jql")]
    assert len(searches) == 1 and searches[0].json["nextPageToken"]
    offered = [d.path for d in first.documents] + [d.path for p in rest for d in p.documents]
    assert sorted(offered) == ["PROJ-1", "PROJ-2", "PROJ-3"]


async def test_429_waits_for_retry_after_and_503_backs_off(fake_jira: FakeJira, token_env: str, sleeps: Sleeps) -> None:
    seed(fake_jira)
    fake_jira.script(rate_limited(4, match="/search/jql"), Scripted(503, match="/issue/"))
    jira = connector(fake_jira, token_env, sleeps, backoff_seconds=0.5)
    documents = [d for page in await full_sync(jira) for d in page.documents]
    await jira.aclose()
    assert len(documents) == 3 and sleeps.waits[0] == 4.0 and 0.25 <= sleeps.waits[1] <= 0.5


async def test_an_expired_page_token_restarts_the_search(fake_jira: FakeJira, token_env: str) -> None:
    seed(fake_jira)
    jira = connector(fake_jira, token_env)
    first = await jira.changes(None)
    fake_jira.script(Scripted(400, {"errorMessages": ["The nextPageToken has expired."], "errors": {}}, match="jql"))
    rest = await full_sync(jira, first.cursor)
    await jira.aclose()
    assert {d.path for p in rest for d in p.documents} == {"PROJ-1", "PROJ-2", "PROJ-3"}


async def test_a_revoked_token_is_a_clear_error(fake_jira: FakeJira, token_env: str) -> None:
    seed(fake_jira)
    fake_jira.revoke()
    jira = connector(fake_jira, token_env)
    with pytest.raises(Unauthenticated) as caught:
        await jira.changes(None)
    await jira.aclose()
    assert "Jira rejected the token" in caught.value.message and token_env in caught.value.message
    assert len(fake_jira.requests) == 1


def test_config_errors_name_the_problem(token_env: str) -> None:
    with pytest.raises(ValidationError, match="give projects or jql"):
        JiraConfig(base_url="https://x.atlassian.net", token={"env": token_env})
    with pytest.raises(ValidationError, match="ORDER BY"):
        JiraConfig(base_url="https://x.atlassian.net", token={"env": token_env}, jql="project = A ORDER BY key")
    with pytest.raises(ValidationError, match="upper case"):
        JiraConfig(base_url="https://x.atlassian.net", token={"env": token_env}, projects=["proj"])
    with pytest.raises(ValidationError, match="token: required"):
        JiraConfig(base_url="https://x.atlassian.net", projects=["PROJ"])
    with pytest.raises(ValidationError, match="http"):
        JiraConfig(base_url="x.atlassian.net", projects=["PROJ"], token={"env": token_env})
