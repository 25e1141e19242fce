"""A local fake of the Slack Web API (``conversations.*``), for the ``slack`` connector's tests.

Methods, with Slack's documented shapes (``tests/fakes/schemas/slack-web-subset.json``):

* ``conversations.list`` (``types``, ``exclude_archived``, ``limit``, ``cursor``);
* ``conversations.info`` (``channel``);
* ``conversations.history`` (``channel``, ``oldest``, ``latest``, ``inclusive``, ``limit``, ``cursor``): top-level
  messages newest first, ``has_more``, ``response_metadata.next_cursor``;
* ``conversations.replies`` (``channel``, ``ts``, same range and paging arguments): the parent message first, then
  its replies oldest first.

Errors are HTTP 200 with ``{"ok": false, "error": ...}``: ``not_authed`` without a token, ``invalid_auth`` for an
unknown one, ``token_revoked`` after :meth:`FakeSlack.revoke`, ``channel_not_found``, ``thread_not_found``,
``invalid_cursor``. Rate limits (HTTP 429 with ``Retry-After``) are scripted with :func:`rate_limited`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from tests.fakes.hosted import HostedFake, Scripted, json_response

__all__ = ["FakeSlack", "fake_slack", "rate_limited"]


def rate_limited(retry_after: int = 2, match: str = "") -> Scripted:
    """Slack's answer past a method's rate limit: HTTP 429, ``Retry-After`` in seconds."""
    return Scripted(429, {"ok": False, "error": "ratelimited"}, {"retry-after": str(retry_after)}, match)


def _cursor(offset: int) -> str:
    return base64.b64encode(f"offset:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int | None:
    if not cursor:
        return 0
    try:
        text = base64.b64decode(cursor.encode()).decode()
    except ValueError:
        return None
    return int(text.split(":", 1)[1]) if text.startswith("offset:") and text.split(":", 1)[1].isdigit() else None


class FakeSlack(HostedFake):
    name = "slack"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.channels: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.replies: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.revoked = False

    def revoke(self) -> None:
        self.revoked = True

    # -- the workspace's content -------------------------------------------------------------------------------

    def add_channel(self, channel_id: str, name: str) -> None:
        self.channels[channel_id] = {
            "id": channel_id,
            "name": name,
            "name_normalized": name,
            "is_channel": True,
            "is_group": False,
            "is_im": False,
            "is_mpim": False,
            "is_private": False,
            "is_archived": False,
            "is_general": False,
            "is_shared": False,
            "is_org_shared": False,
            "is_member": True,
            "created": 1700000000,
            "creator": "U0ADA00001",
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": f"The {name} channel", "creator": "", "last_set": 0},
            "num_members": 3,
        }
        self.messages.setdefault(channel_id, [])

    def post(self, channel: str, ts: str, text: str, *, user: str = "U0ADA00001", name: str = "ada") -> dict:
        message = {
            "type": "message",
            "user": user,
            "text": text,
            "ts": ts,
            "team": "T0TEAM0001",
            "user_profile": {"display_name": name, "real_name": name.title(), "name": name},
        }
        self.messages[channel].append(message)
        return message

    def reply(self, channel: str, parent: str, ts: str, text: str, *, user: str = "U0BOB00002", name: str = "bob"):
        parent_message = next(m for m in self.messages[channel] if m["ts"] == parent)
        message = {
            "type": "message",
            "user": user,
            "text": text,
            "ts": ts,
            "thread_ts": parent,
            "parent_user_id": parent_message["user"],
            "team": "T0TEAM0001",
            "user_profile": {"display_name": name, "real_name": name.title(), "name": name},
        }
        thread = self.replies.setdefault((channel, parent), [])
        thread.append(message)
        parent_message.update(
            thread_ts=parent,
            reply_count=len(thread),
            reply_users=sorted({m["user"] for m in thread}),
            reply_users_count=len({m["user"] for m in thread}),
            latest_reply=ts,
        )
        return message

    # -- the HTTP side -------------------------------------------------------------------------------------

    def unauthorised(self, request: Request) -> Response | None:
        token = self.token_of(request)
        if token is None:
            return json_response({"ok": False, "error": "not_authed"})
        if self.revoked and token in self.tokens:
            return json_response({"ok": False, "error": "token_revoked"})
        if token not in self.tokens:
            return json_response({"ok": False, "error": "invalid_auth"})
        return None

    def _window(self, query: Any, items: list[dict[str, Any]], newest_first: bool) -> Response | list:
        oldest, latest = query.get("oldest"), query.get("latest")
        inclusive = query.get("inclusive") in ("true", "1")
        chosen = []
        for message in items:
            ts = float(message["ts"])
            if oldest and (ts < float(oldest) or (ts == float(oldest) and not inclusive)):
                continue
            if latest and (ts > float(latest) or (ts == float(latest) and not inclusive)):
                continue
            chosen.append(message)
        chosen.sort(key=lambda m: float(m["ts"]), reverse=newest_first)
        return chosen

    def _paged(self, query: Any, items: list[dict[str, Any]], key: str, extra: dict[str, Any]) -> Response:
        offset = _offset(query.get("cursor"))
        if offset is None:
            return json_response({"ok": False, "error": "invalid_cursor"})
        limit = max(1, min(999, int(query.get("limit") or 100)))
        page = items[offset : offset + limit]
        more = offset + limit < len(items)
        body = {
            "ok": True,
            key: page,
            **extra,
            "response_metadata": {"next_cursor": _cursor(offset + limit) if more else ""},
        }
        if "has_more" in extra:
            body["has_more"] = more
        return json_response(body)

    def answer(self, request: Request, payload: Any) -> Response:
        method = request.url.path.rsplit("/", 1)[-1]
        query = request.query_params
        if method == "conversations.list":
            return self._paged(query, list(self.channels.values()), "channels", {})
        channel = query.get("channel")
        if method in ("conversations.info", "conversations.history", "conversations.replies"):
            if channel not in self.channels:
                return json_response({"ok": False, "error": "channel_not_found"})
        if method == "conversations.info":
            return json_response({"ok": True, "channel": self.channels[channel]})
        if method == "conversations.history":
            window = self._window(query, self.messages[channel], newest_first=True)
            extra = {"has_more": False, "pin_count": 0, "channel_actions_ts": None, "channel_actions_count": 0}
            return self._paged(query, window, "messages", extra)
        if method == "conversations.replies":
            parent = next((m for m in self.messages[channel] if m["ts"] == query.get("ts")), None)
            if parent is None:
                return json_response({"ok": False, "error": "thread_not_found"})
            replies = self._window(query, self.replies.get((channel, parent["ts"]), []), newest_first=False)
            return self._paged(query, [parent, *replies], "messages", {"has_more": False})
        return json_response({"ok": False, "error": "unknown_method"}, 404)


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake  # type: ignore[misc]
