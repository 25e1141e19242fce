"""A local fake of the GitHub REST API (version 2022-11-28), for the ``github`` connector's tests.

Answers what the connector asks, with GitHub's documented shapes (objects valid against the OpenAPI description of
``tests/fakes/schemas/github-rest-subset.json``):

* ``GET /repos/{owner}/{repo}/issues`` (``state``, ``sort``, ``direction``, ``since``, ``per_page``, ``page``):
  issues and pull requests, ``Link`` headers to ``/repositories/{id}/issues?...&page=N`` as GitHub writes them,
  an ``ETag``, and ``304 Not Modified`` for a matching ``If-None-Match``;
* ``GET /repos/{owner}/{repo}/issues/{n}`` and ``/issues/{n}/comments``, ``GET /repos/{owner}/{repo}/pulls/{n}``,
  ``/pulls/{n}/files`` and ``/pulls/{n}/comments`` (paginated lists with ``Link``);
* ``x-ratelimit-*`` headers on every answer, ``401 Bad credentials`` without a valid token, ``404 Not Found``
  bodies (``message``, ``documentation_url``, ``status``).

Rate-limit answers (403 secondary limit with ``retry-after``, 403 with ``x-ratelimit-remaining: 0``, 429) and 5xx
are scripted with :meth:`HostedFake.script` and :func:`secondary_limit`/:func:`primary_limit` (with the users and
repositories the fake serves, in :mod:`tests.fakes.github_objects`; both are importable from here too).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.requests import Request
from starlette.responses import Response

from tests.fakes.github_objects import API, primary_limit, repository, secondary_limit, stamp, user
from tests.fakes.hosted import HostedFake, json_response

__all__ = ["FakeGitHub", "fake_github", "primary_limit", "secondary_limit"]

DOCS = "https://docs.github.com/rest"


class FakeGitHub(HostedFake):
    """One repository (``owner/repo``) with issues and pull requests; see the module docstring."""

    name = "github"

    def __init__(self, repo: str = "octo/shop", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.repo_id = 4242
        self.issues: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: dict[int, dict[str, Any]] = {}
        self.files: dict[int, list[dict[str, Any]]] = {}
        self.reviews: dict[int, list[dict[str, Any]]] = {}
        self.remaining = 5000
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        """The server's clock (its ``Date`` header): tests move it."""
        self._ids = 100

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    # -- the repository's content ----------------------------------------------------------------------------

    def add_issue(
        self,
        number: int,
        title: str,
        body: str | None,
        *,
        updated: datetime,
        author: str = "ada",
        labels: tuple[str, ...] = (),
        state: str = "open",
        pull: bool = False,
    ) -> dict[str, Any]:
        base = f"{API}/repos/{self.repo}/issues/{number}"
        html = f"https://github.com/{self.repo}/{'pull' if pull else 'issues'}/{number}"
        issue: dict[str, Any] = {
            "id": self._next_id(),
            "node_id": f"I_{number}",
            "url": base,
            "repository_url": f"{API}/repos/{self.repo}",
            "labels_url": f"{base}/labels{{/name}}",
            "comments_url": f"{base}/comments",
            "events_url": f"{base}/events",
            "html_url": html,
            "number": number,
            "state": state,
            "state_reason": "completed" if state == "closed" else None,
            "title": title,
            "body": body,
            "user": user(author),
            "labels": [
                {"id": i + 1, "node_id": f"L_{i}", "url": f"{API}/labels/{n}", "name": n, "color": "d73a4a"}
                for i, n in enumerate(labels)
            ],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "comments": 0,
            "created_at": stamp(updated),
            "updated_at": stamp(updated),
            "closed_at": stamp(updated) if state == "closed" else None,
            "author_association": "MEMBER",
        }
        if pull:
            issue["pull_request"] = {
                "url": f"{API}/repos/{self.repo}/pulls/{number}",
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": None,
            }
        self.issues[number] = issue
        self.comments.setdefault(number, [])
        return issue

    def add_pull(
        self,
        number: int,
        title: str,
        body: str,
        *,
        updated: datetime,
        head: str,
        files: list[str],
        merged: bool = False,
        author: str = "ada",
    ) -> dict[str, Any]:
        issue = self.add_issue(
            number, title, body, updated=updated, author=author, pull=True, state="closed" if merged else "open"
        )
        if merged:
            issue["pull_request"]["merged_at"] = stamp(updated)
        base = f"{API}/repos/{self.repo}/pulls/{number}"
        repo = repository(self.repo, self.repo_id)
        self.pulls[number] = {
            **{k: issue[k] for k in ("id", "node_id", "html_url", "number", "state", "locked", "title", "body")},
            **{k: issue[k] for k in ("user", "labels", "milestone", "created_at", "updated_at", "closed_at")},
            "url": base,
            "diff_url": f"{issue['html_url']}.diff",
            "patch_url": f"{issue['html_url']}.patch",
            "issue_url": issue["url"],
            "commits_url": f"{base}/commits",
            "review_comments_url": f"{base}/comments",
            "review_comment_url": f"{API}/repos/{self.repo}/pulls/comments{{/number}}",
            "comments_url": issue["comments_url"],
            "statuses_url": f"{API}/repos/{self.repo}/statuses/{'a' * 40}",
            "assignee": None,
            "merged_at": issue["pull_request"]["merged_at"],
            "merge_commit_sha": "b" * 40 if merged else None,
            "head": {"label": f"octo:{head}", "ref": head, "sha": "c" * 40, "user": user("octo", 2), "repo": repo},
            "base": {"label": "octo:main", "ref": "main", "sha": "d" * 40, "user": user("octo", 2), "repo": repo},
            "_links": {
                name: {"href": href}
                for name, href in {
                    "self": base,
                    "html": issue["html_url"],
                    "issue": issue["url"],
                    "comments": issue["comments_url"],
                    "review_comments": f"{base}/comments",
                    "review_comment": f"{API}/repos/{self.repo}/pulls/comments{{/number}}",
                    "commits": f"{base}/commits",
                    "statuses": f"{API}/repos/{self.repo}/statuses/{'a' * 40}",
                }.items()
            },
            "author_association": "MEMBER",
            "auto_merge": None,
            "draft": False,
            "merged": merged,
            "mergeable": None,
            "mergeable_state": "unknown",
            "merged_by": user("octo", 2) if merged else None,
            "comments": 0,
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": 1,
            "additions": 10 * len(files),
            "deletions": 2 * len(files),
            "changed_files": len(files),
        }
        self.files[number] = [
            {
                "sha": "e" * 40,
                "filename": path,
                "status": "modified",
                "additions": 10,
                "deletions": 2,
                "changes": 12,
                "blob_url": f"https://github.com/{self.repo}/blob/{'c' * 40}/{path}",
                "raw_url": f"https://github.com/{self.repo}/raw/{'c' * 40}/{path}",
                "contents_url": f"{API}/repos/{self.repo}/contents/{path}?ref={'c' * 40}",
                "patch": "@@ -1 +1 @@",
            }
            for path in files
        ]
        self.reviews[number] = []
        return issue

    def comment(self, number: int, body: str, *, at: datetime, author: str = "bob") -> None:
        """A comment on an issue or a pull request (which updates it, as on GitHub)."""
        cid = self._next_id()
        issue = self.issues[number]
        self.comments[number].append(
            {
                "id": cid,
                "node_id": f"IC_{cid}",
                "url": f"{API}/repos/{self.repo}/issues/comments/{cid}",
                "html_url": f"{issue['html_url']}#issuecomment-{cid}",
                "issue_url": issue["url"],
                "body": body,
                "user": user(author, 3),
                "created_at": stamp(at),
                "updated_at": stamp(at),
                "author_association": "MEMBER",
            }
        )
        issue["comments"] = len(self.comments[number])
        issue["updated_at"] = stamp(at)
        if number in self.pulls:
            self.pulls[number]["comments"] = issue["comments"]
            self.pulls[number]["updated_at"] = stamp(at)

    def review(self, number: int, path: str, line: int, body: str, *, at: datetime, author: str = "carol") -> None:
        rid = self._next_id()
        pull = self.pulls[number]
        self.reviews[number].append(
            {
                "url": f"{API}/repos/{self.repo}/pulls/comments/{rid}",
                "id": rid,
                "node_id": f"RC_{rid}",
                "pull_request_review_id": rid,
                "diff_hunk": "@@ -1 +1 @@",
                "path": path,
                "line": line,
                "commit_id": "c" * 40,
                "original_commit_id": "c" * 40,
                "user": user(author, 4),
                "body": body,
                "created_at": stamp(at),
                "updated_at": stamp(at),
                "html_url": f"{pull['html_url']}#discussion_r{rid}",
                "pull_request_url": pull["url"],
                "author_association": "MEMBER",
                "_links": {
                    "self": {"href": f"{API}/repos/{self.repo}/pulls/comments/{rid}"},
                    "html": {"href": f"{pull['html_url']}#discussion_r{rid}"},
                    "pull_request": {"href": pull["url"]},
                },
            }
        )
        pull["review_comments"] = len(self.reviews[number])
        self.issues[number]["updated_at"] = pull["updated_at"] = stamp(at)

    def edit(self, number: int, *, body: str, at: datetime) -> None:
        self.issues[number]["body"] = body
        self.issues[number]["updated_at"] = stamp(at)
        if number in self.pulls:
            self.pulls[number]["body"] = body
            self.pulls[number]["updated_at"] = stamp(at)

    # -- the HTTP side ---------------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        if self.remaining == 0:  # the client waited for the reset: a new window
            self.remaining = 5000
        self.remaining -= 1
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-used": str(5000 - self.remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-resource": "core",
            "x-github-api-version-selected": "2022-11-28",
            "x-github-media-type": "github.v3; format=json",
            "date": format_datetime(self.now(), usegmt=True),
        }

    def _error(self, status: int, message: str) -> Response:
        return json_response({"message": message, "documentation_url": DOCS, "status": str(status)}, status)

    def unauthorised(self, request: Request) -> Response | None:
        if self.token_of(request) in self.tokens:
            return None
        return self._error(401, "Bad credentials")

    def _page(self, request: Request, items: list[dict[str, Any]], link_path: str) -> Response:
        query = dict(request.query_params)
        per_page = min(100, int(query.get("per_page", 30)))
        page = int(query.get("page", 1))
        chosen = items[(page - 1) * per_page : page * per_page]
        headers = self._headers()
        last = max(1, -(-len(items) // per_page))
        rels = ([("prev", page - 1)] if page > 1 else []) + (
            [("next", page + 1), ("last", last)] if page < last else []
        )
        rels += [("first", 1)] if page > 1 else []
        links = [f'<{self.base_url}{link_path}?{urlencode({**query, "page": n})}>; rel="{rel}"' for rel, n in rels]
        if links:
            headers["link"] = ", ".join(links)
        body = json.dumps(chosen)
        headers["etag"] = 'W/"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'
        if request.headers.get("if-none-match") == headers["etag"]:
            self.remaining += 1  # a 304 does not count against the rate limit
            return Response(status_code=304, headers=headers)
        return json_response(chosen, headers=headers)

    def answer(self, request: Request, payload: Any) -> Response:
        path = request.url.path
        prefix = f"/repos/{self.repo}"
        if path in (f"{prefix}/issues", f"/repositories/{self.repo_id}/issues"):
            return self._list_issues(request)
        rest = path[len(prefix) :] if path.startswith(prefix + "/") else None
        parts = rest.strip("/").split("/") if rest else []
        if len(parts) >= 2 and parts[1].isdigit():
            number = int(parts[1])
            if parts[0] == "issues" and number in self.issues:
                if len(parts) == 2:
                    return json_response(self.issues[number], headers=self._headers())
                if parts[2:] == ["comments"]:
                    return self._page(request, self.comments[number], path)
            if parts[0] == "pulls" and number in self.pulls:
                if len(parts) == 2:
                    return json_response(self.pulls[number], headers=self._headers())
                if parts[2:] == ["files"]:
                    return self._page(request, self.files[number], path)
                if parts[2:] == ["comments"]:
                    return self._page(request, self.reviews[number], path)
        return self._error(404, "Not Found")

    def _list_issues(self, request: Request) -> Response:
        query = request.query_params
        items = list(self.issues.values())
        state = query.get("state", "open")
        if state != "all":
            items = [i for i in items if i["state"] == state]
        if query.get("since"):
            since = datetime.fromisoformat(query["since"].replace("Z", "+00:00"))
            items = [i for i in items if datetime.fromisoformat(i["updated_at"].replace("Z", "+00:00")) >= since]
        key = "updated_at" if query.get("sort") == "updated" else "created_at"
        items.sort(key=lambda i: (i[key], i["number"]), reverse=query.get("direction", "desc") == "desc")
        return self._page(request, items, f"/repositories/{self.repo_id}/issues")


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake  # type: ignore[misc]
