"""The SDK's rules for the gateway's direct answer to a 2026-07-28 ``tools/call`` over HTTP and stdio
(:class:`gateway.http_fastcall.Exchange`), and the call itself, shared with the SDK server's handler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import structlog
from pydantic import ValidationError
from starlette.requests import Request

from gateway import wire
from gateway.api.context import CallContext, Principal
from gateway.http_fastcall import Admitted
from gateway.mcp_adapter.sdk import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    MCPError,
    Server,
    cancelled_request_id_from_params,
    check_accept_headers,
    classify_inbound_request,
    coerce_request_id,
    find_duplicated_routing_header,
    modern_error_data,
    mt,
    request_methods,
    validate_mcp_param_headers,
)
from gateway.runtime import CallOutcome, GatewayRuntime, UnknownTool

log = structlog.get_logger(__name__)


def _tool_result(outcome: CallOutcome) -> dict[str, Any]:
    """The result as wire JSON (the SDK validates it before sending): content blocks as they came, or one JSON text
    block with the body as structured content."""
    if outcome.content is not None:
        return wire.tool_result_json(outcome.content, outcome.structured, outcome.is_error)
    text = [{"type": "text", "text": outcome.text}]
    return wire.tool_result_json(text, None if outcome.is_error else outcome.body, outcome.is_error)


async def run_call(
    runtime: GatewayRuntime, name: str, arguments: Mapping[str, Any] | None, context: CallContext
) -> dict[str, Any]:
    """One tool call through the runtime, its result as wire JSON (both MCP paths: the SDK's handler and the
    direct answer); an unknown tool is the protocol's invalid-params error."""
    try:
        outcome = await runtime.call_tool(name, arguments, context)
    except UnknownTool as exc:
        raise MCPError(mt.INVALID_PARAMS, str(exc)) from None
    return _tool_result(outcome)


def _plain_call(message: Any) -> bool:
    """A JSON-RPC ``tools/call`` request that asked for no progress and no log messages."""
    params = message.get("params")
    rpc_id = message.get("id")
    return (
        message.get("jsonrpc") == "2.0"
        and message.get("method") == "tools/call"
        and isinstance(rpc_id, str | int)
        and not isinstance(rpc_id, bool)
        and isinstance(params, dict)
        and isinstance(meta := params.get("_meta"), dict)
        and meta.get("progressToken") is None
        and mt.LOG_LEVEL_META_KEY not in meta
    )


def _valid_call(message: dict[str, Any], headers: Mapping[str, str] | None) -> str | None:
    """The protocol version of a call the SDK would accept as it stands (envelope ladder, params), else None."""
    verdict = classify_inbound_request(message, headers=headers)
    if isinstance(verdict, InboundLadderRejection):
        return None
    try:
        request_methods.validate_client_request("tools/call", verdict.protocol_version, message["params"])
    except ValidationError:
        return None
    return verdict.protocol_version


class ModernCallExchange:
    """The SDK's rules for a 2026-07-28 ``tools/call`` exchange, for :class:`gateway.http_fastcall.FastToolCalls`
    and :class:`gateway.stdio_fastcall.FastStdioCalls`: it admits only what the SDK's own entry would serve the same
    way, and answers as that entry does."""

    def __init__(self, server: Server[Any], runtime: GatewayRuntime, *, json_response: bool) -> None:
        self._server = server
        self._runtime = runtime
        self._json_response = json_response

    def admit(self, scope: Any, headers: Mapping[str, str], message: Any) -> Admitted | None:
        if not _plain_call(message) or not headers.get("content-type", "").lower().startswith("application/json"):
            return None
        request = Request(scope)
        if find_duplicated_routing_header(request.headers.items()) is not None:  # the raw list: repeats show
            return None
        has_json, has_sse = check_accept_headers(request)
        if not has_json or not (self._json_response or has_sse):
            return None
        version = _valid_call(message, headers)
        if version is None:
            return None
        params = message["params"]
        name, arguments = params["name"], params.get("arguments")
        schema = getattr(self._runtime.tools.get(name), "input_schema", None)
        if schema is not None and validate_mcp_param_headers(schema, arguments or {}, headers) is not None:
            return None
        sse = has_sse and not self._json_response
        return Admitted(message["id"], name, arguments, sse=sse, version=version)

    # -- the stdio direct path (gateway.stdio_fastcall.StdioExchange) --

    def read(self, line: str) -> Any | None:
        try:  # as the SDK's stdio reader reads a line
            return mt.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError:
            return None

    def opens_modern(self, message: Any) -> bool | None:
        if not isinstance(message, mt.JSONRPCRequest):
            return None
        meta = (message.params or {}).get("_meta")
        return message.method != "initialize" and isinstance(meta, dict) and mt.PROTOCOL_VERSION_META_KEY in meta

    def admit_message(self, message: Any) -> Admitted | None:
        if not isinstance(message, mt.JSONRPCRequest):
            return None
        body = {"jsonrpc": "2.0", "id": message.id, "method": message.method, "params": message.params}
        if not _plain_call(body) or (version := _valid_call(body, None)) is None:
            return None
        params = body["params"]
        return Admitted(message.id, params["name"], params.get("arguments"), sse=False, version=version)

    def cancelled_key(self, message: Any) -> str | int | None:
        if not isinstance(message, mt.JSONRPCNotification) or message.method != "notifications/cancelled":
            return None
        request_id = cancelled_request_id_from_params(message.params)
        return None if request_id is None else coerce_request_id(request_id)

    def request_key(self, request_id: str | int) -> str | int:
        return coerce_request_id(request_id)

    def closed(self, request_id: str | int) -> bytes:
        error = {"code": mt.CONNECTION_CLOSED, "message": "Connection closed"}
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})

    async def call(self, call: Admitted, principal: Principal, headers: dict[str, str], transport: str) -> Any:
        context = self._runtime.new_context(principal=principal, transport=transport, headers=headers)
        return await run_call(self._runtime, call.name, call.arguments, context)

    def answer(self, call: Admitted, result: dict[str, Any]) -> bytes:
        request_id = call.request_id
        try:
            dumped = request_methods.serialize_server_result("tools/call", call.version, result)
        except ValidationError:
            log.exception("a tool call's result is not a valid CallToolResult")
            error = mt.ErrorData(code=mt.INTERNAL_ERROR, message="Handler returned an invalid result")
            return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error.model_dump(exclude_none=True)})
        dumped.setdefault("resultType", "complete")
        meta = dumped.get("_meta")
        if meta is None or (isinstance(meta, dict) and meta.get(mt.SERVER_INFO_META_KEY) is None):
            dumped["_meta"] = {**(meta or {}), mt.SERVER_INFO_META_KEY: self._server.server_info_stamp}
        try:
            return wire.dumps({"jsonrpc": "2.0", "id": request_id, "result": dumped})
        except ValueError:
            log.exception("a tool call's result cannot be written as JSON")
            error = mt.ErrorData(code=mt.INTERNAL_ERROR, message="Handler returned a result that is not JSON")
            return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error.model_dump(exclude_none=True)})

    def failure(self, request_id: str | int, exc: Exception) -> tuple[int, bytes]:
        error = modern_error_data(exc)
        body = {"jsonrpc": "2.0", "id": request_id, "error": error.model_dump(by_alias=True, exclude_none=True)}
        return ERROR_CODE_HTTP_STATUS.get(error.code, 200), orjson.dumps(body)
