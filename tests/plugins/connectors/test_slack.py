"""The ``slack`` connector against the local Slack fake: the contract, channel history with threads, cursor
pagination, ``oldest`` on the next sync, replies to earlier threads, 429 ``Retry-After``, errors in ``ok: false``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from pydantic import ValidationError

from gateway.api import NotFound, Unauthenticated
from gateway.contracts.connector_contract import IncrementalConnectorContract, Seeded, full_sync
from gateway_plugins.connectors.slack import SlackConfig, SlackConnector, plain_text
from tests.fakes.hosted import Scripted
from tests.fakes.slack import FakeSlack, rate_limited
from tests.plugins.connectors.support import TOKEN, Sleeps

pytestmark = [pytest.mark.anyio]

DEV, OPS = "C0DEV00001", "C0OPS00002"
NOW = time.time()


def ts(minutes_ago: float) -> str:
    return f"{NOW - minutes_ago * 60:.6f}"


def seed(fake: FakeSlack) -> dict[str, str]:
    fake.add_channel(DEV, "dev")
    fake.add_channel(OPS, "ops")
    stamps = {"thread": ts(300), "plain": ts(200), "late": ts(100), "ops": ts(150)}
    fake.post(DEV, stamps["thread"], "Login fails after <https://x.io/r|the refresh> for <@U0BOB00002|bob>, PROJ-7?")
    fake.reply(DEV, stamps["thread"], ts(290), "Yes: shop/auth.py drops the token.")
    fake.reply(DEV, stamps["thread"], ts(280), "Fixed in #4 :tada:")
    fake.post(DEV, stamps["plain"], "Deploy at 5 &amp; then <!here> check")
    fake.post(DEV, ts(250), "joined", user="U0CAR00003").update(subtype="channel_join")
    fake.post(DEV, stamps["late"], "Invoices look off again")
    fake.post(OPS, stamps["ops"], "Disk at 90% on db-1")
    return stamps


def connector(fake: FakeSlack, token_env: str, sleeps: Sleeps | None = None, **options: object) -> SlackConnector:
    config = SlackConfig(
        base_url=fake.base_url,
        token={"env": token_env},
        channels=["dev", OPS],
        page_size=2,
        workspace="acme",
        **options,
    )
    return SlackConnector(config, sleep=sleeps or Sleeps())


class TestSlackContract(IncrementalConnectorContract):
    @pytest.fixture
    async def seeded(self, fake_slack: FakeSlack, token_env: str) -> AsyncIterator[Seeded]:
        seed(fake_slack)
        instance = connector(fake_slack, token_env)
        texts = {d.path: d.text for page in await full_sync(instance) for d in page.documents}
        minutes = iter(range(1, 1000))

        async def edit(path: str) -> None:
            channel, parent = path.split("/")
            fake_slack.reply(channel, parent, ts(-next(minutes)), "A new reply")

        yield Seeded(instance, texts, edit=edit, secret=TOKEN)
        await instance.aclose()


async def test_a_sync_reads_threads_and_messages_of_each_channel(fake_slack: FakeSlack, token_env: str) -> None:
    stamps = seed(fake_slack)
    slack = connector(fake_slack, token_env)
    documents = {d.path: d for page in await full_sync(slack) for d in page.documents}
    await slack.aclose()
    expected = {f"{DEV}/{stamps[k]}" for k in ("thread", "plain", "late")} | {f"{OPS}/{stamps['ops']}"}
    assert set(documents) == expected  # the channel_join is noise
    thread = documents[f"{DEV}/{stamps['thread']}"]
    assert [s.kind for s in thread.sections] == ["thread", "reply", "reply"]
    assert "Login fails after the refresh (https://x.io/r) for @bob, PROJ-7?" in thread.text
    assert thread.title.startswith("#dev: Login fails") and thread.source_type == "slack"
    assert thread.url == f"https://acme.slack.com/archives/{DEV}/p{stamps['thread'].replace('.', '')}"
    assert thread.last_modified.timestamp() == pytest.approx(float(ts(280)), abs=1e-3)
    assert "Deploy at 5 & then @here check" in documents[f"{DEV}/{stamps['plain']}"].text
    history = [r for r in fake_slack.requests if r.path.endswith("conversations.history")]
    assert [r.query["channel"] for r in history] == [DEV, DEV, OPS]  # 4 top-level messages of dev, pages of 2
    assert [bool(r.query.get("cursor")) for r in history] == [False, True, False]
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in fake_slack.requests)


async def test_the_next_sync_asks_from_the_newest_stored_message_and_sees_new_replies(
    fake_slack: FakeSlack, token_env: str
) -> None:
    stamps = seed(fake_slack)
    slack = connector(fake_slack, token_env, thread_lookback_days=0)
    first = await full_sync(slack)
    fake_slack.requests.clear()
    fake_slack.post(DEV, ts(10), "New question")
    second = await full_sync(slack, first[-1].cursor)
    assert [d.path for p in second for d in p.documents] == [f"{DEV}/{ts(10)}"]
    oldest = {r.query["channel"]: r.query["oldest"] for r in fake_slack.requests if "history" in r.path}
    assert oldest == {DEV: stamps["late"], OPS: stamps["ops"]}
    await slack.aclose()
    looking_back = connector(fake_slack, token_env, thread_lookback_days=1)
    base = await full_sync(looking_back)
    fake_slack.reply(DEV, stamps["thread"], ts(5), "Still broken on 2.1")
    fake_slack.requests.clear()
    third = await full_sync(looking_back, base[-1].cursor)
    await looking_back.aclose()
    changed = [d for p in third for d in p.documents]
    assert [d.path for d in changed] == [f"{DEV}/{stamps['thread']}"]
    assert changed[0].text.endswith("Still broken on 2.1")
    replies = [r for r in fake_slack.requests if "replies" in r.path]
    assert {r.query["ts"] for r in replies} == {stamps["thread"]}  # only the thread that changed is read


async def test_429_waits_for_retry_after(fake_slack: FakeSlack, token_env: str, sleeps: Sleeps) -> None:
    seed(fake_slack)
    fake_slack.script(rate_limited(3, match="conversations.history"), Scripted(503, match="conversations.replies"))
    slack = connector(fake_slack, token_env, sleeps, backoff_seconds=0.1)
    documents = [d for page in await full_sync(slack) for d in page.documents]
    await slack.aclose()
    assert len(documents) == 4 and sleeps.waits[0] == 3.0 and 0.05 <= sleeps.waits[1] <= 0.1


async def test_an_expired_page_cursor_reads_the_channel_again(fake_slack: FakeSlack, token_env: str) -> None:
    seed(fake_slack)
    slack = connector(fake_slack, token_env)
    first = await slack.changes(None)
    fake_slack.script(Scripted(200, {"ok": False, "error": "invalid_cursor"}, match="conversations.history"))
    rest = await full_sync(slack, first.cursor)
    await slack.aclose()
    assert len({d.path for d in first.documents} | {d.path for p in rest for d in p.documents}) == 4


async def test_a_revoked_token_and_a_missing_channel_are_clear_errors(fake_slack: FakeSlack, token_env: str) -> None:
    seed(fake_slack)
    missing = SlackConnector(SlackConfig(base_url=fake_slack.base_url, token={"env": token_env}, channels=["nope"]))
    with pytest.raises(NotFound, match="no channel named 'nope'") as caught:
        await missing.changes(None)
    assert caught.value.details["field"] == "connector_config.channels"
    await missing.aclose()
    fake_slack.revoke()
    slack = connector(fake_slack, token_env)
    with pytest.raises(Unauthenticated, match="token_revoked") as rejected:
        await slack.changes(None)
    await slack.aclose()
    assert token_env in rejected.value.message and TOKEN not in rejected.value.message


def test_markup_becomes_readable_text() -> None:
    assert plain_text("<@U1|ada> see <#C1|dev>, <https://a.b|docs> and <https://c.d> &lt;3") == (
        "@ada see #dev, docs (https://a.b) and https://c.d <3"
    )
    assert plain_text("<!subteam^S1|@oncall> <!channel>") == "@oncall @channel"


def test_config_needs_a_token_and_channels(token_env: str) -> None:
    with pytest.raises(ValidationError, match="token: required"):
        SlackConfig(channels=["dev"])
    with pytest.raises(ValidationError, match="channels"):
        SlackConfig(channels=[], token={"env": token_env})
    assert SlackConfig(channels=["#dev", "dev"], token={"env": token_env}).channels == ["dev"]
