"""What a tool pack declares: tools, resources, resource templates, prompts, and the pack itself."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, RootModel

from gateway.api.context import CallContext, Principal
from gateway.api.errors import ToolError
from gateway.api.resources import Prompt, Resource, ResourceTemplate
from gateway.api.rest import RestRoute

InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT", bound=BaseModel)

ToolHandler = Callable[[InT, CallContext], Awaitable[OutT]]
SchemaToolHandler = Callable[[dict[str, Any], CallContext], Awaitable["ToolResult | Mapping[str, Any]"]]
"""The handler of a tool declared with JSON Schemas: the validated arguments as a dict in, a :class:`ToolResult`
(content blocks passed through as they are) or the structured result as a mapping out."""


@dataclass(frozen=True)
class ToolAnnotations:
    """MCP tool annotations: hints to clients, never security boundaries. ``None`` leaves a hint unstated, and a
    client applies the protocol's default (not read-only, destructive, not idempotent, open world)."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
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
class ToolResult:
    """A tool result in MCP's own terms, for tools that pass content through (a remote server's, an image...).

    ``content`` holds MCP content blocks as JSON objects (``{"type": "text", "text": ...}``, ``image``, ``audio``,
    ``resource_link``, ``resource``), served unchanged; ``structured`` is the ``structuredContent`` (checked
    against the tool's output schema unless ``is_error``); ``is_error`` marks a failure the tool reports itself.
    """

    content: Sequence[Mapping[str, Any]] = ()
    structured: Mapping[str, Any] | None = None
    is_error: bool = False


MAX_TOOL_NAME = 128
"""The longest tool name MCP clients accept (the protocol's convention: 1 to 128 of ``A-Za-z0-9_.-``)."""
_TOOL_NAME = re.compile(rf"^[A-Za-z0-9_.-]{{1,{MAX_TOOL_NAME}}}$")


def _is_async(handler: Any) -> bool:
    """An ``async def`` function or method, a partial of one, or an object whose ``__call__`` is one."""
    return asyncio.iscoroutinefunction(handler) or asyncio.iscoroutinefunction(type(handler).__call__)


@dataclass(frozen=True)
class Tool(Generic[InT, OutT]):
    """One tool: its full name, its input and output types, and an async handler.

    Usually the types are pydantic models: the host derives ``inputSchema``/``outputSchema`` from them, validates
    arguments before the handler and the returned model after it, and answers with ``structuredContent`` plus a
    JSON text block. A tool whose schemas exist only as JSON Schema (a remote server's) is declared with
    :meth:`from_json_schema` instead: the schemas are served unchanged, arguments are checked against the input
    schema with ``jsonschema`` and reach the handler as a dict.
    ``scope`` is the permission a caller needs (``None``: anyone who may reach the gateway); ``scope_by`` makes
    it depend on one argument's value (:class:`ScopeByArgument`); ``optional_scopes`` lists scopes the handler
    checks itself for part of its work (``ctx.principal.allows(...)``), so clients can ask for them.
    ``text_indent`` sets the indentation of the JSON text block (``None``: compact); ``exclude_none`` leaves
    fields whose value is ``None`` out of the result (for optional fields a client must not see as ``null``).
    ``text`` renders the text block from the output model instead of the JSON dump (a formatted text meant for an
    LLM's context window); ``structuredContent`` still carries the model.
    ``upstream`` names the remote service the tool forwards to, if any (shown by ``gateway tools``, a label of
    the call metrics).
    """

    name: str
    description: str
    input_model: type[InT] | None
    output_model: type[OutT] | None
    handler: ToolHandler[InT, OutT] | SchemaToolHandler
    annotations: ToolAnnotations = ToolAnnotations()
    scope: str | None = None
    text_indent: int | None = None
    exclude_none: bool = False
    text: Callable[[OutT], str] | None = None
    input_schema: Mapping[str, Any] | None = None
    """The input JSON Schema of a tool without an input model (see :meth:`from_json_schema`)."""
    output_schema: Mapping[str, Any] | None = None
    """The output JSON Schema of a tool without an output model, if it declares one."""
    upstream: str | None = None
    scope_by: ScopeByArgument | None = None
    optional_scopes: tuple[str, ...] = ()
    """Scopes the handler checks itself for part of what it does (``thinking:workspace``): no call needs them, but
    they are listed with the others (OAuth ``scopes_supported``), so a client can ask for them."""

    def __post_init__(self) -> None:
        if (self.input_model is None) == (self.input_schema is None):
            raise TypeError(f"tool {self.name!r}: give an input model or an input JSON Schema (exactly one)")
        if self.input_model is not None and (self.output_model is None or self.output_schema is not None):
            raise TypeError(f"tool {self.name!r}: a tool with an input model needs an output model (and no schema)")
        if self.input_model is None and self.output_model is not None:
            raise TypeError(f"tool {self.name!r}: a JSON Schema tool declares its output as a JSON Schema too")
        if self.upstream is None and not _TOOL_NAME.match(self.name):  # a remote server's names are the server's
            raise TypeError(
                f"tool {self.name!r}: a tool name is 1 to 128 letters, digits, '_', '-' or '.' (the MCP convention)"
            )
        if not _is_async(self.handler):
            raise TypeError(
                f"tool {self.name!r}: the handler must be an async function (async def), not {self.handler!r}; "
                "run blocking work with gateway.api.off_loop"
            )
        if self.upstream is None:  # a remote server's schemas are served as the server gives them
            self._check_objects()

    def _check_objects(self) -> None:
        """MCP serves a tool's arguments, and its structured result, as JSON objects."""
        for role, model, schema in (
            ("input", self.input_model, self.input_schema),
            ("output", self.output_model, self.output_schema),
        ):
            if model is not None and (not isinstance(model, type) or not issubclass(model, BaseModel)):
                raise TypeError(f"tool {self.name!r}: the {role} model must be a pydantic model class, not {model!r}")
            if model is not None and issubclass(model, RootModel):
                raise TypeError(
                    f"tool {self.name!r}: the {role} model {model.__name__} is a RootModel, which is not a JSON "
                    "object; MCP needs an object here: put the value in a field of a BaseModel"
                )
            if schema is not None and schema.get("type") != "object":
                raise TypeError(
                    f'tool {self.name!r}: the {role} JSON Schema must have "type": "object" at its root (MCP), '
                    f"not {schema.get('type')!r}"
                )

    @classmethod
    def from_json_schema(
        cls,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        handler: SchemaToolHandler,
        *,
        output_schema: Mapping[str, Any] | None = None,
        annotations: ToolAnnotations = ToolAnnotations(),
        scope: str | None = None,
        upstream: str | None = None,
    ) -> Tool[Any, Any]:
        """A tool served with these JSON Schemas exactly as given."""
        return cls(
            name,
            description,
            None,
            None,
            handler,
            annotations=annotations,
            scope=scope,
            input_schema=input_schema,
            output_schema=output_schema,
            upstream=upstream,
        )

    @property
    def uses_models(self) -> bool:
        """True for a tool typed by pydantic models, False for one declared with JSON Schemas."""
        return self.input_model is not None

    @property
    def scopes(self) -> frozenset[str]:
        """Every scope some call of this tool needs, or its handler checks (:attr:`optional_scopes`)."""
        return self._needed() | frozenset(self.optional_scopes)

    def _needed(self) -> frozenset[str]:
        found = {self.scope, *(self.scope_by.scopes.values() if self.scope_by else ())}
        return frozenset(scope for scope in found if scope)

    def visible_to(self, principal: Principal) -> bool:
        """Whether ``principal`` may make some call of this tool (``tools/list`` shows it)."""
        return self.scope is None or any(principal.allows(scope) for scope in self._needed())

    def scope_for(self, arguments: BaseModel | Mapping[str, Any]) -> str | None:
        """The scope a call with ``arguments`` (validated, or raw as sent) needs."""
        if self.scope_by is None:
            return self.scope
        name = self.scope_by.argument
        value = arguments.get(name) if isinstance(arguments, Mapping) else getattr(arguments, name, None)
        return self.scope_by.scopes.get(value, self.scope) if isinstance(value, str) else self.scope


