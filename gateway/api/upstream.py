"""A client for other MCP servers, independent of any SDK: what a pack uses to front a remote server.

The host implements :class:`UpstreamConnector` over the official MCP SDK (in the one package that imports it) and
hands it to packs as :attr:`gateway.api.PackContext.upstreams`. A pack never sees SDK types: it connects to a
:class:`StdioTarget` (a command the host starts, in its own process group, tied to the gateway's life so it dies
with it even when the gateway is killed) or an :class:`HttpTarget` (Streamable HTTP, either protocol era), and
gets an :class:`UpstreamSession` whose answers are this package's own types.

Nothing of the gateway's caller travels upstream: a session sends only what its target names (the command's
environment, the configured headers), never the headers or credentials of the call being served.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gateway.api.context import ProgressSink
from gateway.api.errors import GatewayError
from gateway.api.resources import PromptArgument, PromptResult, ResourceContent
from gateway.api.tools import ToolAnnotations, ToolResult


def scrub_secrets(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every secret value replaced by where it goes (``<headers.X-Key>``, ``<env.TOKEN>``), also as a
    ``str`` or ``bytes`` repr or a JSON string shows it: an HTTP library refusing a header quotes the value in its
    error (``Illegal header value b'...\\r\\n'``), and such errors reach callers, logs and ``gateway plugins``.
    The longest value goes first (a shorter secret inside it, or overlapping it, cannot leave part of it), and each
    replacement is held as a marker no later value can match until the end."""
    forms: list[tuple[str, str]] = []
    for where, value in secrets.items():
        if len(value.strip()) >= 4:
            for form in {value, value.strip(), repr(value)[1:-1], repr(value.encode())[2:-1], json.dumps(value)[1:-1]}:
                forms.append((form, where))
    places: list[str] = []
    for form, where in sorted(forms, key=lambda pair: len(pair[0]), reverse=True):
        if form in text:
            text = text.replace(form, f"\x00{len(places)}\x00")
            places.append(where)
    for index, where in enumerate(places):
        text = text.replace(f"\x00{index}\x00", f"<{where}>")
    return text


ListKind = Literal["tools", "resources", "prompts"]
"""What a ``notifications/<kind>/list_changed`` from the server says changed."""


@dataclass(frozen=True)
class StdioTarget:
    """A server started as a subprocess, spoken to over its stdin/stdout.

    It gets a minimal environment (``HOME``, ``PATH``, ``USER``...) plus ``env``; none of the gateway's own
    variables. Its stderr lines are logged (through the log redaction) under the upstream's name, with ``secrets``
    replaced by their names.
    """

    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Where each secret goes (``env.API_KEY``) -> its value: replaced by ``<env.API_KEY>`` in the stderr lines
    logged, so a server that prints its own key does not put it in the log."""


@dataclass(frozen=True)
class HttpTarget:
    """A server reached over MCP Streamable HTTP.

    ``protocol``: ``auto`` (the 2026-07-28 era when the server offers it, else the handshake era), ``legacy``
    (always the handshake era) or a modern protocol version to adopt without probing.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    protocol: str = "auto"


UpstreamTarget = StdioTarget | HttpTarget


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the remote server lists it; schemas exactly as it sent them."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)


@dataclass(frozen=True)
class RemoteResource:
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class RemoteResourceTemplate:
    uri_template: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class RemotePrompt:
    name: str
    description: str | None = None
    arguments: Sequence[PromptArgument] = ()
    title: str | None = None


class UpstreamError(GatewayError):
    """Base of the errors an :class:`UpstreamSession` raises."""


class UpstreamConnectionLost(UpstreamError):
    """The server could not be reached, or the connection ended (the process exited, the HTTP server went away).

    The session is unusable afterwards; connect again.
    """


class UpstreamSessionExpired(UpstreamConnectionLost):
    """An HTTP server no longer knows the session (404 on its ``Mcp-Session-Id``): connect again and retry; the
    request was not processed."""


class UpstreamAnswerLost(UpstreamError):
    """The connection carrying one request's answer ended before the answer was complete (an HTTP response cut off
    mid-body). That request failed; the session, and the other requests on it, may be fine."""


class UpstreamRequestFailed(UpstreamError):
    """The server answered the request with an error (``code`` is its JSON-RPC error code, if it sent one)."""

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


class UpstreamSession(Protocol):
    """One live connection to a remote MCP server. Methods may be called concurrently from several tasks.

    Every method raises :class:`UpstreamConnectionLost` when the connection is gone and
    :class:`UpstreamRequestFailed` when the server refuses. Cancelling a task awaiting a request cancels the
    request upstream too (``notifications/cancelled``, or the request stream closed in the 2026-07-28 era).
    """

    @property
    def protocol_version(self) -> str: ...

    @property
    def offers(self) -> frozenset[ListKind]:
        """What the server's capabilities say it serves (``tools``, ``resources``, ``prompts``)."""
        ...

    @property
    def closed(self) -> bool: ...

    @property
    def close_reason(self) -> str | None:
        """Why the connection ended, when it ended by itself."""
        ...

    async def wait_closed(self) -> None:
        """Return once the connection has ended (closed by :meth:`aclose` or lost)."""

    async def list_tools(self) -> list[RemoteTool]: ...

    async def list_resources(self) -> list[RemoteResource]: ...

    async def list_resource_templates(self) -> list[RemoteResourceTemplate]: ...

    async def list_prompts(self) -> list[RemotePrompt]: ...

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, progress: ProgressSink | None = None
    ) -> ToolResult:
        """Call a tool; ``progress`` receives the server's progress notifications for this call."""
        ...

    async def read_resource(self, uri: str) -> list[ResourceContent]: ...

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult: ...

    async def aclose(self) -> None:
        """End the connection (a stdio server is asked to exit, then its process group is killed)."""


class UpstreamConnector(Protocol):
    """Opens :class:`UpstreamSession` s; the host implements it over the MCP SDK."""

    async def connect(
        self,
        name: str,
        target: UpstreamTarget,
        *,
        connect_timeout: float,
        on_list_changed: Callable[[ListKind], None] | None = None,
    ) -> UpstreamSession:
        """Start (stdio) or reach (HTTP) the server and complete the protocol handshake within
        ``connect_timeout`` seconds. ``name`` labels its log lines. ``on_list_changed`` is called
        (synchronously; do not block) when the server says its tools, resources or prompts changed.

        Raises :class:`UpstreamConnectionLost` when the server cannot be started or reached in time.
        """
        ...
