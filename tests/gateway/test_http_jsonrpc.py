"""Every refusal on the MCP endpoint is a JSON-RPC error the official SDK client can read (413, 401, 421, the SDK's
own plain-text refusals, malformed JSON), while the REST facade keeps its envelope. Real HTTP on loopback, the
real ``api_key`` authenticator, the SDK's ``Client`` in both protocol eras."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from gateway.http_errors import (
    JSONRPC_INVALID_REQUEST,
    JSONRPC_RATE_LIMITED,
    JSONRPC_UNAUTHENTICATED,
    error_body,
)
from gateway.http_jsonrpc import as_jsonrpc_error, request_id
from gateway.mcp_adapter import line_error
from gateway.mcp_adapter.sdk import mt
from gateway.testing import http_gateway
from gateway.wire import JSONRPC_ENVELOPES as wire_envelopes
from gateway.wire import rejection
from tests.gateway.http_support import (
    ACCEPT,
    INITIALIZE,
    PLUGINS,
    config,
    flatten,
    key_manager,
    mcp_client,
    post_mcp,
    sdk_refusal,
)

MODES = ["legacy", "auto"]
LIMIT = 4096
API_KEY_CHALLENGE = 'ApiKey realm="gateway", header="X-API-Key"'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    cfg = config(tmp_path_factory.mktemp("jsonrpc"), "api_key", transport={"max_body_bytes": LIMIT})

    async def issue() -> str:
        async with key_manager(cfg) as manager:
            return (await manager.create_key(name="caller", scopes=["acct:read"])).key

    key = anyio.run(issue)
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _runtime):
        yield base, {"X-API-Key": key}


def _rpc_error(response: httpx.Response, status: int, rpc_id: Any, code: int) -> dict[str, Any]:
    """``response`` is a JSON-RPC error for ``rpc_id`` at ``status``; returns its ``error`` object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == rpc_id and set(body) == {"jsonrpc", "id", "error"}
    assert body["error"]["code"] == code and isinstance(body["error"]["message"], str)
    return body["error"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_client_reads_why_an_oversized_call_was_refused(
    served: tuple[str, dict[str, str]], mode: str
) -> None:
    base, headers = served
    async with mcp_client(f"{base}/mcp", headers, mode=mode) as client:
        try:
            await client.call_tool("acct_whoami", {"text": "x" * (2 * LIMIT)})
        except BaseException as exc:
            error = flatten(exc)
            if not isinstance(error, MCPError):
                raise
        else:
            raise AssertionError("the oversized call was accepted")
        assert f"the request body exceeds the limit of {LIMIT} bytes" in str(error)
        assert error.code == JSONRPC_INVALID_REQUEST and error.data["code"] == "PAYLOAD_TOO_LARGE"
        after = await client.call_tool("acct_whoami", {"text": "small"})  # the connection is still usable
    assert after.structured_content["text"] == "small"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_client_reads_why_it_was_not_admitted(served: tuple[str, dict[str, str]], mode: str) -> None:
    base, _ = served
    expected = post_mcp(base, INITIALIZE).json()["error"]["message"]
    assert expected == "missing API key (send it in the X-API-Key header)"
    error = await sdk_refusal(f"{base}/mcp", {}, mode=mode)
    assert expected in str(error) and error.code == JSONRPC_UNAUTHENTICATED


def test_an_oversized_body_is_json_rpc_on_mcp_and_the_envelope_on_rest(served: tuple[str, dict[str, str]]) -> None:
    base, headers = served
    big = b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "' + b"x" * LIMIT + b'"}}'
    sent = {**headers, **ACCEPT, "Content-Type": "application/json"}
    error = _rpc_error(httpx.post(f"{base}/mcp", content=big, headers=sent), 413, None, JSONRPC_INVALID_REQUEST)
    assert error["data"]["code"] == "PAYLOAD_TOO_LARGE" and error["message"] == error["data"]["message"]
    rest = httpx.post(f"{base}/api/v1/tools/acct_whoami", content=big, headers=sent)
    assert (
        rest.status_code == 413 and rest.json()["error"]["code"] == "PAYLOAD_TOO_LARGE" and "jsonrpc" not in rest.json()
    )


