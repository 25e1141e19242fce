"""The ``github`` connector: a repository's issues and pull requests, with their comments and a PR's changed files.

GitHub REST API, version ``2022-11-28`` (sent as ``X-GitHub-Api-Version``). A sync lists
``GET /repos/{owner}/{repo}/issues?state=all&sort=updated&direction=asc&since=...`` (pull requests come in that
list too), each page asked ``since`` the last item's update time (see :meth:`GitHubConnector.changes`); for each
item it reads ``/issues/{n}/comments`` and, for a pull request, ``/pulls/{n}`` (branch names, merged or not),
``/pulls/{n}/files`` and ``/pulls/{n}/comments`` (review comments).

Incremental: the next sync asks ``since`` the server time (``Date``) of the first page of the last sync that found
something; a sync that found nothing keeps its ``since`` and sends the page's ``ETag`` as ``If-None-Match``, so an
unchanged repository costs one ``304`` (which GitHub does not count against the rate limit). Mid-sync the cursor
holds where the next page starts, so a resumed sync does not ask again for pages it stored.

Rate limits: ``Retry-After`` is honoured (429, and 403 secondary limits); ``x-ratelimit-remaining: 0`` waits until
``x-ratelimit-reset``, before the next request too; a secondary limit without either waits one minute, as GitHub's
documentation asks. Document paths: ``{owner}/{repo}/issues/{n}`` and ``{owner}/{repo}/pull/{n}``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
from pydantic import Field, field_validator

from gateway.api import (
    ChangedDocument,
    ChangePage,
    DocumentContent,
    DocumentSection,
    NotFound,
    ProviderContext,
)
from gateway_plugins.connectors.common import (
    content_of,
    dump_cursor,
    iso,
    load_cursor,
    match_path,
    parse_time,
)
from gateway_plugins.connectors.config import HostedConfig
from gateway_plugins.connectors.http import (
    HostedConnector,
    HostedHttp,
    Retry,
    default_judge,
    error_for,
    retry_after_seconds,
)

__all__ = ["API_VERSION", "GitHubConfig", "GitHubConnector", "github_connector_factory"]

API_VERSION = "2022-11-28"
_PATH = re.compile(r"(?P<repo>[^/]+/[^/]+)/(?P<kind>issues|pull)/(?P<number>[1-9][0-9]*)")
_SHAPE = "owner/repo/issues/N or owner/repo/pull/N"


class GitHubConfig(HostedConfig):
    """``connector_config`` of a ``github`` connector."""

    base_url: str = Field("https://api.github.com", description="GitHub Enterprise Server: https://HOST/api/v3.")
    repository: str = Field(description="owner/repo")
    include_issues: bool = True
    include_prs: bool = True
    include_comments: bool = Field(True, description="Issue and pull request comments, and review comments.")
    include_pr_files: bool = Field(True, description="A pull request's changed files (links it to the code).")
    per_page: int = Field(100, ge=1, le=100)

    @field_validator("repository")
    @classmethod
    def _owner_repo(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", value) or ".." in value:
            raise ValueError("must be owner/repo, e.g. 'octocat/hello-world'")
        return value


def _secondary(message: str) -> bool:
    return "secondary rate limit" in message.lower() or "abuse" in message.lower()


def github_judge(config: GitHubConfig) -> Callable[[httpx.Response], Awaitable[None]]:
    """GitHub's rate-limit answers (403 or 429) retried after the wait GitHub asks for; the rest as REST."""
    plain = default_judge("GitHub", token_hint=config.token_hint())

    async def judge(response: httpx.Response) -> None:
        status, headers = response.status_code, response.headers
        if status in (403, 429):
            now = time.time()
            try:
                message = str(response.json().get("message", ""))
            except (ValueError, AttributeError):
                message = ""
            after = retry_after_seconds(headers.get("retry-after"), now)
            if after is not None:
                raise Retry(f"GitHub rate limit ({status})", after, rate_limited=True)
            reset = headers.get("x-ratelimit-reset")
            if headers.get("x-ratelimit-remaining") == "0" and reset and reset.isdigit():
                raise Retry(f"GitHub rate limit exhausted ({status})", max(0.0, int(reset) - now) + 1, True)
            if status == 429 or _secondary(message):
                raise Retry(f"GitHub secondary rate limit ({status})", 60.0, rate_limited=True)
            raise error_for("GitHub", response, token_hint=config.token_hint())
        await plain(response)

    return judge


