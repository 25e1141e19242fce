"""What a tool pack declares: tools, resources, resource templates, and the pack itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from gateway.api.context import CallContext, Principal
from gateway.api.errors import ToolError
from gateway.api.rest import RestRoute

InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT", bound=BaseModel)

ToolHandler = Callable[[InT, CallContext], Awaitable[OutT]]


@dataclass(frozen=True)
class ToolAnnotations:
    """MCP tool annotations: hints to clients, never security boundaries."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    title: str | None = None


@dataclass(frozen=True)
class ScopeByArgument:
    """A scope that depends on what a call asks for: the value of one argument (an ``action``) picks it.

    ``Tool(..., scope="index:write", scope_by=ScopeByArgument("action", {"status": "index:read"}))``: a call with
    ``action="status"`` needs ``index:read``, any other call ``index:write``. The host checks the scope of the
    validated arguments before the handler runs (over HTTP, the raw arguments first: 403 ``insufficient_scope``
    naming that scope), and ``tools/list`` shows the tool to a caller holding any of its scopes.
    """

    argument: str
    scopes: Mapping[str, str]


@dataclass(frozen=True)
class Tool(Generic[InT, OutT]):
    """One tool: its full name, pydantic models for input and output, and an async handler.

    The host derives ``inputSchema``/``outputSchema`` from the models, validates arguments before the handler
    and the returned model after it, and answers with ``structuredContent`` plus a JSON text block.
    ``scope`` is the permission a caller needs (``None``: anyone who may reach the gateway); ``scope_by`` makes
    it depend on one argument's value (:class:`ScopeByArgument`).
    ``text_indent`` sets the indentation of the JSON text block (``None``: compact); ``exclude_none`` leaves
    fields whose value is ``None`` out of the result (for optional fields a client must not see as ``null``).
    ``text`` renders the text block from the output model instead of the JSON dump (a formatted text meant for an
    LLM's context window); ``structuredContent`` still carries the model.
    """

    name: str
    description: str
    input_model: type[InT]
    output_model: type[OutT]
    handler: ToolHandler[InT, OutT]
    annotations: ToolAnnotations = ToolAnnotations()
    scope: str | None = None
    text_indent: int | None = None
    exclude_none: bool = False
    text: Callable[[OutT], str] | None = None
    scope_by: ScopeByArgument | None = None

    @property
    def scopes(self) -> frozenset[str]:
        """Every scope some call of this tool needs."""
        found = {self.scope, *(self.scope_by.scopes.values() if self.scope_by else ())}
        return frozenset(scope for scope in found if scope)

    def visible_to(self, principal: Principal) -> bool:
        """Whether ``principal`` may make some call of this tool (``tools/list`` shows it)."""
        return self.scope is None or any(principal.allows(scope) for scope in self.scopes)

    def scope_for(self, arguments: BaseModel | Mapping[str, Any]) -> str | None:
        """The scope a call with ``arguments`` (validated, or raw as sent) needs."""
        if self.scope_by is None:
            return self.scope
        name = self.scope_by.argument
        value = arguments.get(name) if isinstance(arguments, Mapping) else getattr(arguments, name, None)
        return self.scope_by.scopes.get(value, self.scope) if isinstance(value, str) else self.scope


@dataclass(frozen=True)
class ResourceContent:
    """What reading a resource returns: text (JSON, Markdown...) with its MIME type."""

    text: str
    mime_type: str = "application/json"


@dataclass(frozen=True)
class Resource:
    """A fixed-URI resource, such as ``gim://stats``."""

    uri: str
    name: str
    read: Callable[[CallContext], Awaitable[ResourceContent]]
    description: str | None = None
    mime_type: str = "application/json"
    scope: str | None = None


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

    ``read`` receives the variables the host extracted from the URI. ``{name}`` matches one path segment,
    ``{+name}`` (reserved expansion) any text including ``/``. ``list``, when given, enumerates the family's
    current members page by page, and ``resources/list`` shows them after the fixed resources.
    """

    uri_template: str
    name: str
    read: Callable[[Mapping[str, str], CallContext], Awaitable[ResourceContent]]
    description: str | None = None
    mime_type: str = "application/json"
    scope: str | None = None
    list: Callable[[str | None, CallContext], Awaitable[ResourcePage]] | None = None


class ToolPack:
    """Base class of a tool pack. Subclasses override :meth:`tools` and whatever else they offer.

    Lifecycle: the host builds the pack from its factory at start-up, awaits :meth:`start`, serves, and awaits
    :meth:`stop` at shut-down. Per-request work happens in the tool, resource and REST route handlers.
    """

    name: str = "unnamed"
    instructions: str | None = None
    """Text merged into the server instructions an assistant sees at connection time."""

    def tools(self) -> Sequence[Tool[Any, Any]]:
        return ()

    def resources(self) -> Sequence[Resource]:
        return ()

    def resource_templates(self) -> Sequence[ResourceTemplate]:
        return ()

    def rest_routes(self) -> Sequence[RestRoute]:
        """REST operations served under ``/api/v1`` over HTTP (see :class:`gateway.api.RestRoute`). Their handlers
        call the same methods the tool handlers do, so MCP and REST share one implementation."""
        return ()

    async def start(self) -> None:
        """Open connections, apply migrations, reconcile state. Called once before serving."""

    async def stop(self) -> None:
        """Release what :meth:`start` acquired. Called once at shut-down."""

    def format_error(self, error: ToolError) -> dict[str, Any] | None:
        """Render the JSON body of an error result for this pack's tools.

        Return ``None`` to use the gateway default ``{"error": {"code", "message", "details"}}``.
        """
        return None


@dataclass
class ToolCall:
    """A tool call as it travels through the interceptor chain.

    ``arguments`` is the validated input model; interceptors may replace it (a sanitizer) but must keep its
    type. ``raw_arguments`` is what the client sent.
    """

    tool: Tool[Any, Any]
    pack: str
    arguments: BaseModel
    raw_arguments: Mapping[str, Any]
    context: CallContext
    metadata: dict[str, Any] = field(default_factory=dict)


CallNext = Callable[[ToolCall], Awaitable[BaseModel]]


class Interceptor:
    """One link of the call pipeline, wrapped around every tool call.

    Return ``await call_next(call)`` to continue, raise a :class:`ToolError` to refuse, or return a model of the
    tool's output type to answer without calling the tool. Unexpected exceptions are handled by the link's
    configured ``on_error`` policy (``fail_closed``, the default, refuses the call; ``fail_open`` logs and
    continues).
    """

    name: str = "interceptor"

    async def __call__(self, call: ToolCall, call_next: CallNext) -> BaseModel:
        return await call_next(call)

    async def start(self) -> None:
        """Called once at start-up, after every pack has started."""

    async def stop(self) -> None:
        """Called once at shut-down."""


@dataclass(frozen=True)
class ReindexReport:
    embedder_id: str
    total: int
    embedded: int
    skipped: int


ReindexProgress = Callable[[int, int], None]
"""``progress(done, total)``, called as items are re-embedded."""


class Reindexable:
    """Mixin for packs that keep vectors: ``gateway reindex`` drives it for every enabled pack that has it.

    ``missing_only`` fills in only the vectors missing after an embedder outage. A full reindex writes new vectors
    beside the old ones and switches over only when complete, so searches keep working meanwhile; an interrupted
    run resumes where it stopped.
    """

    async def reindex(self, *, missing_only: bool, progress: ReindexProgress) -> list[ReindexReport]:
        raise NotImplementedError
