"""The gateway runtime: enabled packs, their tools and resources, the call pipeline, and one call's life.

The runtime knows nothing about MCP framing; transports (the MCP adapter, the REST facade, the CLI) call
:meth:`GatewayRuntime.call_tool` and render its :class:`CallOutcome`.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from gateway.api.context import CallContext, Principal, Transport
from gateway.api.errors import (
    ConfigError,
    Forbidden,
    GatewayError,
    InternalError,
    NotFound,
    ToolError,
    ValidationFailed,
)
from gateway.api.registry import InterceptorContext, PackContext
from gateway.api.tools import (
    Resource,
    ResourceContent,
    ResourceEntry,
    ResourceTemplate,
    Tool,
    ToolCall,
    ToolPack,
)
from gateway.config import LoadedConfig
from gateway.identity import local_principal
from gateway.logs import call_log, enter_call, exit_call
from gateway.pipeline import Link, build_chain, tool_error_in
from gateway.plugin_manager import GatewayPlugins
from gateway.providers import ProviderHub
from gateway.tool_schemas import input_schema, output_schema

log = structlog.get_logger(__name__)


class UnknownTool(GatewayError):
    """No served tool has this name (a protocol error, not a tool result)."""


@dataclass(frozen=True)
class ServedTool:
    name: str
    pack: str
    tool: Tool[Any, Any]
    pack_obj: ToolPack
    encoder: json.JSONEncoder
    """Renders the result's text block (built once: ``json.dumps`` would build one per call)."""
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


@dataclass(frozen=True)
class CallOutcome:
    """A rendered tool result: the JSON body, its text form, and the error if it failed."""

    is_error: bool
    body: dict[str, Any]
    text: str
    error: ToolError | None = None
    context: CallContext | None = None


def _validation_details(exc: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(p) for p in err["loc"]) or "(root)", "message": err["msg"], "type": err["type"]}
        for err in exc.errors(include_url=False)
    ]


def _lacks(scope: str | None, tool_name: str) -> Forbidden:
    return Forbidden(f"the caller lacks the scope {scope!r} required by {tool_name}", details={"required_scope": scope})


def _template_regex(template: str) -> re.Pattern[str]:
    """``{name}`` matches one path segment; ``{+name}`` (RFC 6570 reserved expansion) matches across ``/``."""
    pattern = re.sub(r"\\\{\\\+(\w+)\\\}", r"(?P<\1>.*)", re.escape(template))
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
    return re.compile(f"^{pattern}$")


