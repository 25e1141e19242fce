"""The ``context`` tool pack: four tools, the ``engine://files/{+path}`` resources and the REST API v1, over one
service layer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.api import (
    CallContext,
    PackContext,
    ResourceContent,
    ResourcePage,
    ResourceTemplate,
    RestRoute,
    Tool,
    ToolPack,
)
from gateway_plugins.context.config import ContextConfig
from gateway_plugins.context.resources import PREFIX, list_files, read_path
from gateway_plugins.context.rest import build_routes
from gateway_plugins.context.scopes import SEARCH_READ
from gateway_plugins.context.service import ContextService
from gateway_plugins.context.tools import build_tools

__all__ = ["INSTRUCTIONS", "ContextPack"]

INSTRUCTIONS = """\
Context Engine: the indexed code of the user's repositories.
- Call context.search with the user's question (or a pasted error) to get the relevant functions and files before \
answering questions about the code; pass work_context.active_file when a file is open.
- context.get_related_info gives a file's history, authors and import neighbours.
- Files are resources: engine://files/<path> (a directory URI lists its entries).
- If search reports index_status 'empty' or 'no_connectors', add a connector with context.connector_management and \
run context.index_control start.
"""


class ContextPack(ToolPack):
    name = "context"
    instructions = INSTRUCTIONS

    def __init__(self, config: ContextConfig, context: PackContext) -> None:
        self.config = config
        self.service = ContextService(config, context)
        self._tools = build_tools(self.service)

    def tools(self) -> Sequence[Tool[Any, Any]]:
        return self._tools

    def rest_routes(self) -> Sequence[RestRoute]:
        """The REST API v1 (``/api/v1/search``, ``/index/...``, ``/connectors``, ``/config``, ``/health``,
        ``/status``) over the same service as the tools."""
        return build_routes(self.service)

    def resource_templates(self) -> Sequence[ResourceTemplate]:
        async def read(variables: Mapping[str, str], ctx: CallContext) -> ResourceContent:
            return await read_path(self.service, variables, ctx)

        async def listing(cursor: str | None, ctx: CallContext) -> ResourcePage:
            return await list_files(self.service, cursor, ctx)

        return [
            ResourceTemplate(
                uri_template=PREFIX + "{+path}",
                name="Indexed files",
                read=read,
                description="A file of an indexed repository (text with its MIME type); a directory URI lists it.",
                mime_type="text/plain",
                scope=SEARCH_READ,
                list=listing,
            )
        ]

    async def start(self) -> None:
        await self.service.start()

    async def stop(self) -> None:
        await self.service.stop()