def test_refusals_of_what_is_not_a_request_carry_a_null_id(served: tuple[str, dict[str, str]]) -> None:
    base, _ = served
    notification = post_mcp(base, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    stream = httpx.get(f"{base}/mcp", headers=ACCEPT)
    malformed = httpx.post(f"{base}/mcp", content=b"{not json", headers={**ACCEPT, "Content-Type": "application/json"})
    for response in (notification, stream, malformed):
        error = _rpc_error(response, 401, None, JSONRPC_UNAUTHENTICATED)
        assert error["data"]["details"]["reason"] == "missing"
        assert response.headers["WWW-Authenticate"] == API_KEY_CHALLENGE
        assert response.headers["X-Correlation-ID"] == error["data"]["correlation_id"]


def test_a_refused_request_is_answered_for_its_id(served: tuple[str, dict[str, str]]) -> None:
    base, headers = served
    misdirected = post_mcp(base, INITIALIZE, {**headers, "Host": "evil.example"})
    error = _rpc_error(misdirected, 421, INITIALIZE["id"], JSONRPC_INVALID_REQUEST)
    assert "transport.allowed_hosts" in error["message"] and error["data"]["code"] == "MISDIRECTED_REQUEST"


def test_malformed_json_reaches_the_sdk_which_answers_a_parse_error(served: tuple[str, dict[str, str]]) -> None:
    base, headers = served
    response = httpx.post(
        f"{base}/mcp", content=b"{not json", headers={**headers, **ACCEPT, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["jsonrpc"] == "2.0" and response.json()["error"]["code"] == -32700


def test_the_sdks_own_plain_refusals_become_json_rpc(served: tuple[str, dict[str, str]]) -> None:
    base, headers = served
    wrong_type = post_mcp(base, INITIALIZE, {**headers, "Content-Type": "text/plain"})
    error = _rpc_error(wrong_type, 400, INITIALIZE["id"], JSONRPC_INVALID_REQUEST)
    assert error["message"] == "Invalid Content-Type header" and error["data"]["code"] == "VALIDATION_ERROR"
    assert wrong_type.headers["X-Correlation-ID"] == error["data"]["correlation_id"]
    modern = {**headers, "Accept": "text/html", "MCP-Protocol-Version": "2026-07-28"}
    not_acceptable = _rpc_error(post_mcp(base, INITIALIZE, modern), 406, INITIALIZE["id"], JSONRPC_INVALID_REQUEST)
    assert not_acceptable["data"]["code"] == "NOT_ACCEPTABLE" and not_acceptable["message"].startswith(
        "Not Acceptable: the client must accept application/json"
    )
    assert "text/event-stream" in not_acceptable["message"]
    legacy = post_mcp(base, INITIALIZE, {**headers, "Accept": "text/html"})  # the SDK says why itself
    assert legacy.status_code == 406 and "Client must accept" in legacy.json()["error"]["message"]


def test_error_bodies_are_rewritten_once() -> None:
    limited = error_body(429, "rate limit exceeded for acct_read", retry_after=12.0)
    rewritten = as_jsonrpc_error(429, json.dumps({"error": limited}).encode(), 5)
    assert rewritten == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": JSONRPC_RATE_LIMITED, "message": "rate limit exceeded for acct_read", "data": limited},
    }
    already = b'{"jsonrpc": "2.0", "id": 5, "error": {"code": -32700, "message": "Parse error"}}'
    assert as_jsonrpc_error(400, already, 5) is None
    assert as_jsonrpc_error(502, b"", None)["error"]["message"] == "HTTP 502 Bad Gateway"  # type: ignore[index]
    assert [request_id(body) for body in (b'{"jsonrpc": "2.0", "id": "a", "method": "m"}', b'{"id": true}', b"[")] == [
        "a",
        None,
        None,
    ]


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', "not an array (batches are not supported)"),
        ("5", "not a number"),
        ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', "a request's id is a string or an integer, not null"),
        ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', "a request's id is a string or an integer, not a number"),
    ],
)
def test_a_body_that_is_no_message_is_an_invalid_request(
    served: tuple[str, dict[str, str]], body: str, text: str
) -> None:
    base, headers = served
    sent = {**headers, **ACCEPT, "Content-Type": "application/json"}
    error = _rpc_error(httpx.post(f"{base}/mcp", content=body, headers=sent), 400, None, JSONRPC_INVALID_REQUEST)
    assert error["message"] == f"Invalid Request: {text}" or text in error["message"], error
    refused = httpx.post(f"{base}/mcp", content=body, headers={**ACCEPT, "Content-Type": "application/json"})
    assert refused.status_code == 401  # authentication comes first


