"""The ``slack`` connector: channel history with threads, one document per thread (or single message).

Slack Web API: ``conversations.list`` (channel names to ids), ``conversations.history`` (a channel's top-level
messages, newest first, ``oldest`` exclusive), ``conversations.replies`` (a thread), all with cursor pagination
(``response_metadata.next_cursor``). Errors come as ``{"ok": false, "error": ...}`` (``invalid_auth``,
``token_revoked``, ``channel_not_found``, ``not_in_channel``, ``missing_scope``...); rate limits as HTTP ``429``
with ``Retry-After`` (seconds), honoured.

Incremental: each channel's history is asked from ``oldest`` = the newest message already stored (the first sync
goes back ``history_days``), or from ``thread_lookback_days`` ago when that is earlier: a reply to an earlier message
does not show in the history as a message of its own, only as its parent's ``reply_count``/``latest_reply``, so the
messages of that window are looked at again and a thread is read (``conversations.replies``) only when it is new or
has a reply newer than the last one stored; an edited message (``edited.ts``) is offered again too. Set
``thread_lookback_days = 0`` to ask strictly from the newest message. The cursor keeps the channel being read and its
page cursor, so an interrupted sync resumes there. Document paths: ``{channel id}/{thread ts}``.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx
from pydantic import Field, field_validator, model_validator

from gateway.api import (
    ChangedDocument,
    ChangePage,
    DocumentContent,
    DocumentSection,
    Forbidden,
    NotFound,
    ProviderContext,
    ToolError,
    Unauthenticated,
)
from gateway_plugins.connectors.common import content_of, dump_cursor, load_cursor, match_path
from gateway_plugins.connectors.config import HostedConfig
from gateway_plugins.connectors.http import HostedConnector, HostedHttp, Retry, default_judge, retry_after_seconds

__all__ = ["SlackConfig", "SlackConnector", "slack_connector_factory"]

_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{8,}")
_PATH = re.compile(r"(?P<channel>[CGD][A-Z0-9]{8,})/(?P<ts>[0-9]{10}\.[0-9]{6})")
_SHAPE = "CHANNELID/1712345678.000100"
_AUTH_ERRORS = frozenset(
    {"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive", "not_allowed_token_type"}
)
_ACCESS_ERRORS = frozenset(
    {"missing_scope", "not_in_channel", "no_permission", "access_denied", "team_access_not_granted"}
)
_MISSING = frozenset({"channel_not_found", "thread_not_found", "message_not_found"})
_TRANSIENT = frozenset({"internal_error", "fatal_error", "service_unavailable", "request_timeout"})
_NOISE = frozenset(
    {
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "pinned_item",
        "unpinned_item",
        "bot_add",
        "bot_remove",
        "thread_broadcast",  # a reply also shown in the channel: it is read with its thread
    }
)


class SlackConfig(HostedConfig):
    """``connector_config`` of a ``slack`` connector."""

    base_url: str = Field("https://slack.com/api", description="The Web API root.")
    channels: list[str] = Field(min_length=1, description="Channel names (dev, #dev) or ids (C0123456789).")
    workspace: str | None = Field(None, description="The workspace's subdomain, for links to messages.")
    history_days: int = Field(90, ge=0, le=36_500, description="How far back the first sync reads (0: everything).")
    thread_lookback_days: int = Field(
        14, ge=0, le=365, description="Messages this recent are looked at again at each sync for new thread replies."
    )
    page_size: int = Field(200, ge=1, le=999, description="Messages per request (Slack advises at most 200).")

    @field_validator("channels")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        cleaned = [name.strip().lstrip("#") for name in value]
        if any(not name for name in cleaned):
            raise ValueError("a channel name is empty")
        return list(dict.fromkeys(cleaned))

    @model_validator(mode="after")
    def _needs_a_token(self) -> SlackConfig:
        if self.token is None:
            raise ValueError('token: required, as { env = "SLACK_TOKEN" } (a bot or user token, xoxb-/xoxp-)')
        return self


def slack_judge(config: SlackConfig) -> Callable[[httpx.Response], Awaitable[None]]:
    """HTTP 429 and 5xx retried; ``ok: false`` bodies turned into clear errors (a revoked token is not retried)."""
    plain = default_judge("Slack", token_hint=config.token_hint())

    async def judge(response: httpx.Response) -> None:
        await plain(response)
        try:
            body = response.json()
        except ValueError:
            raise Retry("Slack answered a body that is not JSON") from None
        if not isinstance(body, dict) or body.get("ok") is True:
            return
        error = str(body.get("error") or "unknown_error")
        details = {"service": "Slack", "slack_error": error}
        if error == "ratelimited":
            after = retry_after_seconds(response.headers.get("retry-after"), time.time())
            raise Retry("Slack rate limit (ratelimited)", after if after is not None else 30.0, rate_limited=True)
        if error in _TRANSIENT:
            raise Retry(f"Slack error {error}")
        if error in _AUTH_ERRORS:
            raise Unauthenticated(
                f"Slack rejected the token ({error}); it may be revoked or expired. {config.token_hint()}",
                details=details,
            )
        needed = f" (needed: {body['needed']})" if body.get("needed") else ""
        if error in _ACCESS_ERRORS:
            raise Forbidden(f"Slack refused access: {error}{needed}", details=details)
        if error in _MISSING:
            raise NotFound(f"Slack: {error}", details=details)
        raise ToolError(f"Slack error: {error}{needed}", code="upstream_error", http_status=502, details=details)

    return judge


_LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")


def plain_text(text: str) -> str:
    """Slack's message markup as readable text: ``<@U1|ada>`` -> ``@ada``, ``<#C1|dev>`` -> ``#dev``,
    ``<https://x|docs>`` -> ``docs (https://x)``, ``<!here>`` -> ``@here``, entities unescaped."""

    def one(found: re.Match[str]) -> str:
        target, label = found.group(1), found.group(2)
        if target.startswith("@"):
            return f"@{label or target[1:]}"
        if target.startswith("#"):
            return f"#{label or target[1:]}"
        if target.startswith("!"):
            return label if label and label.startswith("@") else f"@{(label or target[1:]).split('^')[0]}"
        return f"{label} ({target})" if label and label != target else target

    return html.unescape(_LINK.sub(one, text))