class GatewayRuntime:
    """One gateway instance: build with :meth:`start`, serve, then :meth:`stop`."""

    def __init__(self, loaded: LoadedConfig, plugins: GatewayPlugins) -> None:
        self.loaded = loaded
        self.plugins = plugins
        self.providers = ProviderHub(loaded, plugins.registry)
        self.packs: dict[str, ToolPack] = {}
        self.tools: dict[str, ServedTool] = {}
        self.resources: dict[str, tuple[str, Resource]] = {}
        self.templates: list[tuple[str, ResourceTemplate, re.Pattern[str]]] = []
        self._chain: Any = None
        self._interceptors: list[Link] = []
        self.default_principal: Principal | None = None
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
        data_dir = self.loaded.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
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
                )
                pack = reg.factory(context)
                self.packs[name] = pack
                await pack.start()
                self._index(name, pack)
            for ref in cfg.pipeline.interceptors:
                reg = registry.interceptors[ref.name]
                context = InterceptorContext(
                    name=ref.name,
                    config=self.loaded.plugin_config(reg),
                    data_dir=data_dir / "interceptors" / ref.name,
                    provider=self.providers.get,
                    tools={name: (served.pack, served.tool) for name, served in self.tools.items()},
                    packs={name: name in cfg.packs.enabled for name in registry.packs},
                )
                interceptor = reg.factory(context)
                await interceptor.start()
                self._interceptors.append(Link(interceptor, ref.name, fail_open=ref.on_error == "fail_open"))
        except BaseException:
            await self.stop()
            raise
        self._chain = build_chain(self._interceptors, self._invoke)
        self._call_log = call_log()
        self._started = True
        log.info("gateway started", packs=list(self.packs), tools=len(self.tools), data_dir=str(data_dir))

    def _index(self, pack_name: str, pack: ToolPack) -> None:
        prefix = self.loaded.config.packs.prefix.get(pack_name, "")
        for tool in pack.tools():
            full = prefix + tool.name
            if full in self.tools:
                other = self.tools[full].pack
                raise ConfigError(
                    f"{self.loaded.source}: 'packs.enabled': tool name collision: {full!r} is offered by pack "
                    f"{other!r} and by pack {pack_name!r}; disable one or set [packs.prefix] for one of them"
                )
            encoder = json.JSONEncoder(indent=tool.text_indent, ensure_ascii=False)
            self.tools[full] = ServedTool(
                full, pack_name, tool, pack, encoder, input_schema(tool.input_model), output_schema(tool.output_model)
            )
        for resource in pack.resources():
            if resource.uri in self.resources:
                other = self.resources[resource.uri][0]
                raise ConfigError(
                    f"{self.loaded.source}: 'packs.enabled': resource {resource.uri!r} is offered by pack {other!r} "
                    f"and by pack {pack_name!r}; enable one of them"
                )
            self.resources[resource.uri] = (pack_name, resource)
        for template in pack.resource_templates():
            self.templates.append((pack_name, template, _template_regex(template.uri_template)))

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

        Raises :class:`UnknownTool` for a name no pack serves; every other failure is a rendered error outcome.
        """
        served = self.tools.get(name)
        if served is None:
            raise UnknownTool(name)
        context.tool_name = name
        started = time.perf_counter()
        scope = enter_call(context.correlation_id, name)
        try:
            outcome = await self._call(served, arguments or {}, context)
        finally:
            exit_call(scope)
        self._call_log(
            tool=name,
            correlation_id=context.correlation_id,
            principal=context.principal.key,
            transport=context.transport,
            error=outcome.error.code if outcome.error else None,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return outcome

    async def _call(self, served: ServedTool, arguments: Mapping[str, Any], context: CallContext) -> CallOutcome:
        tool = served.tool
        try:
            if not tool.visible_to(context.principal):
                raise _lacks(tool.scope, served.name)
            try:
                args = tool.input_model.model_validate(arguments)
            except ValidationError as exc:
                errors = _validation_details(exc)
                summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
                raise ValidationFailed(f"invalid arguments: {summary}", details={"errors": errors}) from None
            required = tool.scope_for(args)
            if not context.principal.allows(required):
                raise _lacks(required, served.name)
            call = ToolCall(tool=tool, pack=served.pack, arguments=args, raw_arguments=arguments, context=context)
            result = await self._chain(call)
            model = self._checked_output(tool, result)
        except ToolError as err:
            return self._error(served, err, context)
        except Exception as exc:
            if (carried := tool_error_in(exc)) is not None:
                return self._error(served, carried, context)
            log.exception("tool failed", tool=served.name, correlation_id=context.correlation_id)
            err = InternalError(
                "internal error; the server log has the details under this correlation id",
                details={"correlation_id": context.correlation_id},
            )
            return self._error(served, err, context)
        body = model.model_dump(mode="json", by_alias=True, exclude_none=tool.exclude_none)
        text = tool.text(model) if tool.text is not None else served.encoder.encode(body)
        return CallOutcome(False, body, text, context=context)

    async def _invoke(self, call: ToolCall) -> BaseModel:
        return await call.tool.handler(call.arguments, call.context)

    @staticmethod
    def _checked_output(tool: Tool[Any, Any], result: Any) -> BaseModel:
        if isinstance(result, tool.output_model):
            return result
        try:
            if isinstance(result, BaseModel):
                result = result.model_dump()
            return tool.output_model.model_validate(result)
        except ValidationError as exc:
            log.error("tool returned output that does not match its model", tool=tool.name, errors=exc.errors())
            raise InternalError(
                "the tool produced an invalid result",
                details={"errors": [e["field"] for e in _validation_details(exc)]},
            ) from None

    def _error(self, served: ServedTool, err: ToolError, context: CallContext) -> CallOutcome:
        body = served.pack_obj.format_error(err) or err.to_body()
        return CallOutcome(True, body, served.encoder.encode(body), error=err, context=context)

    # -- resources -------------------------------------------------------------------------------------------

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

    async def read_resource(self, uri: str, context: CallContext) -> ResourceContent:
        if uri in self.resources:
            resource = self.resources[uri][1]
            if not context.principal.allows(resource.scope):
                raise Forbidden(f"the caller lacks the scope {resource.scope!r} for {uri}")
            return await resource.read(context)
        for _, template, regex in self.templates:
            match = regex.match(uri)
            if match:
                if not context.principal.allows(template.scope):
                    raise Forbidden(f"the caller lacks the scope {template.scope!r} for {uri}")
                return await template.read(match.groupdict(), context)
        raise NotFound(f"no resource {uri!r}")
