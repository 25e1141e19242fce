"""The ``github`` connector against the local GitHub fake: the contract, sync, incremental and conditional requests,
pagination, rate limits and 5xx with backoff, an interrupted sync resumed, a revoked token, config errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from gateway.api import RateLimitExceeded, ServiceUnavailable, ToolError, Unauthenticated
from gateway.contracts.connector_contract import IncrementalConnectorContract, Seeded, full_sync
from gateway_plugins.connectors.github import GitHubConfig, GitHubConnector
from tests.fakes.github import FakeGitHub, primary_limit, secondary_limit
from tests.fakes.hosted import Scripted
from tests.plugins.connectors.support import TOKEN, Sleeps

pytestmark = [pytest.mark.anyio]

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def seed(fake: FakeGitHub) -> None:
    fake.add_issue(1, "Login fails after token refresh", "Steps: log in, wait 15 min.", updated=T0, labels=("bug",))
    fake.comment(1, "Same here on PROJ-7 staging.", at=T0 + timedelta(hours=1))
    fake.add_issue(2, "Invoices are rounded wrongly", None, updated=T0 + timedelta(hours=2))
    fake.add_issue(3, "Docs: payment flow", "Explain the flow.", updated=T0 + timedelta(hours=3), state="closed")
    fake.add_pull(
        4,
        "Refresh tokens before they expire",
        "Fixes #1. See PROJ-7.",
        updated=T0 + timedelta(hours=4),
        head="feat/PROJ-7-token-refresh",
        files=["shop/auth.py", "tests/test_auth.py"],
        merged=True,
    )
    fake.review(4, "shop/auth.py", 12, "Use a monotonic clock here.", at=T0 + timedelta(hours=5))
    fake.add_issue(5, "Checkout button misaligned", "On mobile.", updated=T0 + timedelta(hours=6))


def connector(fake: FakeGitHub, token_env: str, sleeps: Sleeps | None = None, **options: object) -> GitHubConnector:
    config = GitHubConfig(
        repository="octo/shop", base_url=fake.base_url, token={"env": token_env}, per_page=2, **options
    )
    return GitHubConnector(config, sleep=sleeps or Sleeps())


class TestGitHubContract(IncrementalConnectorContract):
    @pytest.fixture
    async def seeded(self, fake_github: FakeGitHub, token_env: str) -> AsyncIterator[Seeded]:
        seed(fake_github)
        instance = connector(fake_github, token_env)
        texts = {}
        for page in await full_sync(instance):
            texts.update({d.path: d.text for d in page.documents})
        counter = iter(range(1, 100))

        async def edit(path: str) -> None:
            number = int(path.rsplit("/", 1)[1])
            fake_github.comment(number, f"edit {next(counter)}", at=datetime.now(UTC) + timedelta(minutes=1))

        yield Seeded(instance, texts, edit=edit, secret=TOKEN)
        await instance.aclose()


async def test_a_sync_reads_issues_and_pull_requests_with_comments_and_files(
    fake_github: FakeGitHub, token_env: str
) -> None:
    seed(fake_github)
    github = connector(fake_github, token_env)
    documents = {d.path: d for page in await full_sync(github) for d in page.documents}
    await github.aclose()
    assert set(documents) == {f"octo/shop/issues/{n}" for n in (1, 2, 3, 5)} | {"octo/shop/pull/4"}
    issue = documents["octo/shop/issues/1"]
    assert issue.keys == ("octo/shop#1", "#1") and issue.source_type == "github"
    assert issue.url == "https://github.com/octo/shop/issues/1" and issue.state == "open"
    assert "labels: bug" in issue.text and "Same here on PROJ-7 staging." in issue.text
    assert [s.kind for s in issue.sections] == ["issue", "comment"]
    pull = documents["octo/shop/pull/4"]
    assert pull.state == "merged" and pull.files == ("shop/auth.py", "tests/test_auth.py")
    assert "branch feat/PROJ-7-token-refresh into main" in pull.text
    assert "Review comment by carol on shop/auth.py:12" in pull.text
    assert [s.kind for s in pull.sections] == ["pull_request", "review", "files"]
    assert documents["octo/shop/issues/3"].state == "closed (completed)"
    assert documents["octo/shop/issues/2"].last_modified == T0 + timedelta(hours=2)
    sent = fake_github.requests[0]
    assert sent.headers["x-github-api-version"] == "2022-11-28" and sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert sent.headers["accept"] == "application/vnd.github+json"


async def test_pages_follow_the_last_items_update_time(fake_github: FakeGitHub, token_env: str) -> None:
    seed(fake_github)
    github = connector(fake_github, token_env)
    pages = await full_sync(github)
    await github.aclose()
    assert [p.more for p in pages] == [True] * (len(pages) - 1) + [False]
    listed = [r for r in fake_github.requests if r.path.endswith("/issues")]
    since = [r.query.get("since") for r in listed]
    assert since[0] is None and since[1:] == sorted(set(since[1:])) and len(since) == len(pages)
    assert all(r.query["sort"] == "updated" and r.query["direction"] == "asc" for r in listed)
    offered = [d.path for p in pages for d in p.documents]
    assert len(offered) == len(set(offered)) == 5  # the boundary item asked for again is not offered twice


async def test_an_item_edited_during_a_sync_moves_no_other_out_of_it(fake_github: FakeGitHub, token_env: str) -> None:
    for number in range(1, 7):
        fake_github.add_issue(number, f"Issue {number}", f"body {number}", updated=T0 + timedelta(hours=number))
    github = connector(fake_github, token_env)
    first = await github.changes(None)
    fake_github.edit(1, body="edited", at=T0 + timedelta(days=1))  # numbered pages would now all shift by one
    rest = await full_sync(github, first.cursor)
    await github.aclose()
    offered = {d.path for page in [first, *rest] for d in page.documents}
    assert offered == {f"octo/shop/issues/{n}" for n in range(1, 7)}


async def test_a_page_within_one_second_is_followed_by_its_link(fake_github: FakeGitHub, token_env: str) -> None:
    for number in range(1, 6):
        fake_github.add_issue(number, f"Issue {number}", None, updated=T0)
    github = connector(fake_github, token_env)
    pages = await full_sync(github)
    await github.aclose()
    listed = [r for r in fake_github.requests if r.path.endswith("/issues")]
    # the second ask (since that second) brings the same page: then its numbered pages
    assert [(r.query.get("since"), r.query.get("page")) for r in listed][1:] == [
        ("2025-03-01T09:00:00Z", None),
        ("2025-03-01T09:00:00Z", "2"),
        ("2025-03-01T09:00:00Z", "3"),
    ]
    assert sorted(d.path for p in pages for d in p.documents) == [f"octo/shop/issues/{n}" for n in range(1, 6)]


async def test_the_next_sync_asks_only_since_the_last_and_a_quiet_repository_costs_a_304(
    fake_github: FakeGitHub, token_env: str
) -> None:
    seed(fake_github)
    fake_github.now = lambda: T0 + timedelta(days=1)
    github = connector(fake_github, token_env)
    first = await full_sync(github)
    fake_github.requests.clear()
    fake_github.comment(2, "Rounding fixed in 1.2", at=T0 + timedelta(days=1, hours=1))
    fake_github.now = lambda: T0 + timedelta(days=1, hours=2)
    second = await full_sync(github, first[-1].cursor)
    assert [d.path for p in second for d in p.documents] == ["octo/shop/issues/2"]
    assert fake_github.requests[0].query["since"] == "2025-03-02T09:00:00Z"  # the first sync's server time
    assert not any(r.path.endswith(("/issues/1/comments", "/pulls/4")) for r in fake_github.requests)
    fake_github.requests.clear()
    quiet = await full_sync(github, second[-1].cursor)  # nothing since: an empty answer, whose ETag is kept
    assert quiet[-1].documents == []
    again = await full_sync(github, quiet[-1].cursor)
    await github.aclose()
    assert again[-1].documents == [] and again[-1].cursor == quiet[-1].cursor
    assert fake_github.requests[-1].headers["if-none-match"] == fake_github.answers[-2].headers["etag"]
    assert fake_github.answers[-1].status == 304


async def test_an_interrupted_sync_resumes_at_the_page_it_stopped_at(
    fake_github: FakeGitHub, token_env: str, sleeps: Sleeps
) -> None:
    seed(fake_github)
    github = connector(fake_github, token_env, sleeps, max_retries=2)
    first = await github.changes(None)
    fake_github.script(*[Scripted(500, {"message": "Server Error"}, match="/issues")] * 3)
    with pytest.raises(ServiceUnavailable):
        await github.changes(first.cursor)
    assert len(sleeps.waits) == 2  # two backoffs between three attempts
    fake_github.requests.clear()
    rest = await full_sync(github, first.cursor)
    await github.aclose()
    listed = [r for r in fake_github.requests if r.path.endswith("/issues")]
    assert listed[0].query.get("since") == "2025-03-01T11:00:00Z"  # page 1 is not asked again
    offered = [d.path for d in first.documents] + [d.path for p in rest for d in p.documents]
    assert sorted(offered) == sorted(set(offered)) and len(offered) == 5


async def test_secondary_rate_limit_waits_for_retry_after(
    fake_github: FakeGitHub, token_env: str, sleeps: Sleeps
) -> None:
    seed(fake_github)
    fake_github.script(secondary_limit(7, match="/issues"))
    github = connector(fake_github, token_env, sleeps)
    pages = await full_sync(github)
    await github.aclose()
    assert sleeps.waits == [7.0] and len([d for p in pages for d in p.documents]) == 5


async def test_an_exhausted_hourly_limit_waits_until_its_reset(
    fake_github: FakeGitHub, token_env: str, sleeps: Sleeps
) -> None:
    seed(fake_github)
    fake_github.script(primary_limit(30, match="/issues"))
    github = connector(fake_github, token_env, sleeps)
    await full_sync(github)
    await github.aclose()
    assert len(sleeps.waits) == 1 and 28 <= sleeps.waits[0] <= 32


async def test_a_secondary_limit_without_retry_after_waits_a_minute(
    fake_github: FakeGitHub, token_env: str, sleeps: Sleeps
) -> None:
    seed(fake_github)
    fake_github.script(Scripted(429, {"message": "too many requests"}, match="/issues"))
    github = connector(fake_github, token_env, sleeps)
    await full_sync(github)
    await github.aclose()
    assert sleeps.waits == [60.0]


async def test_a_wait_longer_than_allowed_stops_the_sync_without_sleeping(
    fake_github: FakeGitHub, token_env: str, sleeps: Sleeps
) -> None:
    seed(fake_github)
    fake_github.script(secondary_limit(3600, match="/issues"))
    github = connector(fake_github, token_env, sleeps, max_wait_seconds=120)
    with pytest.raises(RateLimitExceeded) as caught:
        await github.changes(None)
    await github.aclose()
    assert sleeps.waits == [] and "3600" in caught.value.message and caught.value.details["retry_after"] == 3600


async def test_5xx_is_retried_with_growing_backoff(fake_github: FakeGitHub, token_env: str, sleeps: Sleeps) -> None:
    seed(fake_github)
    fake_github.script(Scripted(502, match="/issues"), Scripted(503, match="/issues"), Scripted(500, match="/issues"))
    github = connector(fake_github, token_env, sleeps, backoff_seconds=1.0)
    pages = await full_sync(github)
    await github.aclose()
    assert len([d for p in pages for d in p.documents]) == 5
    assert len(sleeps.waits) == 3
    assert 0.5 <= sleeps.waits[0] <= 1.0 and 1.0 <= sleeps.waits[1] <= 2.0 and 2.0 <= sleeps.waits[2] <= 4.0


async def test_proactive_wait_when_the_last_request_of_the_window_is_used(
    fake_github: FakeGitHub, token_env: str, sleeps: Sleeps
) -> None:
    seed(fake_github)
    fake_github.remaining = 1  # the next answer says x-ratelimit-remaining: 0
    github = connector(fake_github, token_env, sleeps, max_wait_seconds=4000)
    await full_sync(github)
    await github.aclose()
    assert len(sleeps.waits) == 1 and 3590 <= sleeps.waits[0] <= 3602


async def test_a_revoked_token_is_a_clear_error_naming_the_variable(fake_github: FakeGitHub, token_env: str) -> None:
    seed(fake_github)
    fake_github.revoke()
    github = connector(fake_github, token_env)
    with pytest.raises(Unauthenticated) as caught:
        await github.changes(None)
    await github.aclose()
    message = caught.value.message
    assert "GitHub rejected the token" in message and "Bad credentials" in message and token_env in message
    assert TOKEN not in message and len(fake_github.requests) == 1  # not retried


def test_the_token_is_only_an_environment_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match=r"env = \"NAME\""):
        GitHubConfig(repository="octo/shop", token="ghp_literal")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ValidationError, match="NOT_SET_ANYWHERE is not set"):
        GitHubConfig(repository="octo/shop", token={"env": "NOT_SET_ANYWHERE"})
    with pytest.raises(ValidationError, match="owner/repo"):
        GitHubConfig(repository="just-a-name")
    monkeypatch.setenv("GH_SECRET_FOR_REPR", "s3cr3t-value")
    config = GitHubConfig(repository="octo/shop", token={"env": "GH_SECRET_FOR_REPR"})
    assert "s3cr3t-value" not in repr(config) and config.token_env == "GH_SECRET_FOR_REPR"


async def test_a_link_to_another_origin_is_not_followed(fake_github: FakeGitHub, token_env: str) -> None:
    """The server links its next page on 127.0.0.1 while the connector's base_url says localhost: another origin,
    as a compromised or proxying server could name one, so the token is not sent there."""
    for number in range(1, 6):
        fake_github.add_issue(number, f"Issue {number}", None, updated=T0)  # one second: pages by their links
    config = GitHubConfig(
        repository="octo/shop",
        base_url=fake_github.base_url.replace("127.0.0.1", "localhost"),
        token={"env": token_env},
        per_page=2,
    )
    github = GitHubConnector(config, sleep=Sleeps())
    try:
        with pytest.raises(ToolError, match=r"pointed to another host \(127\.0\.0\.1\)") as refused:
            await full_sync(github)
    finally:
        await github.aclose()
    assert refused.value.code == "upstream_error"
    assert not [r for r in fake_github.requests if r.query.get("page")]  # the linked page was never asked for
