"""GitHub's REST objects as the fake of :mod:`tests.fakes.github` serves them (users and repositories, in the shapes
of ``tests/fakes/schemas/github-rest-subset.json``), and its scripted rate-limit answers."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from tests.fakes.hosted import Scripted

API = "https://api.github.com"


def stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def user(login: str, number: int = 1) -> dict[str, Any]:
    base = f"{API}/users/{login}"
    return {
        "login": login,
        "id": number,
        "node_id": f"U_{number}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
        "gravatar_id": "",
        "url": base,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}",
        "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs",
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events",
        "type": "User",
        "site_admin": False,
    }


_REPO_URLS = (
    "archive assignees blobs branches collaborators comments commits compare contents contributors deployments "
    "downloads events forks git_commits git_refs git_tags hooks issue_comment issue_events issues keys labels "
    "languages merges milestones notifications pulls releases stargazers statuses subscribers subscription tags "
    "teams trees"
).split()


def repository(full_name: str, number: int) -> dict[str, Any]:
    owner, name = full_name.split("/")
    base = f"{API}/repos/{full_name}"
    repo: dict[str, Any] = {f"{part}_url": f"{base}/{part.replace('_', '/')}" for part in _REPO_URLS}
    stamp = "2024-01-01T00:00:00Z"
    repo.update(
        id=number,
        node_id=f"R_{number}",
        name=name,
        full_name=full_name,
        owner=user(owner, 9000 + number),
        private=False,
        html_url=f"https://github.com/{full_name}",
        description="A repository of the fake",
        fork=False,
        url=base,
        clone_url=f"https://github.com/{full_name}.git",
        git_url=f"git://github.com/{full_name}.git",
        ssh_url=f"git@github.com:{full_name}.git",
        svn_url=f"https://github.com/{full_name}",
        mirror_url=None,
        homepage=None,
        language="Python",
        forks=0,
        forks_count=0,
        stargazers_count=0,
        watchers=0,
        watchers_count=0,
        size=1,
        default_branch="main",
        open_issues=0,
        open_issues_count=0,
        has_issues=True,
        has_projects=False,
        has_wiki=False,
        has_pages=False,
        has_downloads=True,
        archived=False,
        disabled=False,
        license=None,
        pushed_at=stamp,
        created_at=stamp,
        updated_at=stamp,
    )
    return repo


def secondary_limit(retry_after: int = 3, match: str = "") -> Scripted:
    """GitHub's 403 for a secondary rate limit, with its ``retry-after``."""
    return Scripted(
        403,
        {
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
            "If you reach out to GitHub Support for help, please include the request ID 0000:0000.",
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
            "#about-secondary-rate-limits",
        },
        {"retry-after": str(retry_after), "x-ratelimit-remaining": "4990"},
        match,
    )


def primary_limit(reset_in: int, match: str = "") -> Scripted:
    """GitHub's 403 when the hourly limit is used up (``x-ratelimit-remaining: 0`` until ``x-ratelimit-reset``)."""
    return Scripted(
        403,
        {
            "message": "API rate limit exceeded for user ID 1.",
            "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
        },
        {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": "5000",
            "x-ratelimit-reset": str(int(time.time()) + reset_in),
            "x-ratelimit-resource": "core",
        },
        match,
    )
