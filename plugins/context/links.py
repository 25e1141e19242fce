"""What links hosted documents (issues, pull requests, tickets, threads) to each other and to the indexed code.

Read from ``ctx_links`` (written with each document, :mod:`.documents`): a document's own ids (``key``), the ticket
ids its text mentions (``mentions``), the repository paths it changes (``changes``). Used by
``context.get_related_info`` (a file's pull requests and tickets; a ticket's pull requests, discussions and files)
and by ``context.search`` (``work_context.open_ticket_ids`` and the ticket in ``git_branch`` favour their tickets,
the documents that mention them, and the files their pull requests changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway_plugins.context.refs import branch_ticket_ids, normalise
from gateway_plugins.context.repository import Db, Repository
from gateway_plugins.context.retrieval.search_index import SearchIndex

__all__ = ["LinkedDocuments", "document_summary", "linked_documents", "work_context_boosts", "work_ticket_ids"]


@dataclass
class LinkedDocuments:
    """Hosted documents linked to some ticket ids or paths, sorted by what they are."""

    own: list[dict[str, Any]] = field(default_factory=list)
    """The tickets (issues) themselves."""
    pull_requests: list[dict[str, Any]] = field(default_factory=list)
    tickets: list[dict[str, Any]] = field(default_factory=list)
    discussions: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """Repository paths changed by the pull requests among them."""


def document_summary(row: dict[str, Any], links: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A document as related info lists it."""
    keys = [link["value"] for link in links if link["file_id"] == row["file_id"] and link["relation"] == "key"]
    changes = [link["value"] for link in links if link["file_id"] == row["file_id"] and link["relation"] == "changes"]
    summary = {
        "id": keys[0] if keys else row["path"],
        "title": row["title"],
        "kind": row["kind"],
        "state": row["state"],
        "author": row["author"],
        "url": row["url"],
        "source": f"{row['source_type']}://{row['path']}",
        "source_type": row["source_type"],
        "connector_id": row["connector_id"],
        "last_modified": row["last_modified"].isoformat()
        if hasattr(row["last_modified"], "isoformat")
        else str(row["last_modified"]),
    }
    if changes:
        summary["files"] = changes
    return summary


async def linked_documents(
    repo: Repository,
    db: Db,
    connector_ids: Sequence[str],
    *,
    ticket_ids: Sequence[str] = (),
    paths: Sequence[str] = (),
) -> LinkedDocuments:
    """The documents that are one of ``ticket_ids``, mention one, or change one of ``paths``; and, one step
    further, the tickets those documents mention (a pull request's "Fixes PROJ-7") and what mentions those."""
    own = await repo.linked(db, connector_ids, ["key"], ticket_ids)
    mentioning = await repo.linked(db, connector_ids, ["mentions"], ticket_ids)
    changing = await repo.linked(db, connector_ids, ["changes"], paths)
    first = {row["file_id"] for row in own + mentioning + changing}
    links = await repo.links_of(db, sorted(first)) if first else []
    mentioned = sorted({link["value"] for link in links if link["relation"] == "mentions"} - set(ticket_ids))
    further = await repo.linked(db, connector_ids, ["key", "mentions"], mentioned) if mentioned else []
    extra = {row["file_id"] for row in further} - first
    if extra:
        links += await repo.links_of(db, sorted(extra))
    documents = await repo.documents_by_file(db, sorted(first | extra))
    own_ids = {row["file_id"] for row in own}
    result = LinkedDocuments()
    for file_id, row in sorted(documents.items(), key=lambda item: str(item[1]["last_modified"]), reverse=True):
        summary = document_summary(row, links)
        if file_id in own_ids:
            result.own.append(summary)
        elif row["kind"] == "pull_request":
            result.pull_requests.append(summary)
        elif row["source_type"] == "slack" or row["kind"] in ("thread", "message"):
            result.discussions.append(summary)
        else:
            result.tickets.append(summary)
    for summary in result.own + result.pull_requests:
        result.files.extend(path for path in summary.get("files", []) if path not in result.files)
    return result


def work_ticket_ids(open_ticket_ids: Sequence[str] | None, git_branch: str | None) -> list[str]:
    """The tickets a user is working on: the open ones, and the one a branch name carries."""
    ids = [form for ticket in open_ticket_ids or () for form in normalise(ticket)]
    if git_branch:
        ids.extend(branch_ticket_ids(git_branch))
    return list(dict.fromkeys(ids))


async def work_context_boosts(
    repo: Repository,
    db: Db,
    index: SearchIndex,
    connector_ids: Sequence[str],
    ticket_ids: Sequence[str],
    *,
    ticket_boost: float,
    linked_file_boost: float,
) -> dict[int, float]:
    """File rows of the search index to favour, with their factor: the tickets being worked on and the documents
    that mention them (``1 + ticket_boost``), the files their pull requests change (``1 + linked_file_boost``)."""
    if not ticket_ids or (ticket_boost <= 0 and linked_file_boost <= 0):
        return {}
    linked = await linked_documents(repo, db, connector_ids, ticket_ids=ticket_ids)
    boosts: dict[int, float] = {}
    for summary in linked.own + linked.pull_requests + linked.discussions + linked.tickets:
        path = summary["source"].split("://", 1)[1]
        row = index.file_by_path.get((summary["connector_id"], path))
        if row is not None:
            boosts[row] = 1.0 + ticket_boost
    for path in linked.files:
        for connector_id in connector_ids:
            row = index.file_by_path.get((connector_id, path))
            if row is not None and row not in boosts:
                boosts[row] = 1.0 + linked_file_boost
    return boosts
