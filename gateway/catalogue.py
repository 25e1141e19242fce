"""What the enabled packs serve, indexed by name: tools, resources, resource templates and prompts.

Built pack by pack at start-up, where a name offered twice stops the start. A pack may change what it offers
while serving (a remote server's ``tools/list_changed``): :meth:`Catalogue.replace_pack` swaps that pack's entries in
place, and a clash then is logged and the newcomer left out, since the gateway is already serving.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from gateway.api.errors import ConfigError
from gateway.api.resources import Prompt, Resource, ResourceTemplate
from gateway.api.tools import MAX_TOOL_NAME, Tool, ToolPack
from gateway.json_schemas import CompiledSchema, compile_schema
from gateway.metrics import GatewayMetrics, ToolMetrics
from gateway.tool_schemas import input_schema, output_schema
from gateway.uri_templates import UriTemplate

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ServedTool:
    name: str
    pack: str
    tool: Tool[Any, Any]
    pack_obj: ToolPack
    encoder: json.JSONEncoder
    """Renders the result's text block (built once: ``json.dumps`` would build one per call)."""
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    input_validator: CompiledSchema | None = None
    """For a tool declared with JSON Schemas: checks its arguments (pydantic does it for model tools)."""
    output_validator: CompiledSchema | None = None
    metrics: ToolMetrics | None = None


def _served(name: str, pack_name: str, pack: ToolPack, tool: Tool[Any, Any], metrics: GatewayMetrics) -> ServedTool:
    encoder = json.JSONEncoder(indent=tool.text_indent, ensure_ascii=False, allow_nan=False)
    bound = metrics.for_tool(name, pack_name, tool.upstream)
    if tool.input_model is not None:
        assert tool.output_model is not None
        schemas = input_schema(tool.input_model), output_schema(tool.output_model)
        return ServedTool(name, pack_name, tool, pack, encoder, *schemas, metrics=bound)
    assert tool.input_schema is not None
    out = dict(tool.output_schema) if tool.output_schema is not None else None
    validator = compile_schema(tool.input_schema, what=f"the input schema of tool {name!r}")
    out_validator = compile_schema(out, what=f"the output schema of tool {name!r}") if out is not None else None
    return ServedTool(
        name, pack_name, tool, pack, encoder, dict(tool.input_schema), out, validator, out_validator, bound
    )


