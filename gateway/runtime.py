"""The gateway runtime: enabled packs, their tools, resources and prompts, the call pipeline, and one call's life.

The runtime knows nothing about MCP framing; transports (the MCP adapter, the REST facade, the CLI) call
:meth:`GatewayRuntime.call_tool` and render its :class:`CallOutcome`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import structlog
from pydantic import BaseModel, ValidationError

from gateway.api.context import CallContext, Principal, Transport
from gateway.api.errors import (
    ConfigError,
    Forbidden,
    InternalError,
    NotFound,
    PluginError,
    ToolError,
    ValidationFailed,
)
from gateway.api.registry import InterceptorContext, PackContext
from gateway.api.resources import Prompt, PromptResult, Resource, ResourceContent, ResourceEntry, ResourceTemplate
from gateway.api.tools import ToolCall, ToolOutput, ToolPack, UpstreamStatus
from gateway.catalogue import Catalogue, ServedTool
from gateway.config import LoadedConfig
from gateway.identity import local_principal
from gateway.json_schemas import schema_errors
from gateway.logs import MAX_REDACTED_NAME, call_log, enter_call, exit_call
from gateway.metrics import GatewayMetrics
from gateway.outcomes import (
    CallOutcome,
    UnknownTool,
    checked_output,
    encoded_error,
    encoded_result,
    invalid_arguments,
    lacks_scope,
    schema_outcome,
    unavailable,
    validation_details,
)
from gateway.pipeline import Link, build_chain, provider_down_in, tool_error_in
from gateway.plugin_manager import GatewayPlugins, plugin_bugs_named
from gateway.providers import ProviderHub

__all__ = ["CallOutcome", "GatewayRuntime", "ServedTool", "UnknownTool"]

log = structlog.get_logger(__name__)


CatalogueListener = Callable[[], Awaitable[None]]


class GatewayRuntime:
    """One gateway instance: build with :meth:`start`, serve, then :meth:`stop`."""

    def __init__(self, loaded: LoadedConfig, plugins: GatewayPlugins) -> None:
        self.loaded = loaded
        self.plugins = plugins
        self.providers = ProviderHub(loaded, plugins.registry)
        self.packs: dict[str, ToolPack] = {}
        self.metrics = GatewayMetrics(self.upstream_statuses)
        self.catalogue = Catalogue(self.metrics, loaded.source)
        self.tools = self.catalogue.tools
        self.resources = self.catalogue.resources
        self.templates = self.catalogue.templates
        self.prompts = self.catalogue.prompts
        self._catalogue_listeners: list[CatalogueListener] = []
        self._indexed: set[str] = set()
        self._upstreams: Any = None
        self._chain: Any = None
        self._interceptors: list[Link] = []
        self.default_principal: Principal | None = None
        self.calls_in_flight: dict[str, str] = {}
        """Tool calls running now: correlation id to tool name."""
        self._call_log = call_log()
        self._started = False

    @property
    def name(self) -> str:
        return self.loaded.config.gateway.name

    @property
    def instructions(self) -> str | None:
        parts = [self.loaded.config.gateway.instructions or ""]
        parts += [pack.instructions or "" for pack in self.packs.values()]
        text = "\n\n".join(p.strip() for p in parts if p and p.strip())
        return text or None

    async def start(self) -> None:
        """Build and start the enabled packs, index their tools, build the pipeline. Stops what started on error."""
        cfg = self.loaded.config
        registry = self.plugins.registry
        data_dir = self.loaded.usable_data_dir()
        self.default_principal = local_principal(cfg.gateway.identity, data_dir)
        try:
            for name in cfg.packs.enabled:
                reg = registry.packs[name]
                pack_dir = data_dir / "packs" / name
                pack_dir.mkdir(parents=True, exist_ok=True)
                context = PackContext(
                    name=name,
                    config=self.loaded.plugin_config(reg),
                    data_dir=pack_dir,
                    provider=self.providers.get,
                    embeddings=self.providers.embeddings,
                    sanitization=self.providers.sanitization,
                    instantiate=self.providers.instantiate,
                    upstreams=self.upstream_connector,
                    catalogue_changed=self._announcer(name),
                )
                who = f"pack {name!r} (plugin {reg.plugin!r})"
                with plugin_bugs_named(who, "its factory"):
                    pack = reg.factory(context)
                if not isinstance(pack, ToolPack):
                    raise PluginError(f"{who}: its factory returned {type(pack).__name__}, not a ToolPack")
                self.packs[name] = pack
                with plugin_bugs_named(who, "start()"):
                    await pack.start()
                with plugin_bugs_named(who, "serving what it offers (its tools, their schemas, resources, prompts)"):
                    self.catalogue.add_pack(name, pack, self._prefix(name))
                self._indexed.add(name)
            for ref in cfg.pipeline.interceptors:
                reg = registry.interceptors[ref.name]
                context = InterceptorContext(
                    name=ref.name,
                    config=self.loaded.plugin_config(reg),
                    data_dir=data_dir / "interceptors" / ref.name,
                    provider=self.providers.get,
                    tools=self.catalogue.tool_view(),
                    packs={name: name in cfg.packs.enabled for name in registry.packs},
                    may_offer_later=lambda tool: any(pack.may_offer_later(tool) for pack in self.packs.values()),
                )
                who = f"interceptor {ref.name!r} (plugin {reg.plugin!r})"
                with plugin_bugs_named(who, "its factory"):
                    interceptor = reg.factory(context)
                with plugin_bugs_named(who, "start()"):
                    await interceptor.start()
                self._interceptors.append(Link(interceptor, ref.name, fail_open=ref.on_error == "fail_open"))
        except BaseException:  # a stop signal while starting, too: what started is stopped (stores flushed)
            with anyio.CancelScope(shield=True):
                await self.stop()
            raise
        self._chain = build_chain(self._interceptors, self._invoke)
        self._call_log = call_log()
        self._started = True
        log.info("gateway started", packs=list(self.packs), tools=len(self.tools), data_dir=str(data_dir))

    def _prefix(self, pack_name: str) -> str:
        return self.loaded.config.packs.prefix.get(pack_name, "")

    def upstream_connector(self) -> Any:
        """The client for other MCP servers that packs receive (built on first use)."""
        if self._upstreams is None:
            from gateway.mcp_adapter import SdkWire  # the adapter, the one package that speaks the SDK
            from gateway.upstream_session import WireConnector

            self._upstreams = WireConnector(SdkWire)
        return self._upstreams

    def _announcer(self, pack_name: str) -> CatalogueListener:
        async def catalogue_changed() -> None:
            pack = self.packs.get(pack_name)
            if pack is None or pack_name not in self._indexed:  # not indexed yet: the start-up index will read it
                return
            self.catalogue.replace_pack(pack_name, pack, self._prefix(pack_name))
            log.info("catalogue changed", pack=pack_name, tools=len(self.tools), prompts=len(self.prompts))
            for listener in list(self._catalogue_listeners):
                try:
                    await listener()
                except Exception:
                    log.exception("catalogue listener failed")

        return catalogue_changed

    def add_catalogue_listener(self, listener: CatalogueListener) -> Callable[[], None]:
        """Call ``listener`` after a pack changed what it offers (transports tell their clients); returns a
        function that removes it."""
        self._catalogue_listeners.append(listener)
        return lambda: self._catalogue_listeners.remove(listener) if listener in self._catalogue_listeners else None

    def upstream_statuses(self) -> list[tuple[str, UpstreamStatus]]:
        """``(pack, status)`` for every remote service the enabled packs forward to."""
        return [(name, status) for name, pack in self.packs.items() for status in pack.status()]

    async def stop(self) -> None:
        for link in reversed(self._interceptors):
            try:
                await link.interceptor.stop()
            except Exception:
                log.exception("interceptor failed to stop", interceptor=link.name)
        self._interceptors.clear()
        for name, pack in reversed(list(self.packs.items())):
            try:
                await pack.stop()
            except Exception:
                log.exception("pack failed to stop", pack=name)
        self.packs.clear()
        await self.providers.aclose()
        self._started = False

    def visible_tools(self, principal: Principal) -> list[ServedTool]:
        """The tools ``principal`` may call (``tools/list`` shows only these)."""
        return [served for served in self.tools.values() if served.tool.visible_to(principal)]

    def new_context(
        self,
        *,
        principal: Principal | None = None,
        transport: Transport = "memory",
        headers: Mapping[str, str] | None = None,
        tool_name: str = "",
    ) -> CallContext:
        principal = principal or self.default_principal
        assert principal is not None, "the runtime is not started"
        return CallContext(
            correlation_id=os.urandom(16).hex(),
            principal=principal,
            transport=transport,
            tool_name=tool_name,
            headers=dict(headers or {}),
        )

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None, context: CallContext) -> CallOutcome:
        """Run one call: scope check, input validation, the pipeline, the tool, output validation, rendering.
        Raises :class:`UnknownTool` for a name no pack serves; every other failure is a rendered error outcome."""
        served = self.tools.get(name)
        if served is None:
            self.metrics.unknown_tool()
            self._log_call(name[:MAX_REDACTED_NAME], context, "unknown_tool", 0.0)  # cut once redacted
            why = (pack.why_not_served(name, context.principal) for pack in self.packs.values())
            raise UnknownTool(name, next(filter(None, why), None))
        context.tool_name = name
        started = time.perf_counter()
        scope = enter_call(context.correlation_id, name)
        self.calls_in_flight[context.correlation_id] = name
        try:
            outcome = await self._call(served, arguments or {}, context)
        except anyio.get_cancelled_exc_class():
            self._record(served, context, started, "cancelled")
            raise
        finally:
            exit_call(scope)
            self.calls_in_flight.pop(context.correlation_id, None)
        code = outcome.error.code if outcome.error else "tool_error" if outcome.is_error else None
        self._record(served, context, started, code)  # a tool's own error result counts as "tool_error"
        return outcome

    def _record(self, served: ServedTool, context: CallContext, started: float, error: str | None) -> None:
        elapsed = time.perf_counter() - started
        if served.metrics is not None:
            served.metrics.observe(elapsed, error)
        self._log_call(served.name, context, error, round(elapsed * 1000, 2))

    def _log_call(self, tool: str, context: CallContext, error: str | None, ms: float) -> None:
        principal, transport = context.principal.key, context.transport
        self._call_log(
            tool=tool,
            correlation_id=context.correlation_id,
            principal=principal,
            transport=transport,
            error=error,
            ms=ms,
        )

    async def _call(self, served: ServedTool, arguments: Mapping[str, Any], context: CallContext) -> CallOutcome:
        tool = served.tool
        try:
            if not tool.visible_to(context.principal):
                raise lacks_scope(tool.scope, served.name)
            args: BaseModel | dict[str, Any]
            if tool.input_model is not None:
                try:
                    args = tool.input_model.model_validate(arguments)
                except ValidationError as exc:
                    raise invalid_arguments(validation_details(exc)) from None
            else:
                assert served.input_validator is not None
                if errors := schema_errors(served.input_validator, arguments):
                    raise invalid_arguments(errors)
                args = dict(arguments)
            required = tool.scope_for(args)
            if not context.principal.allows(required):
                raise lacks_scope(required, served.name)
            call = ToolCall(tool=tool, pack=served.pack, arguments=args, raw_arguments=arguments, context=context)
            result = await self._chain(call)
            if tool.input_model is None:
                return schema_outcome(served, result, context)
            model = checked_output(tool, result)
            body = model.model_dump(mode="json", by_alias=True, exclude_none=tool.exclude_none)
            text = tool.text(model) if tool.text is not None else encoded_result(served, body)
        except ToolError as err:
            return self._error(served, err, context)
        except Exception as exc:
            if (down := provider_down_in(exc)) is not None:  # a store or service is down or locked: retry later
                log.warning(
                    "provider unavailable", tool=served.name, correlation_id=context.correlation_id, error=str(down)
                )
                return self._error(served, unavailable(down, context.correlation_id), context)
            if (carried := tool_error_in(exc)) is not None:
                return self._error(served, carried, context)
            log.exception("tool failed", tool=served.name, correlation_id=context.correlation_id)
            reason = f"misconfigured: {exc}" if isinstance(exc, ConfigError) else "internal error"  # not a secret
            err = InternalError(
                f"{reason}; the server log has the details under this correlation id",
                details={"correlation_id": context.correlation_id},
            )
            return self._error(served, err, context)
        return CallOutcome(False, body, text, context=context)

    async def _invoke(self, call: ToolCall) -> ToolOutput:
        return await call.tool.handler(call.arguments, call.context)  # type: ignore[arg-type]

    def _error(self, served: ServedTool, err: ToolError, context: CallContext) -> CallOutcome:
        body, text = encoded_error(served, served.pack_obj.format_error(err) or err.to_body())
        return CallOutcome(True, body, text, error=err, context=context)

    # -- resources -------------------------------------------------------------------------------------------

    async def read_resource(self, uri: str, context: CallContext) -> list[ResourceContent]:
        """The contents at ``uri`` (from a fixed resource or the first template that matches it)."""
        read = await self._read(uri, context)
        return [read] if isinstance(read, ResourceContent) else list(read)

    # -- prompts ---------------------------------------------------------------------------------------------

    def visible_prompts(self, principal: Principal) -> list[tuple[str, Prompt]]:
        """``(full name, prompt)`` for the prompts ``principal`` may get."""
        return [(name, prompt) for name, (_, prompt) in self.prompts.items() if principal.allows(prompt.scope)]

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None, context: CallContext) -> PromptResult:
        """Render prompt ``name``; :class:`NotFound` when no pack offers it, :class:`ValidationFailed` naming a
        missing required argument."""
        entry = self.prompts.get(name)
        if entry is None:
            raise NotFound(f"no prompt {name!r}")
        prompt = entry[1]
        if not context.principal.allows(prompt.scope):
            raise Forbidden(f"the caller lacks the scope {prompt.scope!r} for prompt {name}")
        given = dict(arguments or {})
        missing = [arg.name for arg in prompt.arguments if arg.required and arg.name not in given]
        if missing:
            raise invalid_arguments([{"field": m, "message": "Field required", "type": "missing"} for m in missing])
        return await prompt.render(given, context)

    def visible_resources(self, principal: Principal) -> list[Resource]:
        return [res for _, res in self.resources.values() if principal.allows(res.scope)]

    def visible_templates(self, principal: Principal) -> list[ResourceTemplate]:
        return [tpl for _, tpl, _ in self.templates if principal.allows(tpl.scope)]

    async def list_template_resources(
        self, cursor: str | None, context: CallContext
    ) -> tuple[list[ResourceEntry], str | None]:
        """One page of the members of listable templates (``resources/list`` after the fixed resources).

        The cursor is ``<template number>:<the template's own cursor>``; a template's last page moves on to the next
        listable template."""
        listable = [tpl for tpl in self.visible_templates(context.principal) if tpl.list is not None]
        number, inner = 0, None
        if cursor:
            head, _, rest = cursor.partition(":")
            if not head.isdigit() or int(head) >= len(listable):
                raise ValidationFailed(f"invalid cursor {cursor!r}", details={"errors": [{"field": "cursor"}]})
            number, inner = int(head), rest or None
        while number < len(listable):
            template = listable[number]
            assert template.list is not None
            page = await template.list(inner, context)
            if page.next_cursor is not None:
                return list(page.entries), f"{number}:{page.next_cursor}"
            if page.entries or number + 1 == len(listable):
                return list(page.entries), (f"{number + 1}:" if number + 1 < len(listable) else None)
            number, inner = number + 1, None
        return [], None

    async def _read(self, uri: str, context: CallContext) -> ResourceContent | Sequence[ResourceContent]:
        if uri in self.resources:
            resource = self.resources[uri][1]
            if not context.principal.allows(resource.scope):
                raise Forbidden(f"the caller lacks the scope {resource.scope!r} for {uri}")
            return await resource.read(context)
        for _, template, matcher in self.templates:
            if (variables := matcher.match(uri)) is not None:
                if not context.principal.allows(template.scope):
                    raise Forbidden(f"the caller lacks the scope {template.scope!r} for {uri}")
                if template.read_uri is not None:
                    return await template.read_uri(uri, context)
                return await template.read(variables, context)
        raise NotFound(f"no resource {uri!r}")