def _pause_after(response: httpx.Response, now: float) -> float | None:
    """After a success that used the last request of the window: wait for the reset before the next one."""
    reset = response.headers.get("x-ratelimit-reset", "")
    if response.status_code < 300 and response.headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        return max(0.0, int(reset) - now) + 1
    return None


def _login(user: Any) -> str:
    return str(user.get("login")) if isinstance(user, dict) and user.get("login") else "ghost"


def _day(value: str | None) -> str:
    return parse_time(value).strftime("%Y-%m-%d")


class GitHubConnector(HostedConnector):
    """Issues and pull requests of one repository (see the module docstring)."""

    type = "github"
    source_type = "github"

    def __init__(
        self,
        config: GitHubConfig,
        *,
        sleep: Callable[[float], Awaitable[Any]] = anyio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.repo = config.repository
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "mcp-gateway-context-connector",
        }
        if config.token is not None:
            headers["Authorization"] = f"Bearer {config.token.get_secret_value()}"
        self.http = HostedHttp(
            "GitHub",
            config.base_url,
            headers=headers,
            policy=config,
            judge=github_judge(config),
            pause_after=_pause_after,
            sleep=sleep,
            clock=clock,
        )

    # -- reading ---------------------------------------------------------------------------------------------

    async def _get(self, url: str, **kwargs: Any) -> httpx.Response:
        return await self.http.request("GET", url, **kwargs)

    async def _all(self, url: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list (``Link: rel="next"``)."""
        items: list[dict[str, Any]] = []
        response = await self._get(url, params={"per_page": self.config.per_page, **(params or {})})
        while True:
            items.extend(response.json())
            following = response.links.get("next", {}).get("url")
            if not following:
                return items
            response = await self._get(following)

    async def _document(self, item: dict[str, Any]) -> ChangedDocument:
        number = item["number"]
        base = f"repos/{self.repo}"
        is_pull = "pull_request" in item
        comments: list[dict[str, Any]] = []
        reviews: list[dict[str, Any]] = []
        files: list[dict[str, Any]] = []
        pull: dict[str, Any] = {}
        if self.config.include_comments and item.get("comments"):
            comments = await self._all(f"{base}/issues/{number}/comments")
        if is_pull:
            pull = (await self._get(f"{base}/pulls/{number}")).json()
            if self.config.include_pr_files:
                files = await self._all(f"{base}/pulls/{number}/files")
            if self.config.include_comments and pull.get("review_comments"):
                reviews = await self._all(f"{base}/pulls/{number}/comments")
        return self._render(item, pull, comments, reviews, files)

    def _render(
        self,
        item: dict[str, Any],
        pull: dict[str, Any],
        comments: list[dict[str, Any]],
        reviews: list[dict[str, Any]],
        files: list[dict[str, Any]],
    ) -> ChangedDocument:
        number, title = item["number"], item.get("title") or ""
        is_pull = "pull_request" in item
        key = f"{self.repo}#{number}"
        if is_pull:
            state = "merged" if pull.get("merged_at") else str(pull.get("state") or item.get("state"))
            if pull.get("draft"):
                state = f"draft, {state}"
        else:
            state = str(item.get("state"))
            if item.get("state_reason"):
                state = f"{state} ({item['state_reason']})"
        facts = [
            "Pull request" if is_pull else "Issue",
            state,
            f"opened by {_login(item.get('user'))} on {_day(item.get('created_at'))}",
        ]
        labels = [label.get("name") for label in item.get("labels") or [] if isinstance(label, dict)]
        if labels:
            facts.append("labels: " + ", ".join(str(name) for name in labels if name))
        if is_pull and pull:
            facts.append(f"branch {pull.get('head', {}).get('ref')} into {pull.get('base', {}).get('ref')}")
        head = f"# {title} ({key})\n{' · '.join(facts)}\n\n{(item.get('body') or '(no description)').strip()}"
        sections = [DocumentSection("pull_request" if is_pull else "issue", head, key)]
        for comment in comments:
            heading = f"Comment by {_login(comment.get('user'))} on {_day(comment.get('created_at'))}"
            sections.append(
                DocumentSection("comment", f"## {heading}\n\n{(comment.get('body') or '').strip()}", heading)
            )
        for review in reviews:
            where = f"{review.get('path')}:{review.get('line') or review.get('original_line') or ''}".rstrip(":")
            heading = f"Review comment by {_login(review.get('user'))} on {where}"
            sections.append(DocumentSection("review", f"## {heading}\n\n{(review.get('body') or '').strip()}", heading))
        paths: list[str] = []
        if files:
            lines = []
            for entry in files:
                paths.append(entry["filename"])
                if entry.get("previous_filename"):
                    paths.append(entry["previous_filename"])
                lines.append(
                    f"- {entry['filename']} ({entry.get('status')}, +{entry.get('additions', 0)} "
                    f"-{entry.get('deletions', 0)})"
                )
            sections.append(DocumentSection("files", "## Files changed\n\n" + "\n".join(lines), "Files changed"))
        return ChangedDocument(
            path=f"{self.repo}/{'pull' if is_pull else 'issues'}/{number}",
            title=title,
            sections=sections,
            last_modified=parse_time(item.get("updated_at")),
            source_type=self.source_type,
            url=item.get("html_url"),
            keys=(key, f"#{number}"),
            files=tuple(dict.fromkeys(paths)),
            state=state,
            author=_login(item.get("user")),
        )

    def _wanted(self, item: dict[str, Any]) -> bool:
        return self.config.include_prs if "pull_request" in item else self.config.include_issues

    # -- the Connector protocol -----------------------------------------------------------------------------

    async def changes(self, cursor: str | None) -> ChangePage:
        """Issues and pull requests updated since the last sync, oldest first. Pages follow the last item's update
        time (``since``), not page numbers: an item edited during the sync moves to the end of the list, which
        would shift later numbered pages by one and skip an item. Items of the boundary second come again (a
        repeat is harmless); a page wholly inside one second is followed by its ``next`` link instead."""
        state = load_cursor(cursor)
        headers: dict[str, str] = {}
        if state.get("next"):
            url, params = state["next"], None
        else:
            url = f"repos/{self.repo}/issues"
            params = {"state": "all", "sort": "updated", "direction": "asc", "per_page": self.config.per_page}
            if since := state.get("after") or state.get("since"):
                params["since"] = since
            if state.get("etag") and state.get("etag_query") == str(sorted(params.items())):
                headers["If-None-Match"] = state["etag"]
        response = await self._get(url, params=params, headers=headers or None)
        if response.status_code == 304:  # nothing changed since the last (empty) sync: it did not count
            return ChangePage(documents=[], cursor=dump_cursor(state), more=False)
        started = state.get("started") or iso(self.http.server_time(response))
        page = response.json()
        offered = set(state.get("offered", ()))  # the previous page's items of the boundary second
        items = [item for item in page if self._wanted(item) and _at(item) not in offered]
        documents = [await self._document(item) for item in items]
        found = int(state.get("found", 0)) + len(page)
        following = response.links.get("next", {}).get("url")
        if following:
            going = {"since": state.get("since"), "started": started, "found": found}
            last = iso(parse_time(page[-1].get("updated_at"))) if page else None
            if last is not None and last > (state.get("after") or ""):
                going |= {"after": last, "offered": [_at(item) for item in page if _at(item).endswith(last)]}
            else:  # the whole page shares one second: the next page of this very query
                going |= {"after": state.get("after"), "next": following}
            return ChangePage(documents=documents, cursor=dump_cursor(going), more=True)
        if found == 0 and params is not None:  # the same question next time: ask it conditionally
            done = {"since": state.get("since"), "etag": response.headers.get("etag")}
            done["etag_query"] = str(sorted(params.items()))
        else:
            done = {"since": started}
        return ChangePage(documents=documents, cursor=dump_cursor(done), more=False)

    async def read(self, path: str) -> DocumentContent:
        found = match_path(path, _PATH, _SHAPE)
        if found["repo"] != self.repo:
            raise NotFound(f"{path!r} is not in {self.repo}", details={"path": path})
        item = (await self._get(f"repos/{self.repo}/issues/{found['number']}")).json()
        if ("pull_request" in item) != (found["kind"] == "pull"):
            actual = "a pull request" if "pull_request" in item else "an issue"
            raise NotFound(f"{path!r}: #{found['number']} is {actual}", details={"path": path})
        return content_of(await self._document(item))


def github_connector_factory(context: ProviderContext) -> GitHubConnector:
    assert isinstance(context.config, GitHubConfig)
    return GitHubConnector(context.config)


def _at(item: dict[str, Any]) -> str:
    """An item's number and update time (``"12@2025-03-01T10:00:00Z"``): what a page boundary compares."""
    return f"{item.get('number')}@{iso(parse_time(item.get('updated_at')))}"
