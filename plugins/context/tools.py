"""The four MCP tools, named and shaped as ``context-engine-api.md`` section 2 says. Handlers only translate:
the work is in :class:`~gateway_plugins.context.service.ContextService` and the modules it uses."""

from __future__ import annotations

from typing import Any

from gateway.api import CallContext, ScopeByArgument, Tool, ToolAnnotations
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
from gateway_plugins.context.scopes import CONNECTORS_READ, CONNECTORS_WRITE, INDEX_READ, INDEX_WRITE, SEARCH_READ
from gateway_plugins.context.search import format_results, search
from gateway_plugins.context.service import DEFAULT_TENANT, ContextService, field_error
from gateway_plugins.context.tenant_policy import restricted

__all__ = ["build_tools", "index_control", "manage_connectors"]

INDEX_SCOPES = ScopeByArgument("action", {"status": INDEX_READ})
"""``context.index_control``: ``status`` reads (``index:read``), the other actions write (``index:write``)."""
CONNECTOR_SCOPES = ScopeByArgument("action", {"list": CONNECTORS_READ})
"""``context.connector_management``: ``list`` reads (``connectors:read``), the other actions write."""


def _tenant(ctx: CallContext) -> str:
    return ctx.principal.tenant or DEFAULT_TENANT


async def index_control(
    service: ContextService, tenant: str, args: IndexControlInput, *, restricted: bool = False
) -> IndexControlOutput:
    """``context.index_control``: its action, by the service's operation of that name."""
    if args.action == "status":
        return await service.index_status(tenant)
    if args.action == "stop":
        return await service.stop_indexing(tenant)
    force = args.action == "force_reindex"
    return await service.start_indexing(tenant, args.connectors, force=force, restricted=restricted)


async def manage_connectors(
    service: ContextService, tenant: str, args: ConnectorInput, *, restricted: bool = False
) -> ConnectorOutput:
    """``context.connector_management``: its action, by the service's operation of that name. ``restricted``: the
    caller is authenticated, and what its connectors may name is ``[plugins.context.tenant_connectors]``'s."""
    action, connector_id, config = args.action, args.connector_id, args.connector_config
    if action == "list":
        infos = await service.list_connectors(tenant)
        return ConnectorOutput(action=action, message=f"{len(infos)} connector(s)", connectors=infos)
    if action == "add":
        if not config:
            raise field_error("connector_config", "required for add")
        info = await service.add_connector(tenant, config, restricted=restricted)
        message = f"connector {info.id!r} added; run context.index_control start to index it"
        return ConnectorOutput(action=action, message=message, connectors=[info])
    if not connector_id:
        raise field_error("connector_id", f"required for {action}")
    if action == "update":
        if not config:
            raise field_error("connector_config", "required for update")
        change = await service.update_connector(tenant, connector_id, config, restricted=restricted)
        message = f"connector {connector_id!r} updated" + (f"; {change.note}" if change.note else "")
        return ConnectorOutput(action=action, message=message, connectors=[change.connector])
    removed = await service.remove_connector(tenant, connector_id)
    return ConnectorOutput(
        action=action, message=f"connector {connector_id!r} removed with its {removed} indexed chunk(s)"
    )


def build_tools(service: ContextService) -> list[Tool[Any, Any]]:
    async def search_tool(args: SearchInput, ctx: CallContext) -> SearchOutput:
        return await search(service, _tenant(ctx), args)

    async def related_tool(args: RelatedInput, ctx: CallContext) -> RelatedOutput:
        return await related_info(service, _tenant(ctx), args)

    async def index_tool(args: IndexControlInput, ctx: CallContext) -> IndexControlOutput:
        return await index_control(service, _tenant(ctx), args, restricted=restricted(ctx))

    async def connectors_tool(args: ConnectorInput, ctx: CallContext) -> ConnectorOutput:
        return await manage_connectors(service, _tenant(ctx), args, restricted=restricted(ctx))

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
            annotations=ToolAnnotations(
                read_only=True, destructive=False, idempotent=True, open_world=False, title="Search the indexed code"
            ),
            scope=SEARCH_READ,
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
            annotations=ToolAnnotations(
                read_only=True, destructive=False, idempotent=True, open_world=False, title="Related information"
            ),
            scope=SEARCH_READ,
            text_indent=2,
        ),
        Tool(
            "context.index_control",
            "Control indexing operations: start (incremental: only changed files are re-indexed), stop (graceful), "
            "status (progress: completed/total/current_connector), force_reindex (re-chunk and re-embed everything).",
            IndexControlInput,
            IndexControlOutput,
            index_tool,
            annotations=ToolAnnotations(
                read_only=False, destructive=False, idempotent=False, open_world=False, title="Index control"
            ),
            scope=INDEX_WRITE,
            scope_by=INDEX_SCOPES,
            text_indent=2,
        ),
        Tool(
            "context.connector_management",
            "Manage data source connectors: list, add, update, remove (its indexed content is removed too). "
            'connector_config names an installed connector type and its options: {"type": "file", "name": ..., '
            '"root": "/path/to/repo"}, {"type": "github", "name": ..., "repository": "org/repo", '
            '"token": {"env": "GITHUB_TOKEN"}}, "jira" or "slack" likewise; an unknown type or option is refused '
            "naming the field.",
            ConnectorInput,
            ConnectorOutput,
            connectors_tool,
            annotations=ToolAnnotations(
                read_only=False, destructive=True, idempotent=False, open_world=False, title="Connector management"
            ),
            scope=CONNECTORS_WRITE,
            scope_by=CONNECTOR_SCOPES,
            text_indent=2,
        ),
    ]