def _author(message: dict[str, Any]) -> str:
    profile = message.get("user_profile") or {}
    for name in (profile.get("display_name"), profile.get("real_name"), message.get("username")):
        if name:
            return str(name)
    bot = message.get("bot_profile") or {}
    return str(bot.get("name") or message.get("user") or message.get("bot_id") or "unknown")


def _when(ts: str) -> datetime:
    return datetime.fromtimestamp(float(ts), UTC)


def _body(message: dict[str, Any]) -> str:
    text = plain_text(message.get("text") or "").strip()
    files = [f.get("title") or f.get("name") for f in message.get("files") or [] if isinstance(f, dict)]
    if files:
        text += "\n" + "\n".join(f"[file: {name}]" for name in files if name)
    return text.strip() or "(no text)"


class SlackConnector(HostedConnector):
    """Threads and messages of some channels of one workspace (see the module docstring)."""

    type = "slack"
    source_type = "slack"

    def __init__(
        self,
        config: SlackConfig,
        *,
        sleep: Callable[[float], Awaitable[Any]] = anyio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        assert config.token is not None
        self.http = HostedHttp(
            "Slack",
            config.base_url,
            headers={"Authorization": f"Bearer {config.token.get_secret_value()}"},
            policy=config,
            judge=slack_judge(config),
            sleep=sleep,
            clock=clock,
        )
        self._names: dict[str, str] = {}

    async def _call(self, method: str, **params: Any) -> dict[str, Any]:
        response = await self.http.request("GET", method, params={k: v for k, v in params.items() if v is not None})
        return response.json()

    async def _pages(self, method: str, key: str, **params: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            body = await self._call(method, cursor=cursor, **params)
            items.extend(body.get(key) or [])
            cursor = (body.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return items

    async def _resolve(self) -> list[str]:
        """Channel ids of the configured channels (names looked up with ``conversations.list``)."""
        wanted = self.config.channels
        if any(not _CHANNEL_ID.fullmatch(name) for name in wanted) or not self._names:
            listed = await self._pages(
                "conversations.list",
                "channels",
                types="public_channel,private_channel",
                exclude_archived="true",
                limit=1000,
            )
            for channel in listed:
                self._names[channel["id"]] = channel.get("name") or channel["id"]
        by_name = {name: cid for cid, name in self._names.items()}
        ids = []
        for name in wanted:
            if _CHANNEL_ID.fullmatch(name):
                ids.append(name)
                if name not in self._names:
                    info = await self._call("conversations.info", channel=name)
                    self._names[name] = info.get("channel", {}).get("name") or name
            elif name in by_name:
                ids.append(by_name[name])
            else:
                raise NotFound(
                    f"Slack has no channel named {name!r} that the token can see (archived, private without the app, "
                    "or misspelt)",
                    details={"field": "connector_config.channels", "channel": name},
                )
        return ids

    async def _thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        return await self._pages(
            "conversations.replies", "messages", channel=channel, ts=ts, limit=self.config.page_size
        )

    def _render(self, channel: str, messages: list[dict[str, Any]]) -> ChangedDocument:
        parent, replies = messages[0], [m for m in messages[1:] if m.get("ts") != messages[0].get("ts")]
        name = self._names.get(channel, channel)
        stamp = f"{_when(parent['ts']):%Y-%m-%d %H:%M} UTC"
        sections = [
            DocumentSection(
                "thread" if replies else "message",
                f"# #{name} · {_author(parent)} · {stamp}\n\n{_body(parent)}",
                f"#{name} {stamp}",
            )
        ]
        for reply in replies:
            heading = f"Reply by {_author(reply)} · {_when(reply['ts']):%Y-%m-%d %H:%M} UTC"
            sections.append(DocumentSection("reply", f"## {heading}\n\n{_body(reply)}", heading))
        newest = max(
            [float(m["ts"]) for m in messages] + [float((m.get("edited") or {}).get("ts") or 0) for m in messages]
        )
        first_line = _body(parent).splitlines()[0]
        url = None
        if self.config.workspace:
            url = f"https://{self.config.workspace}.slack.com/archives/{channel}/p{parent['ts'].replace('.', '')}"
        return ChangedDocument(
            path=f"{channel}/{parent['ts']}",
            title=f"#{name}: {first_line[:100]}",
            sections=sections,
            last_modified=datetime.fromtimestamp(newest, UTC),
            source_type=self.source_type,
            url=url,
            author=_author(parent),
            mime_type="text/plain",
        )

    # -- the Connector protocol -----------------------------------------------------------------------------

    def _first_oldest(self) -> str | None:
        if not self.config.history_days:
            return None
        return f"{self.http.clock() - self.config.history_days * 86_400:.6f}"

    async def changes(self, cursor: str | None) -> ChangePage:
        state = load_cursor(cursor)
        channels: dict[str, str] = dict(state.get("channels") or {})
        threads: dict[str, str] = dict(state.get("threads") or {})
        run: dict[str, Any] = dict(state.get("run") or {})
        if not run:
            horizon = self.http.clock() - self.config.thread_lookback_days * 86_400
            threads = {key: latest for key, latest in threads.items() if float(latest) >= horizon}
            run = {"ids": await self._resolve(), "i": 0, "horizon": f"{horizon:.6f}"}
        elif not self._names:
            await self._resolve()
        ids: list[str] = run["ids"]
        channel = ids[run["i"]]
        known = channels.get(channel)
        oldest = min(known, run["horizon"], key=float) if known else self._first_oldest()
        try:
            body = await self._history(channel, oldest, run.get("cursor"))
        except ToolError as exc:
            if exc.details.get("slack_error") != "invalid_cursor":
                raise
            body = await self._history(channel, oldest, None)  # the page cursor expired: read the channel again
        documents: list[ChangedDocument] = []
        newest = run.get("newest") or known
        for message in body.get("messages") or []:
            ts = message["ts"]
            newest = max(newest or "0", ts, key=float)
            if message.get("subtype") in _NOISE:
                continue
            key = f"{channel}/{ts}"
            fresh = known is None or float(ts) > float(known)
            edited = known is not None and float((message.get("edited") or {}).get("ts") or 0) > float(known)
            replied = bool(message.get("reply_count")) and float(message.get("latest_reply") or 0) > float(
                threads.get(key, "0")
            )
            if not (fresh or edited or replied):
                continue  # read again only to see its thread: unchanged
            thread = await self._thread(channel, ts) if message.get("reply_count") else [message]
            if message.get("reply_count") and thread:
                threads[key] = max((m["ts"] for m in thread), key=float)
            documents.append(self._render(channel, thread or [message]))
        following = (body.get("response_metadata") or {}).get("next_cursor") if body.get("has_more") else None
        if following:
            run.update(cursor=following, newest=newest)
        else:
            if newest:
                channels[channel] = newest
            run.update(i=run["i"] + 1, cursor=None, newest=None)
        more = run["i"] < len(ids)
        next_state = {"channels": channels, "threads": threads, "run": run if more else None}
        return ChangePage(documents=documents, cursor=dump_cursor(next_state), more=more)

    async def _history(self, channel: str, oldest: str | None, cursor: str | None) -> dict[str, Any]:
        return await self._call(
            "conversations.history",
            channel=channel,
            oldest=oldest,
            inclusive="false" if oldest else None,
            limit=self.config.page_size,
            cursor=cursor,
        )

    async def read(self, path: str) -> DocumentContent:
        found = match_path(path, _PATH, _SHAPE)
        if not self._names:
            await self._resolve()
        if found["channel"] not in self._names:
            raise NotFound(f"{path!r} is not in a channel of this connector", details={"path": path})
        thread = await self._thread(found["channel"], found["ts"])
        if not thread or thread[0].get("ts") != found["ts"]:
            raise NotFound(f"no Slack message {path!r}", details={"path": path})
        return content_of(self._render(found["channel"], thread))


def slack_connector_factory(context: ProviderContext) -> SlackConnector:
    assert isinstance(context.config, SlackConfig)
    return SlackConnector(context.config)
