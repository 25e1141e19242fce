"""MCP's JSON wire shapes for what packs publish, both ways: the gateway's types to wire JSON (what the MCP adapter
answers its clients) and wire JSON to the gateway's types (what an upstream server answered).

Plain protocol JSON (camelCase keys, as the MCP specification writes them), no SDK: the adapter hands these dicts
to the SDK, which validates a result before sending it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from gateway.api.resources import (
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptResult,
    Resource,
    ResourceContent,
    ResourceEntry,
    ResourceTemplate,
)
from gateway.api.tools import Tool, ToolAnnotations, ToolResult
from gateway.api.upstream import RemotePrompt, RemoteResource, RemoteResourceTemplate, RemoteTool

COMPLETE = {"resultType": "complete"}
"""Marks a result final in the 2026-07-28 era (which requires it); older eras drop the key."""


def dumps(message: Any) -> bytes:
    """``message`` as compact JSON: by orjson, or by the standard encoder for what orjson cannot hold (integers past
    64 bits, which JSON allows and the SDK's own encoder writes; nesting past 255 levels). ``ValueError`` when
    neither can write it."""
    try:
        return orjson.dumps(message)
    except orjson.JSONEncodeError:
        try:
            return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"not JSON: {exc}") from None


def _present(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


# -- the gateway's types to wire JSON ---------------------------------------------------------------------------


def tool_json(name: str, tool: Tool[Any, Any], input_schema: Any, output_schema: Any) -> dict[str, Any]:
    ann = tool.annotations
    hints = {
        "title": ann.title,
        "readOnlyHint": ann.read_only,
        "destructiveHint": ann.destructive,
        "idempotentHint": ann.idempotent,
        "openWorldHint": ann.open_world,
    }
    return _present(
        name=name,
        title=ann.title,
        description=tool.description,
        inputSchema=input_schema,
        outputSchema=output_schema,
        annotations=_present(**hints),
    )


def resource_json(resource: Resource) -> dict[str, Any]:
    return _present(
        uri=resource.uri,
        name=resource.name,
        title=resource.title,
        description=resource.description,
        mimeType=resource.mime_type,
    )


def entry_json(entry: ResourceEntry) -> dict[str, Any]:
    return _present(
        uri=entry.uri, name=entry.name, description=entry.description, mimeType=entry.mime_type, size=entry.size
    )


def template_json(template: ResourceTemplate) -> dict[str, Any]:
    return _present(
        uriTemplate=template.uri_template,
        name=template.name,
        title=template.title,
        description=template.description,
        mimeType=template.mime_type,
    )


def contents_json(uri: str, content: ResourceContent) -> dict[str, Any]:
    body = _present(uri=content.uri or uri, mimeType=content.mime_type)
    if content.blob is not None:
        return {**body, "blob": base64.b64encode(content.blob).decode("ascii")}
    return {**body, "text": content.text}


def prompt_json(name: str, prompt: Prompt) -> dict[str, Any]:
    arguments = [
        _present(name=a.name, title=a.title, description=a.description, required=a.required) for a in prompt.arguments
    ]
    return _present(name=name, title=prompt.title, description=prompt.description, arguments=arguments or None)


def prompt_result_json(prompt: PromptResult) -> dict[str, Any]:
    messages = [{"role": m.role, "content": dict(m.content)} for m in prompt.messages]
    return {**COMPLETE, **_present(description=prompt.description, messages=messages)}


def tool_result_json(content: Any, structured: Mapping[str, Any] | None, is_error: bool) -> dict[str, Any]:
    answer: dict[str, Any] = {**COMPLETE, "content": [dict(block) for block in content], "isError": is_error}
    if structured is not None:
        answer["structuredContent"] = dict(structured)
    return answer


# -- wire JSON to the gateway's types ---------------------------------------------------------------------------


def remote_tool(tool: Mapping[str, Any]) -> RemoteTool:
    ann = tool.get("annotations") or {}
    annotations = ToolAnnotations(  # a hint the server left unstated stays unstated
        read_only=_hint(ann.get("readOnlyHint")),
        destructive=_hint(ann.get("destructiveHint")),
        idempotent=_hint(ann.get("idempotentHint")),
        open_world=_hint(ann.get("openWorldHint")),
        title=tool.get("title") or ann.get("title"),
    )
    return RemoteTool(
        name=tool["name"],
        description=tool.get("description") or "",
        input_schema=tool.get("inputSchema") or {"type": "object"},
        output_schema=tool.get("outputSchema"),
        annotations=annotations,
    )


def needs_task(tool: Mapping[str, Any]) -> bool:
    """Whether a listed tool can only be called as a task (``execution.taskSupport`` is ``required``)."""
    execution = tool.get("execution")
    return isinstance(execution, Mapping) and execution.get("taskSupport") == "required"


def _hint(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def remote_resource(r: Mapping[str, Any]) -> RemoteResource:
    return RemoteResource(r["uri"], r["name"], r.get("description"), r.get("mimeType"), r.get("title"))


def remote_template(t: Mapping[str, Any]) -> RemoteResourceTemplate:
    return RemoteResourceTemplate(t["uriTemplate"], t["name"], t.get("description"), t.get("mimeType"), t.get("title"))


def remote_prompt(p: Mapping[str, Any]) -> RemotePrompt:
    arguments = tuple(
        PromptArgument(a["name"], a.get("description"), bool(a.get("required")), a.get("title"))
        for a in p.get("arguments") or ()
    )
    return RemotePrompt(p["name"], p.get("description"), arguments, p.get("title"))


def tool_result(answer: Mapping[str, Any]) -> ToolResult:
    return ToolResult(answer.get("content") or [], answer.get("structuredContent"), bool(answer.get("isError")))


def resource_contents(answer: Mapping[str, Any]) -> list[ResourceContent]:
    return [
        ResourceContent("", c.get("mimeType"), base64.b64decode(c["blob"]), c.get("uri"))
        if "blob" in c
        else ResourceContent(c.get("text", ""), c.get("mimeType"), None, c.get("uri"))
        for c in answer.get("contents") or []
    ]


def prompt_result(answer: Mapping[str, Any]) -> PromptResult:
    messages = [PromptMessage(m["role"], m["content"]) for m in answer.get("messages") or []]
    return PromptResult(messages, answer.get("description"))


# -- JSON-RPC messages ------------------------------------------------------------------------------------------


def json_kind(value: Any) -> str:
    """What a JSON value is, in words (for an error about a message that is not an object)."""
    if isinstance(value, list):
        return "an array (batches are not supported)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "null"


def message_problem(value: Any) -> str | None:
    """Why a decoded JSON value is not a message the gateway can answer, or None (the SDK checks the rest): a batch
    or a scalar, or a request whose id is null, a fraction or a boolean (it would read as a notification, and
    nothing would answer it; MCP request ids are strings or integers)."""
    if not isinstance(value, dict):
        return f"a message is a JSON object, not {json_kind(value)}"
    rpc_id = value.get("id")
    if "method" in value and "id" in value and (not isinstance(rpc_id, str | int) or isinstance(rpc_id, bool)):
        return f"id: a request's id is a string or an integer, not {json_kind(rpc_id)}"
    return None


def message_kind(message: dict[str, Any]) -> str | None:
    """Which JSON-RPC message ``message`` tries to be (the SDK model whose errors explain what is wrong)."""
    if "method" in message:
        return "JSONRPCRequest" if "id" in message else "JSONRPCNotification"
    if "error" in message:
        return "JSONRPCError"
    return "JSONRPCResponse" if "result" in message else None


PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_UNREAD: Any = object()
_RequestId = Annotated[int, Field(strict=True)] | str


class JSONRPCRequest(BaseModel):
    jsonrpc: Literal["2.0"]
    id: _RequestId
    method: str
    params: dict[str, Any] | None = None


class JSONRPCNotification(BaseModel):
    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] | None = None


class JSONRPCResponse(BaseModel):
    jsonrpc: Literal["2.0"]
    id: _RequestId
    result: dict[str, Any]


class ErrorData(BaseModel):
    code: int
    message: str
    data: Any = None


class JSONRPCError(BaseModel):
    jsonrpc: Literal["2.0"]
    id: _RequestId | None
    error: ErrorData


JSONRPC_ENVELOPES: TypeAdapter[Any] = TypeAdapter(JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError)
"""The JSON-RPC 2.0 envelopes exactly as the SDK declares them (``mcp.types.jsonrpc_message_adapter``: the same
pydantic types and names, so the same verdicts and messages), here so the check needs no SDK."""


@dataclass(frozen=True)
class Rejection:
    """The JSON-RPC error answering a stdio line or an HTTP body that is no message the gateway can answer."""

    code: int
    """:data:`PARSE_ERROR` or :data:`INVALID_REQUEST`."""
    message: str
    id: str | int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


def rejection(text: str | bytes, value: Any = _UNREAD) -> Rejection | None:
    """How to answer ``text`` (a stdio line, an HTTP request body) when it is not a JSON-RPC message the gateway
    can answer, else None; ``value`` is ``text`` decoded, when the caller has it. Every transport answers alike:

    * not JSON: ``-32700`` ``Parse error: ...``, id null;
    * a batch or a scalar, or a request whose id is null, a fraction or a boolean (it would read as a
      notification, and nothing would answer it): ``-32600`` ``Invalid Request: ...`` (:func:`message_problem`),
      id null;
    * an object that is no JSON-RPC 2.0 message: ``-32600`` ``Invalid Request: <field>: <problem>`` (at most three,
      for the kind of message it tries to be), with the id it carries when that is a string or an integer.
    """
    if value is not _UNREAD and _well_formed(value):  # what clients send, decided without pydantic
        return _id_rejection(value)
    try:
        JSONRPC_ENVELOPES.validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    else:
        return _id_rejection(json.loads(text) if value is _UNREAD else value)
    if any(error["type"] == "json_invalid" for error in errors):
        reason = errors[0]["msg"].removeprefix("Invalid JSON: ")
        return Rejection(PARSE_ERROR, f"Parse error: the line is not JSON ({reason})")
    value = json.loads(text) if value is _UNREAD else value
    if not isinstance(value, dict):
        return Rejection(INVALID_REQUEST, f"Invalid Request: {message_problem(value)}")
    rpc_id = value.get("id")
    branch = message_kind(value)
    problems = [
        f"{'.'.join(str(part) for part in error['loc'][1:]) or '(message)'}: {error['msg']}"
        for error in errors
        if error["loc"][:1] == (branch,)
    ]
    detail = "; ".join(problems[:3]) or "not a JSON-RPC 2.0 request, notification or response"
    return Rejection(INVALID_REQUEST, f"Invalid Request: {detail}", rpc_id if _is_request_id(rpc_id) else None)


def _well_formed(value: Any) -> bool:
    """A request or notification the envelopes accept (its id is :func:`message_problem`'s to check)."""
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0" or not isinstance(value.get("method"), str):
        return False
    params = value.get("params")
    return params is None or isinstance(params, dict)


def _id_rejection(value: Any) -> Rejection | None:
    problem = message_problem(value)
    return Rejection(INVALID_REQUEST, f"Invalid Request: {problem}") if problem else None


def _is_request_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)