class Catalogue:
    """Every served tool, resource, template and prompt, with the pack that offers it."""

    def __init__(self, metrics: GatewayMetrics, source: str = "<config>") -> None:
        self.metrics = metrics
        self.source = source
        """The config file, named by the errors a clash at start-up raises."""
        self.tools: dict[str, ServedTool] = {}
        self.resources: dict[str, tuple[str, Resource]] = {}
        self.templates: list[tuple[str, ResourceTemplate, UriTemplate]] = []
        self.prompts: dict[str, tuple[str, Prompt]] = {}
        self._told: set[str] = set()  # clashes logged: a pack re-read at every change repeats its own

    def add_pack(self, pack_name: str, pack: ToolPack, prefix: str = "") -> None:
        """Index a pack at start-up. Raises :class:`ConfigError` on a name another pack already offers."""
        self._add(pack_name, pack, prefix, strict=True)

    def replace_pack(self, pack_name: str, pack: ToolPack, prefix: str = "") -> None:
        """Re-read a serving pack's offer; what now clashes with another pack is logged and left out, and the
        metric series of the tools it no longer serves are dropped."""
        before = {name: served for name, served in self.tools.items() if served.pack == pack_name}
        self._remove(pack_name)
        self._add(pack_name, pack, prefix, strict=False)
        for name, served in before.items():
            now = self.tools.get(name)
            if now is None or now.pack != pack_name or now.tool.upstream != served.tool.upstream:
                self.metrics.forget_tool(name, pack_name, served.tool.upstream)

    def _remove(self, pack_name: str) -> None:
        for table in (self.tools, self.resources, self.prompts):
            for key in [k for k, v in table.items() if _pack_of(v) == pack_name]:
                del table[key]
        self.templates[:] = [entry for entry in self.templates if entry[0] != pack_name]

    def _clash(self, strict: bool, message: str) -> None:
        if strict:
            raise ConfigError(f"{self.source}: 'packs.enabled': {message}")
        if message not in self._told:
            self._told.add(message)
            log.error("catalogue change refused", reason=message)

    def _add(self, pack_name: str, pack: ToolPack, prefix: str, *, strict: bool) -> None:
        for tool in pack.tools():
            full = prefix + tool.name
            if tool.upstream is None and len(full) > MAX_TOOL_NAME:
                self._clash(strict, f"[packs.prefix] makes {full!r} longer than a tool name may be ({MAX_TOOL_NAME})")
                continue
            if full in self.tools:
                taken = self.tools[full]
                message = (
                    f"tool name collision: pack {pack_name!r} offers two tools named {full!r}"
                    if taken.pack == pack_name
                    else f"tool name collision: {full!r} is offered by pack {taken.pack!r} and by pack {pack_name!r}; "
                    f"disable one or set [packs.prefix] for one of them"
                )
                # A remote server's tool never stops the gateway (nor takes a local tool's name): the server's
                # list is the server's to change, at any time. It is left out; a local tool takes its name back.
                self._clash(strict and tool.upstream is None and taken.tool.upstream is None, message)
                if tool.upstream is not None or taken.tool.upstream is None:
                    continue
            try:
                self.tools[full] = _served(full, pack_name, pack, tool, self.metrics)
            except ValueError as exc:  # a schema that is no JSON Schema
                # A remote server's tool is the server's to fix: it is left out, the gateway serves the rest.
                self._clash(strict and tool.upstream is None, f"pack {pack_name!r}: {exc}")
        for resource in pack.resources():
            if resource.uri in self.resources:
                other, taken = self.resources[resource.uri]
                message = f"resource {resource.uri!r} is offered by pack {other!r} and by pack {pack_name!r}"
                # As for tools: a remote entry is left out (logged), and a local one takes its URI back.
                self._clash(strict and resource.upstream is None and taken.upstream is None, f"{message}; enable one")
                if resource.upstream is not None or taken.upstream is None:
                    continue
            self.resources[resource.uri] = (pack_name, resource)
        for template in pack.resource_templates():
            self._add_template(pack_name, template, strict)
        for prompt in pack.prompts():
            full = prefix + prompt.name
            if full in self.prompts:
                other, held = self.prompts[full]
                message = f"prompt {full!r} is offered by pack {other!r} and by pack {pack_name!r}"
                self._clash(strict and prompt.upstream is None and held.upstream is None, message)
                if prompt.upstream is not None or held.upstream is None:
                    continue
            self.prompts[full] = (pack_name, prompt)

    def _add_template(self, pack_name: str, template: ResourceTemplate, strict: bool) -> None:
        """As a resource: one entry per URI template; a remote one is left out (logged), a local one takes it back."""
        for index, (other, taken, _) in enumerate(self.templates):
            if taken.uri_template != template.uri_template:
                continue
            message = (
                f"resource template {template.uri_template!r} is offered by pack {other!r} and by pack {pack_name!r}"
            )
            self._clash(strict and template.upstream is None and taken.upstream is None, f"{message}; enable one")
            if template.upstream is None and taken.upstream is not None:
                self.templates[index] = (pack_name, template, UriTemplate(template.uri_template))
            return
        self.templates.append((pack_name, template, UriTemplate(template.uri_template)))

    def tool_view(self) -> Mapping[str, tuple[str, Tool[Any, Any]]]:
        """``{full name: (pack, tool)}``, live: it follows catalogue changes (for interceptors)."""
        return _ToolView(self.tools)


def _pack_of(entry: Any) -> str:
    return entry.pack if isinstance(entry, ServedTool) else entry[0]


class _ToolView(Mapping[str, tuple[str, Tool[Any, Any]]]):
    def __init__(self, tools: dict[str, ServedTool]) -> None:
        self._tools = tools

    def __getitem__(self, name: str) -> tuple[str, Tool[Any, Any]]:
        served = self._tools[name]
        return served.pack, served.tool

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._tools))

    def __len__(self) -> int:
        return len(self._tools)
