"""The ``remote`` pack: the tools, resources, templates and prompts of upstream MCP servers, served as its own.

Each server's names are prefixed with its ``prefix`` (tools and prompts; resource URIs are served as the server
writes them) and filtered by its ``tools`` allow/deny list. Schemas pass through unchanged, so the host checks
arguments against the server's own input schema and results against its output schema. Nothing of the caller
reaches the server but the arguments: no identity, no headers, no credentials. Progress the server reports is
relayed to the caller, and a call the caller cancels is cancelled upstream.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import structlog

from gateway.api import (
    MAX_TOOL_NAME,
    CallContext,
    PackContext,
    Principal,
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
        self._clashes_told: set[tuple[str, str, str]] = set()

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
                if len(full) > MAX_TOOL_NAME or not full.isprintable() or any(c.isspace() for c in full):
                    self._unusable(full, upstream.name)
                    continue
                if full in seen:
                    self._clash("tool", full, seen[full], upstream.name)
                    continue
                seen[full] = upstream.name
                served.append((upstream, full, tool.name))
        return served

    def _clash(self, kind: str, key: str, kept: str, left_out: str) -> None:
        """Log, once per entry (not at every listing or scrape), that ``left_out`` offers what ``kept`` serves."""
        if (kind, key, left_out) in self._clashes_told:
            return
        self._clashes_told.add((kind, key, left_out))
        named = kind in ("tool", "prompt")
        what = f"{kind} name clash; give the servers distinct prefixes" if named else f"{kind} clash; serve one of them"
        log.error(f"remote {what}", **{kind.replace(" ", "_"): key}, kept=kept, left_out=left_out)

    def _unusable(self, name: str, upstream: str) -> None:
        """A tool name too long (over MCP's 128 characters), or holding blanks or control characters: clients,
        log lines and metric labels would choke on it. Left out, logged once."""
        if ("unusable", name, upstream) not in self._clashes_told:
            self._clashes_told.add(("unusable", name, upstream))
            log.error("remote tool left out: not a usable tool name", tool=name[:200], upstream=upstream)

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
        seen: dict[str, str] = {}
        resources = []
        for upstream in self.upstreams:
            for r in upstream.catalogue.resources:
                if r.uri in seen:
                    self._clash("resource", r.uri, seen[r.uri], upstream.name)
                    continue
                seen[r.uri] = upstream.name
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
        seen: dict[str, str] = {}
        templates = []
        for upstream in self.upstreams:
            for t in upstream.catalogue.templates:
                if t.uri_template in seen:  # a URI it describes goes to the first server's template
                    self._clash("resource template", t.uri_template, seen[t.uri_template], upstream.name)
                    continue
                seen[t.uri_template] = upstream.name
                templates.append(
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
                )
        return templates

    def prompts(self) -> Sequence[Prompt]:
        seen: dict[str, str] = {}
        prompts = []
        for upstream in self.upstreams:
            for p in upstream.catalogue.prompts:
                full = upstream.config.prefix + p.name
                if full in seen:
                    self._clash("prompt", full, seen[full], upstream.name)
                    continue
                seen[full] = upstream.name
                render = self._renderer(upstream, p.name)
                prompts.append(
                    Prompt(full, render, p.description, p.arguments, p.title, upstream.config.scope, upstream.name)
                )
        return prompts

    def may_offer_later(self, name: str) -> bool:
        """Whether a server whose prefix ``name`` has may list it later: one whose tools are not known yet, or
        that is not up (its copy of the catalogue may be stale). A server up with a known catalogue lists what it
        offers now, so it excuses no other name (with the default empty prefix it would excuse every name)."""
        return any(
            name.startswith(upstream.config.prefix) and not (upstream.catalogue.known and upstream.state == "up")
            for upstream in self.upstreams
        )

    def why_not_served(self, name: str, principal: Principal) -> str | None:
        # The server the name's prefix points to (the longest prefix: an empty one only when no other matches); its
        # name and state only, to a caller with its scope (the last error, a path or a URL, is in the log).
        matching = [up for up in self.upstreams if name.startswith(up.config.prefix)]
        longest = max((len(up.config.prefix) for up in matching), default=0)
        for up in matching:
            if len(up.config.prefix) == longest and not up.catalogue.known and up.state in ("down", "starting"):
                if principal.allows(up.config.scope):
                    return f"remote server {up.name!r}, whose tools are not known yet, is {up.state}"
        return None

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
            if _debug_logged():  # results can be large: rendered only when logged
                # Remote text: the server's own secrets replaced first (a tool may echo its key), then the log
                # redaction like every line.
                rendered = json.dumps(
                    {"content": list(result.content), "structured": result.structured}, ensure_ascii=False, default=str
                )
                log.debug(
                    "upstream result",
                    upstream=upstream.name,
                    remote_tool=remote,
                    is_error=result.is_error,
                    result=upstream.scrub(rendered),
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


def _debug_logged() -> bool:
    """Whether a debug line would be written (the gateway's logger knows; another an embedding program configured
    may not say, and then it is assumed)."""
    try:
        return bool(log.is_enabled_for(logging.DEBUG))
    except AttributeError:
        return True
