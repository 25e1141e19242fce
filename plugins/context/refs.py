"""Ticket ids as people write them: in commit messages, branch names, issue bodies, chat, and as tool input.

Two families: Jira-style keys (``PROJ-123``: a project key of capitals and digits, a dash, a number) and GitHub
references (``#42``, ``org/repo#42``, ``GH-42``). In prose a key must be written in capitals (``UTF-8`` and
``SHA-256`` still match: harmless, no ticket has those ids); in a branch name any case counts
(``feat/proj-123-login``), and so does a leading issue number (``123-fix-login``, as GitHub names the branch it
creates for an issue). Everything is normalised to the form the connectors store as a document's keys: keys in
capitals, GitHub references as ``#N`` or ``owner/repo#N``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["branch_ticket_ids", "normalise", "ticket_ids"]

_KEY = re.compile(r"(?<![A-Za-z0-9_])([A-Z][A-Z0-9_]{1,9}-[1-9][0-9]{0,6})(?![0-9])")
_GITHUB = re.compile(r"(?<![\w&/.-])(?:([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?#([1-9][0-9]{0,6})(?![0-9A-Za-z])")
_GH = re.compile(r"(?<![A-Za-z0-9])GH-([1-9][0-9]{0,6})(?![0-9])", re.IGNORECASE)
_BRANCH_KEY = re.compile(r"(?<![A-Za-z0-9])([A-Za-z][A-Za-z0-9_]{1,9}-[1-9][0-9]{0,6})(?![0-9])")
_BRANCH_NUMBER = re.compile(r"(?:^|/)(?:issues?[-_]?)?([1-9][0-9]{0,6})(?=[-_/]|$)", re.IGNORECASE)


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def ticket_ids(text: str) -> list[str]:
    """Ticket ids mentioned in prose (a commit message, an issue body, a chat message), normalised."""
    found = [m.group(1) for m in _KEY.finditer(text) if not m.group(1).upper().startswith("GH-")]
    for match in _GITHUB.finditer(text):
        repo, number = match.group(1), match.group(2)
        found.append(f"{repo}#{number}" if repo else f"#{number}")
    found.extend(f"#{m.group(1)}" for m in _GH.finditer(text))
    return _unique(found)


def branch_ticket_ids(branch: str) -> list[str]:
    """Ticket ids in a branch name: ``feat/PROJ-123-new-feature`` -> ``PROJ-123``; ``123-fix-login`` -> ``#123``."""
    found = [m.group(1).upper() for m in _BRANCH_KEY.finditer(branch) if not m.group(1).upper().startswith("GH-")]
    found.extend(f"#{m.group(1)}" for m in _GH.finditer(branch))
    found.extend(f"#{m.group(1)}" for m in _BRANCH_NUMBER.finditer(branch))
    return _unique(found)


def normalise(ticket_id: str) -> list[str]:
    """The stored forms of a ticket id given as input: ``proj-123`` -> ``PROJ-123``; ``42``, ``#42``, ``GH-42`` ->
    ``#42``; ``org/repo#42`` stays (with ``#42``). Empty when it is not a ticket id."""
    text = ticket_id.strip()
    if re.fullmatch(r"#?[1-9][0-9]{0,6}", text):
        return [f"#{text.lstrip('#')}"]
    gh = re.fullmatch(r"GH-([1-9][0-9]{0,6})", text, re.IGNORECASE)
    if gh:
        return [f"#{gh.group(1)}"]
    qualified = re.fullmatch(r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([1-9][0-9]{0,6})", text)
    if qualified:
        return [text, f"#{qualified.group(2)}"]
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{1,9}-[1-9][0-9]{0,6}", text):
        return [text.upper()]
    return []
