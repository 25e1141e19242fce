"""Every name the gateway takes from the ``mcp`` SDK, imported here and nowhere else.

The SDK is a moving target (its second major version renamed the high-level server; the 2026-07-28 era moved
functions between modules): when it moves, this module is where the gateway follows it. The adapter's other
modules (:mod:`.server`, :mod:`.exchange`, :mod:`.upstream`) import the SDK through this one.
"""

from __future__ import annotations

import httpx2
import mcp.types as mt
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE, streamable_http_client
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.runner import modern_error_data
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import check_accept_headers
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_NAME_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    encode_header_value,
    find_duplicated_routing_header,
    mcp_param_headers,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from mcp_types import methods as request_methods

__all__ = [
    "DEFAULT_MAX_SSE_EVENT_SIZE",
    "ERROR_CODE_HTTP_STATUS",
    "MCP_NAME_HEADER",
    "MODERN_PROTOCOL_VERSIONS",
    "Client",
    "InMemorySubscriptionBus",
    "InboundLadderRejection",
    "ListenHandler",
    "MCPError",
    "NotificationOptions",
    "PromptsListChanged",
    "ResourcesListChanged",
    "Server",
    "SessionMessage",
    "StdioServerParameters",
    "ToolsListChanged",
    "TransportSecuritySettings",
    "cancelled_request_id_from_params",
    "check_accept_headers",
    "classify_inbound_request",
    "coerce_request_id",
    "encode_header_value",
    "find_duplicated_routing_header",
    "httpx2",
    "mcp_param_headers",
    "modern_error_data",
    "mt",
    "request_methods",
    "stdio_client",
    "stdio_server",
    "streamable_http_client",
    "validate_mcp_param_headers",
    "x_mcp_header_map",
]
