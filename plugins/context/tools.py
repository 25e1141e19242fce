"""The four MCP tools, named and shaped as ``context-engine-api.md`` section 2 says. Handlers only translate:
the work is in :class:`~gateway_plugins.context.service.ContextService` and the modules it uses."""

from __future__ import annotations

from typing import Any

from gateway.api import CallContext, Tool, ToolAnnotations
from gateway_plugins.context.models import (
    ConnectorInput,
    ConnectorOutput,
    IndexControlInput,
    IndexControlOutput,
    RelatedInput,
    RelatedOutput,
    SearchInput,
    SearchOutput,
)
from gateway_plugins.context.related import related_info
from gateway_plugins.context.search import format_results, search
from gateway_plugins.context.service import DEFAULT_TENANT, ContextService

__all__ = ["SCOPES", "build_tools"]

SCOPES = {
    "search": "search:read",
    "related": "search:read",
    "index": "index:write",
    "connectors": "connectors:write",
}
"""The spec's scopes (REST section 1.1), reused for the MCP tools."""


def _tenant(ctx: CallContext) -> str:
    return ctx.principal.tenant or DEFAULT_TENANT


def build_tools(service: ContextService) -> list[Tool[Any, Any]]:
    async def search_tool(args: SearchInput, ctx: CallContext) -> SearchOutput:
        return await search(service, _tenant(ctx), args)

    async def related_tool(args: RelatedInput, ctx: CallContext) -> RelatedOutput:
        return await related_info(service, _tenant(ctx), args)

    async def index_tool(args: IndexControlInput, ctx: CallContext) -> IndexControlOutput:
        return await service.index_control(_tenant(ctx), args)

    async def connectors_tool(args: ConnectorInput, ctx: CallContext) -> ConnectorOutput:
        return await service.manage_connectors(_tenant(ctx), args.action, args.connector_id, args.connector_config)

    return [
        Tool(
            "context.search",
            "Performs a comprehensive search using the user's query and current working context to find the most "
            "relevant code, discussions, and documents. Returns the best chunks (functions, classes, doc sections) "
            "with file path, line span and qualified symbol, as text ready for the context window; pass "
            "work_context.active_file to favour the open file and its imports.",
            SearchInput,
            SearchOutput,
            search_tool,
            annotations=ToolAnnotations(read_only=True, idempotent=True, title="Search the indexed code"),
            scope=SCOPES["search"],
            text=format_results,
        ),
        Tool(
            "context.get_related_info",
            "Finds information directly related to the user's active file or ticket: recent commits and authors, "
            "files it imports and that import it, files changed with it; for a ticket id, the commits that mention "
            "it. Use this for vague questions like 'what's the history of this file?'.",
            RelatedInput,
            RelatedOutput,
            related_tool,
            annotations=ToolAnnotations(read_only=True, idempotent=True, title="Related information"),
            scope=SCOPES["related"],
            text_indent=2,
        ),
        Tool(
            "context.index_control",
            "Control indexing operations: start (incremental: only changed files are re-indexed), stop (graceful), "
            "status (progress: completed/total/current_connector), force_reindex (re-chunk and re-embed everything).",
            IndexControlInput,
            IndexControlOutput,
            index_tool,
            annotations=ToolAnnotations(title="Index control"),
            scope=SCOPES["index"],
            text_indent=2,
        ),
        Tool(
            "context.connector_management",
            'Manage data source connectors: list, add (connector_config {"type": "file", "name": ..., '
            '"root": "/path/to/repo"}), update, remove (its indexed content is removed too).',
            ConnectorInput,
            ConnectorOutput,
            connectors_tool,
            annotations=ToolAnnotations(destructive=True, title="Connector management"),
            scope=SCOPES["connectors"],
            text_indent=2,
        ),
    ]