NOT_MESSAGES = [  # objects the SDK's HTTP transport answered with -32602 and a pydantic dump, id null
    '{"jsonrpc": "1.0", "id": 7, "method": "tools/list"}',
    '{"id": 7, "method": "tools/list"}',
    '{"jsonrpc": "2.0", "id": "q", "method": 5}',
    '{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]}',
    '{"jsonrpc": "2.0", "id": 7, "result": 5}',
    '{"jsonrpc": "2.0", "id": 7, "error": {"code": "x"}}',
    '{"jsonrpc": "2.0", "id": 7}',
    '{"foo": 1}',
]


@pytest.mark.parametrize("era", ["session", "2026-07-28"])
@pytest.mark.parametrize("body", NOT_MESSAGES)
def test_an_invalid_message_is_answered_as_over_stdio(served: tuple[str, dict[str, str]], era: str, body: str) -> None:
    base, headers = served
    sent = {**headers, **ACCEPT, "Content-Type": "application/json"}
    if era == "session":
        opened = post_mcp(base, INITIALIZE, headers)
        sent |= {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-06-18"}
    else:
        sent["MCP-Protocol-Version"] = era
    stdio = line_error(body)
    assert stdio is not None
    error = _rpc_error(httpx.post(f"{base}/mcp", content=body, headers=sent), 400, stdio.id, JSONRPC_INVALID_REQUEST)
    assert error["message"] == stdio.error.message and error["message"].startswith("Invalid Request: ")
    assert error["data"]["code"] == "VALIDATION_ERROR" and "pydantic" not in error["message"]


@pytest.mark.parametrize(
    "line",
    [
        *NOT_MESSAGES,
        "this is not json",
        "{not json",
        "[1, 2]",
        '"ping"',
        "null",
        '{"jsonrpc": "2.0", "id": null, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": true, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 1.5, "result": {}}',
        '{"jsonrpc": "2.0", "id": null, "error": {"code": -1, "message": "m"}}',
        '{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": null}',
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        '{"jsonrpc": "2.0", "method": "notifications/x", "params": 3}',
        '{"jsonrpc": "2.0", "id": "a", "result": {"x": 1}}',
    ],
)
def test_one_check_answers_lines_and_bodies(line: str) -> None:
    """:func:`gateway.wire.rejection` reads a message as the SDK's own envelopes do (the same verdict and the same
    errors), whether it is handed the text alone (stdio) or the decoded value too (the HTTP endpoint)."""
    sdk, ours = (_verdict(adapter, line) for adapter in (mt.jsonrpc_message_adapter, wire_envelopes))
    assert ours == sdk
    expected = rejection(line)
    if sdk is not None:
        assert expected is not None  # what the SDK would not read is answered
    try:
        decoded = json.loads(line)
    except ValueError:
        return
    again = rejection(line.encode(), decoded)  # as the HTTP endpoint calls it
    assert _fields(again) == _fields(expected)


def _fields(refusal: Any) -> tuple[Any, ...] | None:
    return None if refusal is None else (refusal.id, refusal.code, refusal.message)


def _verdict(adapter: Any, line: str) -> list[tuple[Any, ...]] | None:
    try:
        adapter.validate_json(line)
    except ValidationError as exc:
        return [(e["type"], e["loc"], e["msg"]) for e in exc.errors(include_url=False)]
    return None
