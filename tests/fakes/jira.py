"""A local fake of the Jira Cloud platform REST API v3, for the ``jira`` connector's tests.

Endpoints, with Atlassian's documented shapes (``tests/fakes/schemas/jira-rest-v3-subset.json``):

* ``GET /rest/api/3/myself``: the account, with its ``timeZone`` (JQL dates are read in it);
* ``POST /rest/api/3/search/jql``: the enhanced search (``jql``, ``fields``, ``maxResults``, ``nextPageToken``) ->
  ``{"issues", "nextPageToken", "isLast"}``, the token left out on the last page. The JQL this fake understands is
  what the connector writes: ``project in ("A", "B")``, a parenthesised filter of ``labels = x`` terms,
  ``updated >= "yyyy-MM-dd HH:mm"`` (in the account's time zone) and ``ORDER BY updated ASC, key ASC``; anything
  else is a ``400`` with Jira's error body;
* ``GET /rest/api/3/issue/{key}`` (``fields``) and ``GET /rest/api/3/issue/{key}/comment`` (``startAt``,
  ``maxResults``): the search returns at most ``comments_in_search`` comments of an issue, as Jira does, so the
  connector has to page through the rest.

Descriptions and comment bodies are Atlassian Document Format. ``401`` without a valid token (Basic with the
account's email, or Bearer); ``404`` with ``errorMessages`` for an unknown issue; rate limits (``429`` with
``Retry-After``, ``X-RateLimit-*`` and ``RateLimit-Reason``) are scripted with :func:`rate_limited`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from starlette.requests import Request
from starlette.responses import Response

from tests.fakes.hosted import HostedFake, Scripted, json_response

__all__ = ["FakeJira", "adf", "fake_jira", "rate_limited"]


def adf(*paragraphs: str) -> dict[str, Any]:
    """An ADF document of plain paragraphs."""
    return {
        "type": "doc",
        "version": 1,
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]} for text in paragraphs],
    }


def rate_limited(retry_after: int = 2, match: str = "") -> Scripted:
    return Scripted(
        429,
        {"errorMessages": ["Rate limit exceeded."], "errors": {}},
        {
            "retry-after": str(retry_after),
            "x-ratelimit-limit": "100",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
            "ratelimit-reason": "jira-burst-based",
        },
        match,
    )


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")


def _person(name: str) -> dict[str, Any]:
    return {
        "accountId": f"5b10a2844c20165700ede{len(name):03d}",
        "displayName": name,
        "active": True,
        "timeZone": "Europe/Berlin",
        "accountType": "atlassian",
        "self": f"https://example.atlassian.net/rest/api/3/user?accountId={name}",
    }


def _errors(status: int, *messages: str) -> Response:
    return json_response({"errorMessages": list(messages), "errors": {}}, status)


class FakeJira(HostedFake):
    name = "jira"

    def __init__(self, *, email: str = "ada@example.com", time_zone: str = "Europe/Berlin", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.email = email
        self.time_zone = time_zone
        self.issues: dict[str, dict[str, Any]] = {}
        self.comments: dict[str, list[dict[str, Any]]] = {}
        self.comments_in_search = 2
        self._ids = 10000

    # -- the site's content ------------------------------------------------------------------------------------

    def add_issue(
        self,
        key: str,
        summary: str,
        description: dict[str, Any] | None,
        *,
        updated: datetime,
        status: str = "To Do",
        kind: str = "Bug",
        labels: tuple[str, ...] = (),
        reporter: str = "Ada Lovelace",
    ) -> dict[str, Any]:
        self._ids += 1
        project = key.rsplit("-", 1)[0]
        issue = {
            "id": str(self._ids),
            "key": key,
            "self": f"{self.base_url}/rest/api/3/issue/{self._ids}",
            "fields": {
                "summary": summary,
                "description": description,
                "status": {"name": status, "id": "1", "statusCategory": {"key": "new", "name": "To Do"}},
                "issuetype": {"name": kind, "id": "10001", "subtask": False},
                "priority": {"name": "High", "id": "2"},
                "labels": list(labels),
                "assignee": None,
                "reporter": _person(reporter),
                "created": _stamp(updated),
                "updated": _stamp(updated),
                "project": {"key": project, "id": "10000", "name": project.title()},
            },
        }
        self.issues[key] = issue
        self.comments[key] = []
        return issue

    def comment(self, key: str, body: dict[str, Any], *, at: datetime, author: str = "Bob Builder") -> None:
        self._ids += 1
        self.comments[key].append(
            {
                "id": str(self._ids),
                "self": f"{self.base_url}/rest/api/3/issue/{key}/comment/{self._ids}",
                "author": _person(author),
                "updateAuthor": _person(author),
                "body": body,
                "created": _stamp(at),
                "updated": _stamp(at),
                "jsdPublic": True,
            }
        )
        self.issues[key]["fields"]["updated"] = _stamp(at)

    # -- the HTTP side -------------------------------------------------------------------------------------

    def unauthorised(self, request: Request) -> Response | None:
        auth = request.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme == "Basic":
            try:
                email, _, token = base64.b64decode(value).decode().partition(":")
            except ValueError:
                email, token = "", ""
            if email == self.email and token in self.tokens:
                return None
        elif scheme == "Bearer" and value in self.tokens:
            return None
        return _errors(401, "Client must be authenticated to access this resource.")

    def _view(self, issue: dict[str, Any], fields: list[str]) -> dict[str, Any]:
        chosen = {name: issue["fields"][name] for name in fields if name in issue["fields"]}
        if "comment" in fields:
            comments = self.comments[issue["key"]]
            chosen["comment"] = {
                "comments": comments[: self.comments_in_search],
                "self": f"{issue['self']}/comment",
                "maxResults": self.comments_in_search,
                "total": len(comments),
                "startAt": 0,
            }
        return {"expand": "", "id": issue["id"], "self": issue["self"], "key": issue["key"], "fields": chosen}

    def _search(self, payload: Any) -> Response:
        if not isinstance(payload, dict) or not isinstance(payload.get("jql"), str):
            return _errors(400, "The request body must hold a 'jql' string.")
        jql = payload["jql"]
        body, _, order = jql.partition(" ORDER BY ")
        if order and order.strip() != "updated ASC, key ASC":
            return _errors(400, f"The JQL ordering '{order}' is not supported by this fake.")
        issues = list(self.issues.values())
        for clause in [c.strip() for c in body.split(" AND ") if c.strip()]:
            projects = re.fullmatch(r"project in \((.*)\)", clause)
            updated = re.fullmatch(r'updated >= "(\d{4}-\d{2}-\d{2} \d{2}:\d{2})"', clause)
            label = re.fullmatch(r"\(labels = (\w+)\)", clause)
            if projects:
                keys = {k.strip().strip('"') for k in projects.group(1).split(",")}
                issues = [i for i in issues if i["fields"]["project"]["key"] in keys]
            elif updated:
                since = datetime.strptime(updated.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(self.time_zone))
                issues = [
                    i for i in issues if datetime.strptime(i["fields"]["updated"], "%Y-%m-%dT%H:%M:%S.000%z") >= since
                ]
            elif label:
                issues = [i for i in issues if label.group(1) in i["fields"]["labels"]]
            else:
                return _errors(400, f"Error in the JQL Query: the clause '{clause}' is not understood.")
        issues.sort(key=lambda i: (i["fields"]["updated"], i["key"]))
        token = payload.get("nextPageToken")
        start = 0
        if token:
            try:
                start = int(base64.b64decode(token).decode().removeprefix("page:"))
            except ValueError:
                return _errors(400, "The nextPageToken is invalid or has expired.")
        size = max(1, min(100, int(payload.get("maxResults") or 50)))
        page = issues[start : start + size]
        fields = payload.get("fields") or ["id"]
        answer: dict[str, Any] = {
            "issues": [self._view(i, fields) for i in page],
            "isLast": start + size >= len(issues),
        }
        if not answer["isLast"]:
            answer["nextPageToken"] = base64.b64encode(f"page:{start + size}".encode()).decode()
        return json_response(answer)

    def answer(self, request: Request, payload: Any) -> Response:
        path = request.url.path
        if path == "/rest/api/3/myself" and request.method == "GET":
            return json_response({**_person("Ada Lovelace"), "emailAddress": self.email, "timeZone": self.time_zone})
        if path == "/rest/api/3/search/jql" and request.method == "POST":
            return self._search(payload)
        found = re.fullmatch(r"/rest/api/3/issue/([A-Z][A-Z0-9_]+-\d+)(/comment)?", path)
        if found and request.method == "GET":
            key = found.group(1)
            if key not in self.issues:
                return _errors(404, "Issue does not exist or you do not have permission to see it.")
            if found.group(2):
                start = int(request.query_params.get("startAt", 0))
                size = int(request.query_params.get("maxResults", 50))
                comments = self.comments[key]
                return json_response(
                    {
                        "startAt": start,
                        "maxResults": size,
                        "total": len(comments),
                        "comments": comments[start : start + size],
                    }
                )
            fields = (request.query_params.get("fields") or "summary").split(",")
            return json_response(self._view(self.issues[key], fields))
        return _errors(404, f"No resource at {path}.")


@pytest.fixture
def fake_jira() -> Iterator[FakeJira]:
    with FakeJira() as fake:
        yield fake  # type: ignore[misc]
