"""The ``remote`` pack: the tools, resources, templates and prompts of upstream MCP servers, served as its own.

Each server's names are prefixed with its ``prefix`` (tools and prompts; resource URIs are served as the server
writes them) and filtered by its ``tools`` allow/deny list. Schemas pass through unchanged, so the host checks
arguments against the server's own input schema and results against its output schema. Nothing of the caller
reaches the server but the arguments: no identity, no headers, no credentials. Progress the server reports is
relayed to the caller, and a call the caller cancels is cancelled upstream.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import structlog

from gateway.api import (
    CallContext,
    PackContext,
    Prompt,
    PromptResult,
    Resource,
    ResourceContent,
    ResourceTemplate,
    Tool,
    ToolPack,
    ToolResult,
    UpstreamStatus,
)
from gateway_plugins.remote.config import RemoteConfig
from gateway_plugins.remote.upstream import Upstream

log = structlog.get_logger(__name__)

_VARIABLE = re.compile(r"\{\+?(\w+)\}")


def expand(template: str, variables: Mapping[str, str]) -> str:
    """The URI the host matched against ``template`` (``{name}`` and ``{+name}`` variables, values as matched)."""
    return _VARIABLE.sub(lambda m: variables.get(m.group(1), m.group(0)), template)


class RemotePack(ToolPack):
    """Fronts the configured servers (see the module doc)."""

    name = "remote"

    def __init__(self, config: RemoteConfig, context: PackContext) -> None:
        self.config = config
        self.upstreams = [
            Upstream(server, context.upstreams, context.data_dir, context.catalogue_changed)
            for server in config.servers
        ]
        self._clashes_told: set[tuple[str, str]] = set()

    async def start(self) -> None:
        async with anyio.create_task_group() as tg:
            for upstream in self.upstreams:
                tg.start_soon(upstream.start)

    async def stop(self) -> None:
        async with anyio.create_task_group() as tg:
            for upstream in self.upstreams:
                tg.start_soon(upstream.stop)

    # -- what is served -------------------------------------------------------------------------------------

    def _served_tools(self) -> list[tuple[Upstream, str, str]]:
        """``(upstream, served name, remote name)``; a name two servers would share goes to the first."""
        seen: dict[str, str] = {}
        served = []
        for upstream in self.upstreams:
            for tool in upstream.catalogue.tools:
                if not upstream.config.tools.admits(tool.name):
                    continue
                full = upstream.config.prefix + tool.name
                if full in seen:
                    if (full, upstream.name) not in self._clashes_told:  # once, not at every listing or scrape
                        self._clashes_told.add((full, upstream.name))
                        log.error(
                            "remote tool name clash; give the servers distinct prefixes",
                            tool=full,
                            kept=seen[full],
                            left_out=upstream.name,
                        )
                    continue
                seen[full] = upstream.name
                served.append((upstream, full, tool.name))
        return served

    def tools(self) -> Sequence[Tool[Any, Any]]:
        by_name = {(u.name, t.name): t for u in self.upstreams for t in u.catalogue.tools}
        tools = []
        for upstream, full, remote in self._served_tools():
            tool = by_name[(upstream.name, remote)]
            tools.append(
                Tool.from_json_schema(
                    full,
                    tool.description,
                    tool.input_schema,
                    self._tool_handler(upstream, remote),
                    output_schema=tool.output_schema,
                    annotations=tool.annotations,
                    scope=upstream.config.scope,
                    upstream=upstream.name,
                )
            )
        return tools

    def resources(self) -> Sequence[Resource]:
        seen: set[str] = set()
        resources = []
        for upstream in self.upstreams:
            for r in upstream.catalogue.resources:
                if r.uri in seen:
                    continue
                seen.add(r.uri)
                read = self._reader(upstream, lambda _vars, uri=r.uri: uri)
                resources.append(
                    Resource(
                        r.uri,
                        r.name,
                        lambda ctx, read=read: read({}, ctx),
                        r.description,
                        r.mime_type,
                        upstream.config.scope,
                        r.title,
                        upstream=upstream.name,
                    )
                )
        return resources

    def resource_templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(
                t.uri_template,
                t.name,
                self._reader(upstream, lambda variables, template=t.uri_template: expand(template, variables)),
                t.description,
                t.mime_type,
                upstream.config.scope,
                t.title,
                upstream=upstream.name,
                read_uri=self._uri_reader(upstream),  # the URI as asked goes upstream unchanged
            )
            for upstream in self.upstreams
            for t in upstream.catalogue.templates
        ]

    def prompts(self) -> Sequence[Prompt]:
        seen: set[str] = set()
        prompts = []
        for upstream in self.upstreams:
            for p in upstream.catalogue.prompts:
                full = upstream.config.prefix + p.name
                if full in seen:
                    continue
                seen.add(full)
                render = self._renderer(upstream, p.name)
                prompts.append(
                    Prompt(full, render, p.description, p.arguments, p.title, upstream.config.scope, upstream.name)
                )
        return prompts

    def may_offer_later(self, name: str) -> bool:
        return any(name.startswith(upstream.config.prefix) for upstream in self.upstreams)

    def status(self) -> Sequence[UpstreamStatus]:
        counts: dict[str, int] = {}
        for upstream, _, _ in self._served_tools():
            counts[upstream.name] = counts.get(upstream.name, 0) + 1
        return [upstream.status(counts.get(upstream.name, 0)) for upstream in self.upstreams]

    # -- handlers -------------------------------------------------------------------------------------------

    def _tool_handler(self, upstream: Upstream, remote: str) -> Any:
        async def call(arguments: dict[str, Any], ctx: CallContext) -> ToolResult:
            progress = ctx.report_progress if ctx.progress_sink is not None else None
            result = await upstream.call(lambda session: session.call_tool(remote, arguments, progress=progress))
            # Remote text, logged through the log redaction like every line (at debug: results can be large).
            log.debug(
                "upstream result",
                upstream=upstream.name,
                remote_tool=remote,
                is_error=result.is_error,
                content=list(result.content),
                structured=result.structured,
            )
            return result

        return call

    def _reader(self, upstream: Upstream, uri_of: Any) -> Any:
        async def read(variables: Mapping[str, str], ctx: CallContext) -> list[ResourceContent]:
            uri = uri_of(variables)
            return await upstream.call(lambda session: session.read_resource(uri))

        return read

    def _uri_reader(self, upstream: Upstream) -> Any:
        async def read(uri: str, ctx: CallContext) -> list[ResourceContent]:
            return await upstream.call(lambda session: session.read_resource(uri))

        return read

    def _renderer(self, upstream: Upstream, remote: str) -> Any:
        async def render(arguments: Mapping[str, str], ctx: CallContext) -> PromptResult:
            return await upstream.call(lambda session: session.get_prompt(remote, arguments))

        return render
