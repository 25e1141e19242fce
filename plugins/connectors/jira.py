"""The ``jira`` connector: issues found by JQL, with their comments, rich text rendered from ADF.

Jira Cloud platform REST API v3: ``GET /rest/api/3/myself`` (checks the token, gives the user's time zone),
``POST /rest/api/3/search/jql`` (the enhanced JQL search that replaced ``/rest/api/3/search``: ``nextPageToken``
pagination, ``isLast``), ``GET /rest/api/3/issue/{key}/comment`` (``startAt`` pagination, when an issue has more
comments than the search returned), ``GET /rest/api/3/issue/{key}`` (one issue, for ``read``). Descriptions and
comments are Atlassian Document Format, rendered to text (:mod:`.adf`). Auth: an Atlassian API token with the
account's ``email`` (Basic), or a bearer token without it.

Incremental: the next sync adds ``updated >= "yyyy-MM-dd HH:mm"`` to the JQL, from the server time (``Date``) of
the last sync's first page, written in the Jira user's time zone (JQL dates are read in it) and moved back
``overlap_minutes`` (JQL has minute precision and the search index lags a little behind writes: an issue seen again
is unchanged and skipped by the pack). Mid-sync the cursor holds the ``nextPageToken``. Rate limits: ``429`` with
``Retry-After`` (or ``X-RateLimit-Reset``), and ``503`` with ``Retry-After``, are honoured. Document paths: issue
keys (``PROJ-123``).
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import anyio
import httpx
from pydantic import Field, field_validator, model_validator

from gateway.api import (
    ChangedDocument,
    ChangePage,
    DocumentContent,
    DocumentSection,
    NotFound,
    ProviderContext,
    ToolError,
)
from gateway_plugins.connectors.adf import adf_to_text
from gateway_plugins.connectors.common import (
    content_of,
    dump_cursor,
    iso,
    load_cursor,
    match_path,
    parse_time,
)
from gateway_plugins.connectors.config import HostedConfig
from gateway_plugins.connectors.http import HostedConnector, HostedHttp, Retry, default_judge

__all__ = ["FIELDS", "JiraConfig", "JiraConnector", "jira_connector_factory"]

FIELDS = [
    "summary",
    "description",
    "comment",
    "status",
    "issuetype",
    "priority",
    "labels",
    "assignee",
    "reporter",
    "created",
    "updated",
    "project",
]
_KEY = re.compile(r"[A-Z][A-Z0-9_]+-[1-9][0-9]*")
_PROJECT = re.compile(r"[A-Z][A-Z0-9_]+")


class JiraConfig(HostedConfig):
    """``connector_config`` of a ``jira`` connector."""

    base_url: str = Field(description="Your site, https://your-domain.atlassian.net")
    email: str | None = Field(None, description="The Atlassian account of an API token (Basic auth).")
    projects: list[str] = Field(default_factory=list, description="Project keys to index.")
    jql: str | None = Field(None, description="A JQL filter (without ORDER BY), alone or with projects.")
    include_comments: bool = True
    page_size: int = Field(50, ge=1, le=100, description="Issues per search request.")
    overlap_minutes: int = Field(5, ge=1, le=1440, description="How far each sync looks back past the last one.")

    @field_validator("projects")
    @classmethod
    def _keys(cls, value: list[str]) -> list[str]:
        bad = [key for key in value if not _PROJECT.fullmatch(key)]
        if bad:
            raise ValueError(f"project keys are upper case letters and digits (got {', '.join(bad)})")
        return value

    @field_validator("jql")
    @classmethod
    def _no_order(cls, value: str | None) -> str | None:
        if value is not None and re.search(r"\border\s+by\b", value, re.IGNORECASE):
            raise ValueError("leave ORDER BY out: the connector orders by update time")
        return value

    @model_validator(mode="after")
    def _bounded(self) -> JiraConfig:
        if not self.projects and not self.jql:
            raise ValueError("give projects or jql: Jira's search needs a bounded query")
        if self.token is None:
            raise ValueError('token: required, as { env = "JIRA_API_TOKEN" }')
        return self


def jira_judge(config: JiraConfig) -> Callable[[httpx.Response], Awaitable[None]]:
    plain = default_judge("Jira", token_hint=config.token_hint())

    async def judge(response: httpx.Response) -> None:
        reset = response.headers.get("x-ratelimit-reset")
        if response.status_code == 429 and not response.headers.get("retry-after") and reset:
            try:
                wait = max(0.0, parse_time(reset).timestamp() - time.time())
            except ValueError:
                wait = None
            raise Retry("Jira answered 429", wait, rate_limited=True)
        await plain(response)

    return judge


def _name(person: Any) -> str | None:
    return person.get("displayName") if isinstance(person, dict) else None


class JiraConnector(HostedConnector):
    """Issues of some Jira projects (see the module docstring)."""

    type = "jira"
    source_type = "jira"

    def __init__(
        self,
        config: JiraConfig,
        *,
        sleep: Callable[[float], Awaitable[Any]] = anyio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        assert config.token is not None
        secret = config.token.get_secret_value()
        if config.email:
            auth = "Basic " + base64.b64encode(f"{config.email}:{secret}".encode()).decode()
        else:
            auth = f"Bearer {secret}"
        self.http = HostedHttp(
            "Jira",
            config.base_url,
            headers={"Authorization": auth, "Accept": "application/json"},
            policy=config,
            judge=jira_judge(config),
            sleep=sleep,
            clock=clock,
        )

    def _jql(self, since: str | None, zone: str | None) -> str:
        clauses = []
        if self.config.projects:
            clauses.append("project in (" + ", ".join(f'"{key}"' for key in self.config.projects) + ")")
        if self.config.jql:
            clauses.append(f"({self.config.jql})")
        if since:
            try:
                tz: Any = ZoneInfo(zone) if zone else UTC
            except (ZoneInfoNotFoundError, ValueError):
                tz = UTC
            local = (parse_time(since) - timedelta(minutes=self.config.overlap_minutes)).astimezone(tz)
            clauses.append(f'updated >= "{local:%Y-%m-%d %H:%M}"')
        return " AND ".join(clauses) + " ORDER BY updated ASC, key ASC"

    async def _comments(self, key: str, field: dict[str, Any]) -> list[dict[str, Any]]:
        comments = list(field.get("comments") or [])
        total = int(field.get("total") or len(comments))
        while len(comments) < total:
            page = (
                await self.http.request(
                    "GET", f"rest/api/3/issue/{key}/comment", params={"startAt": len(comments), "maxResults": 100}
                )
            ).json()
            batch = page.get("comments") or []
            if not batch:
                break
            comments.extend(batch)
            total = int(page.get("total") or total)
        return comments

    async def _document(self, issue: dict[str, Any]) -> ChangedDocument:
        key, fields = issue["key"], issue.get("fields") or {}
        comments = await self._comments(key, fields.get("comment") or {}) if self.config.include_comments else []
        summary = str(fields.get("summary") or "")
        status = (fields.get("status") or {}).get("name")
        facts = [
            (fields.get("issuetype") or {}).get("name") or "Issue",
            status or "no status",
        ]
        if (fields.get("priority") or {}).get("name"):
            facts.append(f"priority {fields['priority']['name']}")
        if _name(fields.get("reporter")):
            facts.append(f"reported by {_name(fields.get('reporter'))}")
        if _name(fields.get("assignee")):
            facts.append(f"assigned to {_name(fields.get('assignee'))}")
        if fields.get("labels"):
            facts.append("labels: " + ", ".join(fields["labels"]))
        facts.append(f"created {parse_time(fields.get('created')):%Y-%m-%d}")
        description = adf_to_text(fields.get("description")) or "(no description)"
        sections = [DocumentSection("ticket", f"# {key}: {summary}\n{' · '.join(facts)}\n\n{description}", key)]
        for comment in comments:
            who, day = _name(comment.get("author")) or "someone", parse_time(comment.get("created"))
            heading = f"Comment by {who} on {day:%Y-%m-%d}"
            sections.append(DocumentSection("comment", f"## {heading}\n\n{adf_to_text(comment.get('body'))}", heading))
        return ChangedDocument(
            path=key,
            title=f"{key}: {summary}",
            sections=sections,
            last_modified=parse_time(fields.get("updated")),
            source_type=self.source_type,
            url=f"{self.config.base_url}/browse/{key}",
            keys=(key,),
            state=status,
            author=_name(fields.get("reporter")),
        )

    # -- the Connector protocol -----------------------------------------------------------------------------

    async def changes(self, cursor: str | None) -> ChangePage:
        state = load_cursor(cursor)
        run: dict[str, Any] = dict(state.get("run") or {})
        if not run:
            me = (await self.http.request("GET", "rest/api/3/myself")).json()
            run = {"jql": self._jql(state.get("since"), me.get("timeZone"))}
        request = {"jql": run["jql"], "fields": FIELDS, "maxResults": self.config.page_size}
        if run.get("token"):
            request["nextPageToken"] = run["token"]
        try:
            response = await self.http.request("POST", "rest/api/3/search/jql", json=request)
        except ToolError as exc:
            if not run.get("token") or exc.details.get("status") != 400:
                raise
            request.pop("nextPageToken")  # an expired page token: ask the same search again from its start
            response = await self.http.request("POST", "rest/api/3/search/jql", json=request)
        body = response.json()
        started = run.get("started") or iso(self.http.server_time(response))
        documents = [await self._document(issue) for issue in body.get("issues") or []]
        token = body.get("nextPageToken")
        if token and not body.get("isLast", False):
            next_state = {"since": state.get("since"), "run": {"jql": run["jql"], "token": token, "started": started}}
            return ChangePage(documents=documents, cursor=dump_cursor(next_state), more=True)
        return ChangePage(documents=documents, cursor=dump_cursor({"since": started}), more=False)

    async def read(self, path: str) -> DocumentContent:
        key = match_path(path, _KEY, "PROJ-123").group(0)
        if self.config.projects and key.rsplit("-", 1)[0] not in self.config.projects:
            raise NotFound(f"{key} is not in the projects of this connector", details={"path": path})
        issue = (await self.http.request("GET", f"rest/api/3/issue/{key}", params={"fields": ",".join(FIELDS)})).json()
        return content_of(await self._document(issue))


def jira_connector_factory(context: ProviderContext) -> JiraConnector:
    assert isinstance(context.config, JiraConfig)
    return JiraConnector(context.config)