@dataclass(frozen=True)
class UpstreamStatus:
    """The state of one remote service a pack forwards to, for ``gateway plugins``/``gateway tools`` and metrics.

    ``state`` is ``up``, ``down``, ``starting`` or ``idle`` (not running, started on first use).
    """

    name: str
    state: str
    transport: str = ""
    tools: int = 0
    last_error: str | None = None
    detail: str = ""


class ToolPack:
    """Base class of a tool pack. Subclasses override :meth:`tools` and whatever else they offer.

    Lifecycle: the host builds the pack from its factory at start-up, awaits :meth:`start`, serves, and awaits
    :meth:`stop` at shut-down. Per-request work happens in the tool, resource and REST route handlers. A pack whose
    tools, resources or prompts change while serving awaits :attr:`gateway.api.PackContext.catalogue_changed`: the
    host then reads them again and tells connected clients (``notifications/tools/list_changed``...).
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

    def prompts(self) -> Sequence[Prompt]:
        return ()

    def status(self) -> Sequence[UpstreamStatus]:
        """The state of the remote services this pack forwards to (none for a pack that runs locally)."""
        return ()

    def may_offer_later(self, name: str) -> bool:
        """Whether a tool of this full name, not served now, may be served later (a pack fronting remote servers
        whose lists change: a name with one of their prefixes). False for a pack whose tools are fixed."""
        return False

    def why_not_served(self, name: str, principal: Principal) -> str | None:
        """Why a tool of this full name is not served, when this pack knows (the remote server whose prefix it has
        is down and its tools are not known): said to ``principal`` in the "unknown tool" error, so nothing it may
        not see. ``None``: nothing to say."""
        return None

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

    ``arguments`` is the validated input model (a dict for a tool declared with JSON Schemas); interceptors may
    replace it (a sanitizer) but must keep its type. ``raw_arguments`` is what the client sent.
    """

    tool: Tool[Any, Any]
    pack: str
    arguments: BaseModel | dict[str, Any]
    raw_arguments: Mapping[str, Any]
    context: CallContext
    metadata: dict[str, Any] = field(default_factory=dict)


ToolOutput = BaseModel | ToolResult | Mapping[str, Any]
"""What a call produces: the output model, or for a JSON Schema tool a :class:`ToolResult` or a mapping."""

CallNext = Callable[[ToolCall], Awaitable[ToolOutput]]


class Interceptor:
    """One link of the call pipeline, wrapped around every tool call.

    Return ``await call_next(call)`` to continue, raise a :class:`ToolError` to refuse, or return a model of the
    tool's output type (a :class:`ToolResult` for a JSON Schema tool) to answer without calling the tool.
    Unexpected exceptions are handled by the link's configured ``on_error`` policy (``fail_closed``, the default,
    refuses the call; ``fail_open`` logs and continues). What ``call_next`` raises (the tool's :class:`ToolError`,
    cancellation, a later link's refusal) reaches the interceptor as raised, to observe, answer instead, or let
    through: let through (or re-raised) it passes this link untouched, whatever its policy.
    """

    name: str = "interceptor"

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutput:
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
    error: str | None = None
    """Why this embedder stopped before the end (it was down); the others were still reindexed."""


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
