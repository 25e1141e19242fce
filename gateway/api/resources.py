"""Resources and prompts a pack offers: fixed resources, URI-template families, their contents, and prompt templates.
(Re-exported by :mod:`gateway.api`.)"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gateway.api.context import CallContext


@dataclass(frozen=True)
class ResourceContent:
    """What reading a resource returns: text (JSON, Markdown...) or binary ``blob``, with its MIME type.

    A read may return several contents; each may name its own ``uri`` (default: the URI that was read).
    """

    text: str = ""
    mime_type: str | None = "application/json"
    blob: bytes | None = None
    uri: str | None = None


ResourceReadResult = ResourceContent | Sequence[ResourceContent]


@dataclass(frozen=True)
class Resource:
    """A fixed-URI resource, such as ``gim://stats``."""

    uri: str
    name: str
    read: Callable[[CallContext], Awaitable[ResourceReadResult]]
    description: str | None = None
    mime_type: str | None = "application/json"
    scope: str | None = None
    title: str | None = None
    upstream: str | None = None
    """The remote server it comes from, if any (a remote entry never takes a local one's URI, nor stops a start)."""


@dataclass(frozen=True)
class ResourceEntry:
    """One concrete resource of a template's family, as ``resources/list`` shows it."""

    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class ResourcePage:
    """A page of a template's resources; ``next_cursor`` (opaque to the host) fetches the next one."""

    entries: Sequence[ResourceEntry]
    next_cursor: str | None = None


@dataclass(frozen=True)
class ResourceTemplate:
    """A resource family addressed by an RFC 6570 template, such as ``gim://issues/{issue_id}/stats``.

    ``read`` receives the variables the host extracted from the URI (:mod:`gateway.uri_templates`: ``{name}``
    matches one path segment, ``{+name}`` any text including ``/``, ``{/name*}`` the rest of a path, ``{?a,b}``
    query parameters in any order...); ``read_uri``, when given, is called instead with the URI as asked (a pack
    forwarding it elsewhere, unchanged). ``list``, when given, enumerates the family's current members page by
    page, and ``resources/list`` shows them after the fixed resources.
    """

    uri_template: str
    name: str
    read: Callable[[Mapping[str, str], CallContext], Awaitable[ResourceReadResult]]
    description: str | None = None
    mime_type: str | None = "application/json"
    scope: str | None = None
    title: str | None = None
    list: Callable[[str | None, CallContext], Awaitable[ResourcePage]] | None = None
    upstream: str | None = None
    read_uri: Callable[[str, CallContext], Awaitable[ResourceReadResult]] | None = None


@dataclass(frozen=True)
class PromptArgument:
    """One argument of a prompt template (prompt arguments are strings)."""

    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None


@dataclass(frozen=True)
class PromptMessage:
    """One message of a rendered prompt: a role and one MCP content block as JSON."""

    role: Literal["user", "assistant"]
    content: Mapping[str, Any]

    @classmethod
    def text(cls, role: Literal["user", "assistant"], text: str) -> PromptMessage:
        return cls(role, {"type": "text", "text": text})


@dataclass(frozen=True)
class PromptResult:
    """What getting a prompt returns: its messages, and optionally a description."""

    messages: Sequence[PromptMessage]
    description: str | None = None


@dataclass(frozen=True)
class Prompt:
    """An MCP prompt template. ``render`` receives the caller's arguments once the host has checked that every
    required one is present; the pack's ``[packs] prefix`` applies to prompt names as to tool names."""

    name: str
    render: Callable[[Mapping[str, str], CallContext], Awaitable[PromptResult]]
    description: str | None = None
    arguments: Sequence[PromptArgument] = ()
    title: str | None = None
    scope: str | None = None
    upstream: str | None = None
    """The remote server it comes from, if any (a remote prompt never takes a local one's name)."""
