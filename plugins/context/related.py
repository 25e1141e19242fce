"""``context.get_related_info``: what surrounds a file or a ticket.

For a file: its git history (commits, authors, co-changed files), the indexed files it imports and that import it,
its definitions, and from the hosted connectors the pull requests that changed it, the tickets those pull requests
and its commit messages mention, and the discussions about those tickets. For a ticket id (``PROJ-123``, ``#42``,
``org/repo#42``): the ticket itself, the commits whose message mentions it and the files they touched, the pull
requests that mention it (a branch ``feat/PROJ-123-...`` or "Fixes #42") and their files, other tickets and the
discussions that mention it."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from gateway.api import Connector, NotFound, ValidationFailed
from gateway_plugins.context.links import LinkedDocuments, linked_documents
from gateway_plugins.context.models import AuthorStat, Commit, RelatedInput, RelatedOutput
from gateway_plugins.context.refs import normalise, ticket_ids
from gateway_plugins.context.search import connector_paths, connector_roots, looks_absolute
from gateway_plugins.context.service import ContextService

__all__ = ["related_info"]


def _commit(entry: Any) -> Commit:
    return Commit(
        id=entry.id, author=entry.author, timestamp=entry.timestamp, message=entry.message, files=list(entry.paths)
    )


async def related_info(service: ContextService, tenant: str, args: RelatedInput) -> RelatedOutput:
    if not args.file_path and not args.ticket_id:
        raise ValidationFailed(
            "give file_path or ticket_id",
            details={"errors": [{"field": "file_path", "message": "file_path or ticket_id is required"}]},
        )
    if args.file_path:
        return await _for_file(service, tenant, args.file_path)
    return await _for_ticket(service, tenant, str(args.ticket_id))


async def _for_file(service: ContextService, tenant: str, raw_path: str) -> RelatedOutput:
    assert service.connectors is not None and service.live is not None and service.ranker is not None
    rows = await service.repo.list_connectors(service.store, tenant)
    roots = await connector_roots(service, rows) if looks_absolute(raw_path) else None
    paths = connector_paths(raw_path, rows, "file_path", roots)
    if paths is None:
        message = (
            "an absolute path must lie under the root of one of your connectors; give it relative to the "
            "repository root, or add its repository with context.connector_management"
        )
        raise ValidationFailed(
            f"file_path: {raw_path[:200]!r} is under no connector's root: {message}",
            details={"errors": [{"field": "file_path", "message": message}]},
        )
    index = service.live.index
    await service.live.catch_up(max_age=service.config.refresh_seconds)
    for row in rows:
        path = paths.get(row["id"])
        file_row = index.file_by_path.get((row["id"], path)) if path is not None else None
        if path is None or file_row is None:
            continue
        connector: Connector = await service.connectors.instance(row)
        history = await connector.history(path, limit=service.config.history_limit)
        commits = [_commit(e) for e in history]
        authors = Counter(c.author for c in commits)
        co_changed = Counter(p for c in commits for p in c.files if p != path)
        imports, importers = service.ranker.graph.neighbours(file_row)
        entry = index.files[file_row]
        symbols = [index.chunks[r].symbol for r in entry.rows if index.chunks[r].symbol and index.alive[r]]
        last = ""
        if commits:
            first_line = commits[0].message.splitlines()[0] if commits[0].message else ""
            last = f", last on {commits[0].timestamp:%Y-%m-%d} by {commits[0].author}: {first_line}"
        connector_ids = [c["id"] for c in rows]
        mentioned = [found for commit in commits for found in ticket_ids(commit.message)]
        linked = await linked_documents(
            service.repo, service.store, connector_ids, ticket_ids=list(dict.fromkeys(mentioned)), paths=[path]
        )
        summary = (
            f"{path}: {len(commits)} recent commit(s) by {len(authors)} author(s)"
            + (last or " (no git history available)")
            + f"; imports {len(imports)} indexed file(s), imported by {len(importers)}"
            + _hosted_summary(len(linked.pull_requests), len(linked.own + linked.tickets), len(linked.discussions))
            + "."
        )
        return RelatedOutput(
            file_path=path,
            connector_id=row["public_id"],
            summary=summary,
            commits=commits,
            authors=[AuthorStat(author=a, commits=n) for a, n in authors.most_common()],
            imports=sorted(index.files[i].path for i in imports),
            imported_by=sorted(index.files[i].path for i in importers),
            co_changed=[p for p, _ in co_changed.most_common(10)],
            symbols=list(dict.fromkeys(symbols))[:100],
            **_shown(linked, {c["id"]: c["public_id"] for c in rows}),
        )
    path = next(iter(paths.values()), raw_path)
    raise NotFound(
        f"{path!r} is not indexed by any of your connectors (add its repository with context.connector_management "
        "and run context.index_control start)",
        details={"field": "file_path", "path": path},
    )


async def _for_ticket(service: ContextService, tenant: str, ticket: str) -> RelatedOutput:
    assert service.connectors is not None
    forms = normalise(ticket)
    if not forms:
        raise ValidationFailed(
            f"ticket_id: {ticket!r} is not a ticket id (PROJ-123, #42, org/repo#42)",
            details={"errors": [{"field": "ticket_id", "message": "not a ticket id"}]},
        )
    wanted = set(forms)
    pattern = re.compile(rf"(?<![\w-]){re.escape(ticket.strip())}(?![\w])", re.IGNORECASE)
    commits: list[Commit] = []
    rows = await service.repo.list_connectors(service.store, tenant)
    for row in rows:
        connector = await service.connectors.instance(row)
        for entry in await connector.history(None, limit=max(service.config.history_limit, 200)):
            if pattern.search(entry.message) or wanted & set(ticket_ids(entry.message)):
                commits.append(_commit(entry))
    linked = await linked_documents(service.repo, service.store, [r["id"] for r in rows], ticket_ids=forms)
    files = Counter(p for c in commits for p in c.files)
    for path in linked.files:
        files[path] += 1
    found = f"{linked.own[0]['title']!r} ({linked.own[0]['state']})" if linked.own else "not in any connected tracker"
    summary = (
        f"{forms[0]}: {found}; mentioned in {len(commits)} commit message(s)"
        + _hosted_summary(len(linked.pull_requests), len(linked.tickets), len(linked.discussions), other=True)
        + f"; {len(files)} file(s) touched."
    )
    return RelatedOutput(
        ticket_id=forms[0],
        summary=summary,
        commits=commits[: service.config.history_limit],
        authors=[AuthorStat(author=a, commits=n) for a, n in Counter(c.author for c in commits).most_common()],
        co_changed=[p for p, _ in files.most_common(20)],
        **_shown(linked, {c["id"]: c["public_id"] for c in rows}),
    )


def _shown(linked: LinkedDocuments, public_ids: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The linked documents as related info lists them, each naming its connector by the id its tenant knows."""

    def shown(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**doc, "connector_id": public_ids[doc["connector_id"]]} for doc in documents[:20]]

    return {
        "pull_requests": shown(linked.pull_requests),
        "tickets": shown(linked.own + linked.tickets),
        "discussions": shown(linked.discussions),
    }


def _hosted_summary(pulls: int, tickets: int, discussions: int, *, other: bool = False) -> str:
    if not (pulls or tickets or discussions):
        return ""
    return (
        f"; {pulls} pull request(s), {tickets} {'other ' if other else ''}ticket(s) and {discussions} discussion(s) "
        "linked"
    )
