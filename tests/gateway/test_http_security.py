"""Authentication, scopes and request hardening over real HTTP on loopback: the REST facade and the MCP endpoint
(raw Streamable HTTP with httpx, and the SDK's ``Client`` sending headers), with the real ``api_key`` and ``jwt``
authenticators, in both MCP protocol eras."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from gateway.http_errors import JSONRPC_FORBIDDEN, JSONRPC_UNAUTHENTICATED
from gateway.testing import http_gateway
from tests.gateway.http_support import (
    INITIALIZE,
    METADATA_URL,
    PLUGINS,
    Idp,
    bearer,
    call_rest,
    challenges,
    config,
    jwt_table,
    key_manager,
    mcp_client,
    post_mcp,
    rpc,
    sdk_refusal,
)

MODES = ["legacy", "auto"]
APP_ORIGIN = "https://app.example"


@dataclass(frozen=True)
class Served:
    base: str
    config: dict[str, Any]
    keys: dict[str, str]

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"


def _envelope(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert set(error) >= {"code", "message", "detail", "correlation_id", "retryable"}
    assert isinstance(error["detail"], str) and error["detail"]
    assert response.headers["X-Correlation-ID"] == error["correlation_id"]
    return error


def _rpc_error(response: httpx.Response, status: int, rpc_code: int, code: str) -> dict[str, Any]:
    """A refused JSON-RPC request: the same status, a JSON-RPC error for its id, the envelope in ``data``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == INITIALIZE["id"]
    assert body["error"]["code"] == rpc_code
    data = body["error"]["data"]
    assert data["code"] == code and data["message"] == body["error"]["message"]
    return data


# -- API keys ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    cfg = config(tmp_path_factory.mktemp("keyed"), "api_key")

    async def issue() -> dict[str, str]:
        async with key_manager(cfg) as manager:
            reader = await manager.create_key(name="reader", scopes=["acct:read"], tenant="acme")
            writer = await manager.create_key(name="writer", scopes=["acct:read", "acct:write"], tenant="acme")
            return {"reader": reader.key, "writer": writer.key}

    keys = anyio.run(issue)
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _runtime):
        yield Served(base, cfg, keys)


def _tampered(key: str) -> str:
    return key[:-1] + ("A" if key[-1] != "A" else "B")


KEY_CASES = {
    "no credentials": (lambda keys: {}, "missing"),
    "malformed key": (lambda keys: {"X-API-Key": "junk"}, "malformed"),
    "wrong secret": (lambda keys: {"X-API-Key": _tampered(keys["reader"])}, "unknown"),
    "bearer instead of key": (lambda keys: bearer(keys["reader"]), "missing"),
}
API_KEY_CHALLENGE = 'ApiKey realm="gateway", header="X-API-Key"'


@pytest.mark.parametrize("case", list(KEY_CASES))
def test_bad_api_keys_are_refused_on_rest_and_mcp(keyed: Served, case: str) -> None:
    make_headers, reason = KEY_CASES[case]
    headers = make_headers(keyed.keys)
    responses = [
        call_rest(keyed.base, "acct_whoami", headers=headers),
        httpx.get(f"{keyed.base}/api/v1/tools", headers=headers),
    ]
    for response in responses:
        error = _envelope(response, 401, "AUTHENTICATION_ERROR")
        assert error["details"] == {"code": "unauthorized", "reason": reason}
        assert response.headers["WWW-Authenticate"] == API_KEY_CHALLENGE
    over_mcp = post_mcp(keyed.base, INITIALIZE, headers)
    assert _rpc_error(over_mcp, 401, JSONRPC_UNAUTHENTICATED, "AUTHENTICATION_ERROR")["details"]["reason"] == reason
    assert over_mcp.headers["WWW-Authenticate"] == API_KEY_CHALLENGE
    assert keyed.keys["reader"][10:] not in over_mcp.text + responses[0].text


def test_a_key_in_the_query_string_is_refused_even_when_valid(keyed: Served) -> None:
    key = keyed.keys["writer"]
    for name in ("api_key", "access_token", "X-API-Key"):
        rest = httpx.post(f"{keyed.base}/api/v1/tools/acct_whoami?{name}={key}", json={}, timeout=30)
        assert _envelope(rest, 401, "AUTHENTICATION_ERROR")["details"]["reason"] == "query_string"
        over_mcp = post_mcp(keyed.base, INITIALIZE, query=f"?{name}={key}")
        assert _rpc_error(over_mcp, 401, JSONRPC_UNAUTHENTICATED, "AUTHENTICATION_ERROR")["details"]["reason"] == (
            "query_string"
        )
    # even alongside a valid header: the URL has already leaked the secret into logs
    both = post_mcp(keyed.base, INITIALIZE, {"X-API-Key": key}, query=f"?api_key={key}")
    assert both.status_code == 401


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_client_sees_why_it_was_refused(keyed: Served, mode: str) -> None:
    for headers, reason in (({}, "missing"), ({"X-API-Key": _tampered(keyed.keys["reader"])}, "unknown")):
        error = await sdk_refusal(keyed.mcp, headers, mode=mode)
        assert error.code == JSONRPC_UNAUTHENTICATED
        assert error.data["code"] == "AUTHENTICATION_ERROR" and error.data["details"]["reason"] == reason
    in_query = await sdk_refusal(f"{keyed.mcp}?api_key={keyed.keys['reader']}", mode=mode)
    assert in_query.data["details"]["reason"] == "query_string"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_revoked_key_stops_working_at_once(keyed: Served, mode: str) -> None:
    async with key_manager(keyed.config) as manager:
        issued = await manager.create_key(name=f"temp-{mode}", scopes=[], tenant="acme")
    headers = {"X-API-Key": issued.key}
    async with mcp_client(keyed.mcp, headers, mode=mode) as client:
        assert (await client.call_tool("acct_whoami", {})).structured_content["subject"] == f"key:{issued.info.id}"
    over_rest = call_rest(keyed.base, "acct_whoami", headers={**headers, "Cookie": "sid=1"}).json()
    assert over_rest["transport"] == "rest" and over_rest["method"] == "api_key"
    assert not {"x-api-key", "cookie"} & set(over_rest["headers"])  # credentials stop at the gateway
    async with key_manager(keyed.config) as manager:
        await manager.revoke_key(issued.info.id)
    rest = call_rest(keyed.base, "acct_whoami", headers=headers)
    assert _envelope(rest, 401, "AUTHENTICATION_ERROR")["details"]["reason"] == "revoked"
    raw = post_mcp(keyed.base, INITIALIZE, headers)
    assert _rpc_error(raw, 401, JSONRPC_UNAUTHENTICATED, "AUTHENTICATION_ERROR")["details"]["reason"] == "revoked"
    assert (await sdk_refusal(keyed.mcp, headers, mode=mode)).data["details"]["reason"] == "revoked"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_scopes_decide_what_a_key_sees_and_may_call(keyed: Served, mode: str) -> None:
    reader = {"X-API-Key": keyed.keys["reader"]}
    async with mcp_client(keyed.mcp, reader, mode=mode) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"acct_whoami", "acct_read"}
        assert (await client.call_tool("acct_read", {})).structured_content["tenant"] == "acme"
    listed = httpx.get(f"{keyed.base}/api/v1/tools", headers=reader).json()["tools"]
    assert {t["name"]: t["scope"] for t in listed} == {"acct_whoami": None, "acct_read": "acct:read"}
    refused = await sdk_refusal(keyed.mcp, reader, mode=mode, tool="acct_write")
    assert refused.code == JSONRPC_FORBIDDEN
    assert refused.data["details"] == {"code": "forbidden", "scope": "acct:write"}
    rest = call_rest(keyed.base, "acct_write", headers=reader)
    assert _envelope(rest, 403, "AUTHORIZATION_ERROR")["details"] == {"code": "forbidden", "scope": "acct:write"}
    assert rest.headers["WWW-Authenticate"] == API_KEY_CHALLENGE
    writer = {"X-API-Key": keyed.keys["writer"]}
    async with mcp_client(keyed.mcp, writer, mode=mode) as client:
        assert len((await client.list_tools()).tools) == 3
        assert not (await client.call_tool("acct_write", {})).is_error
    assert call_rest(keyed.base, "acct_write", headers=writer).status_code == 200


def test_a_session_belongs_to_the_key_that_opened_it(keyed: Served) -> None:
    owner, other = {"X-API-Key": keyed.keys["reader"]}, {"X-API-Key": keyed.keys["writer"]}
    opened = post_mcp(keyed.base, INITIALIZE, owner)
    assert opened.status_code == 200
    session = {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-06-18"}
    hijack = post_mcp(keyed.base, rpc("tools/list"), {**other, **session})
    assert _rpc_error(hijack, 403, JSONRPC_FORBIDDEN, "AUTHORIZATION_ERROR")["details"]["reason"] == "session"
    assert "WWW-Authenticate" not in hijack.headers
    assert httpx.delete(f"{keyed.mcp}", headers={**other, **session}).status_code == 403
    listed = post_mcp(keyed.base, rpc("tools/list"), {**owner, **session})
    assert listed.status_code == 200 and "acct_read" in listed.text and "acct_write" not in listed.text
    assert httpx.delete(f"{keyed.mcp}", headers={**owner, **session}).status_code in (200, 204)


@pytest.mark.parametrize("params", [[1], "acct_write", None, {"name": 42}])
def test_malformed_tool_calls_reach_the_sdk_which_refuses_them(keyed: Served, params: Any) -> None:
    headers = {"X-API-Key": keyed.keys["reader"]}
    opened = post_mcp(keyed.base, INITIALIZE, headers)
    session = {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-06-18"}
    response = post_mcp(
        keyed.base, {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}, {**headers, **session}
    )
    assert response.status_code < 500
    assert '"error"' in response.text and "acct:write" not in response.text


def test_an_unknown_tool_is_not_a_scope_leak(keyed: Served) -> None:
    reader = {"X-API-Key": keyed.keys["reader"]}
    assert _envelope(call_rest(keyed.base, "acct_nope", headers=reader), 404, "NOT_FOUND_ERROR")
    assert call_rest(keyed.base, "acct_nope").status_code == 401  # credentials are checked first


# -- JWT ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def idp() -> Idp:
    return Idp()


@pytest.fixture(scope="module")
def jwt_served(tmp_path_factory: pytest.TempPathFactory, idp: Idp) -> Iterator[Served]:
    tmp: Path = tmp_path_factory.mktemp("jwt")
    cfg = config(
        tmp,
        "jwt",
        transport={"public_url": "https://gateway.test", "allowed_origins": [APP_ORIGIN], "max_body_bytes": 4096},
        plugins={"auth": {"jwt": jwt_table(idp.write_public_key(tmp / "idp.pem"))}},
    )
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _runtime):
        yield Served(base, cfg, {})


TOKEN_CASES = {
    "no credentials": (lambda idp: {}, None),
    "expired": (lambda idp: bearer(idp.token(exp=0, iat=0)), "expired"),
    "wrong audience": (lambda idp: bearer(idp.token(aud="https://elsewhere.test/mcp")), "invalid_audience"),
    "wrong issuer": (lambda idp: bearer(idp.token(iss="https://evil-idp.test/")), "invalid_issuer"),
    "foreign signature": (lambda idp: bearer(Idp().token()), "invalid_signature"),
    "not a token": (lambda idp: {"Authorization": "Bearer not-a-jwt"}, "malformed"),
    "basic scheme": (lambda idp: {"Authorization": "Basic YWRhOnB3"}, None),
}


@pytest.mark.parametrize("case", list(TOKEN_CASES))
def test_bad_tokens_are_refused_on_rest_and_mcp(jwt_served: Served, idp: Idp, case: str) -> None:
    make_headers, reason = TOKEN_CASES[case]
    headers = make_headers(idp)
    rest = call_rest(jwt_served.base, "acct_whoami", headers=headers)
    error = _envelope(rest, 401, "AUTHENTICATION_ERROR")
    over_mcp = post_mcp(jwt_served.base, INITIALIZE, headers)
    data = _rpc_error(over_mcp, 401, JSONRPC_UNAUTHENTICATED, "AUTHENTICATION_ERROR")
    for response, detail in ((rest, error["details"]), (over_mcp, data["details"])):
        challenge = challenges(response)["bearer"]
        assert challenge["realm"] == "gateway"
        assert challenge["resource_metadata"] == METADATA_URL
        if reason is None:  # no token of ours was sent: a bare challenge (RFC 6750 §3.1)
            assert "error" not in challenge and detail["reason"] in ("missing", "unsupported_scheme")
        else:
            assert challenge["error"] == "invalid_token" and detail["reason"] == reason


def test_a_token_in_the_query_string_is_refused(jwt_served: Served, idp: Idp) -> None:
    token = idp.token(scope="acct:read")
    rest = httpx.get(f"{jwt_served.base}/api/v1/tools?access_token={token}", timeout=30)
    assert _envelope(rest, 401, "AUTHENTICATION_ERROR")["details"]["reason"] == "query_string"
    over_mcp = post_mcp(jwt_served.base, INITIALIZE, query=f"?access_token={token}")
    assert _rpc_error(over_mcp, 401, JSONRPC_UNAUTHENTICATED, "AUTHENTICATION_ERROR")["details"]["reason"] == (
        "query_string"
    )
    assert token not in rest.text + over_mcp.text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_token_scopes_over_mcp_and_rest(jwt_served: Served, idp: Idp, mode: str) -> None:
    reader = bearer(idp.token(scope="acct:read"))
    async with mcp_client(jwt_served.mcp, reader, mode=mode) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"acct_whoami", "acct_read"}
        caller = (await client.call_tool("acct_read", {})).structured_content
    shown = set(caller.pop("headers"))
    assert caller == {
        "key": "acme:ada",
        "subject": "ada",
        "tenant": "acme",
        "method": "jwt",
        "transport": "http",
        "text": "hi",
    }
    assert "authorization" not in shown and "host" in shown  # the token never reaches a tool
    refused = await sdk_refusal(jwt_served.mcp, reader, mode=mode, tool="acct_write")
    assert refused.code == JSONRPC_FORBIDDEN and refused.data["details"]["scope"] == "acct:write"
    raw = post_mcp(jwt_served.base, rpc("tools/call", {"name": "acct_write", "arguments": {}}), reader)
    assert _rpc_error(raw, 403, JSONRPC_FORBIDDEN, "AUTHORIZATION_ERROR")["details"]["scope"] == "acct:write"
    rest = call_rest(jwt_served.base, "acct_write", headers=reader)
    _envelope(rest, 403, "AUTHORIZATION_ERROR")
    for response in (raw, rest):
        challenge = challenges(response)["bearer"]
        assert challenge["error"] == "insufficient_scope" and challenge["scope"] == "acct:write"
    both = bearer(idp.token(scope="acct:read acct:write"))
    assert call_rest(jwt_served.base, "acct_write", headers=both).json()["method"] == "jwt"


# -- Origin, Host, body size ------------------------------------------------------------------------------------


def test_a_forbidden_origin_is_refused_before_authentication(jwt_served: Served, idp: Idp) -> None:
    headers = {"Origin": "http://evil.example", **bearer(idp.token(scope="acct:read"))}
    rest = call_rest(jwt_served.base, "acct_whoami", headers=headers)
    assert _envelope(rest, 403, "AUTHORIZATION_ERROR")["details"] == {"code": "forbidden", "reason": "origin"}
    over_mcp = post_mcp(jwt_served.base, INITIALIZE, headers)
    assert _rpc_error(over_mcp, 403, JSONRPC_FORBIDDEN, "AUTHORIZATION_ERROR")["details"]["reason"] == "origin"
    for response in (rest, over_mcp):
        assert "WWW-Authenticate" not in response.headers  # new credentials would not help
        assert "access-control-allow-origin" not in response.headers


def test_the_configured_origin_gets_cors(jwt_served: Served, idp: Idp) -> None:
    headers = {"Origin": APP_ORIGIN, **bearer(idp.token())}
    response = call_rest(jwt_served.base, "acct_whoami", headers=headers)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN
    assert "X-Correlation-ID" in response.headers["access-control-expose-headers"]
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,mcp-method"}
    allowed = httpx.options(f"{jwt_served.base}/mcp", headers={"Origin": APP_ORIGIN, **preflight})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == APP_ORIGIN
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    denied = httpx.options(f"{jwt_served.base}/mcp", headers={"Origin": "http://evil.example", **preflight})
    assert denied.status_code == 400 and "access-control-allow-origin" not in denied.headers


@pytest.mark.anyio
async def test_the_sdk_client_from_a_forbidden_origin_is_refused(jwt_served: Served, idp: Idp) -> None:
    headers = {"Origin": "http://evil.example", **bearer(idp.token())}
    refused = await sdk_refusal(jwt_served.mcp, headers, mode="legacy")
    assert refused.code == JSONRPC_FORBIDDEN and refused.data["details"]["reason"] == "origin"


def test_a_foreign_host_header_is_misdirected(jwt_served: Served, idp: Idp) -> None:
    headers = {"Host": "evil.example", **bearer(idp.token())}
    rest = call_rest(jwt_served.base, "acct_whoami", headers=headers)
    assert _envelope(rest, 421, "MISDIRECTED_REQUEST")["details"]["reason"] == "host"
    assert post_mcp(jwt_served.base, INITIALIZE, headers).status_code == 421
    assert httpx.get(f"{jwt_served.base}/health", headers={"Host": "10.1.2.3:8080"}).status_code == 200  # probes


def test_an_oversized_body_is_refused(jwt_served: Served, idp: Idp) -> None:
    headers = {**bearer(idp.token()), "Content-Type": "application/json"}
    big = b'{"text": "' + b"x" * 5000 + b'"}'

    def streamed() -> Iterator[bytes]:  # no Content-Length: chunked, counted while it arrives
        yield from (big[i : i + 1000] for i in range(0, len(big), 1000))

    for content in (big, streamed()):
        rest = httpx.post(f"{jwt_served.base}/api/v1/tools/acct_whoami", content=content, headers=headers)
        assert _envelope(rest, 413, "PAYLOAD_TOO_LARGE")["message"].endswith("4096 bytes")
    for content in (big, streamed()):  # the MCP endpoint answers in JSON-RPC: the body's id is unread, so null
        over_mcp = httpx.post(f"{jwt_served.base}/mcp", content=content, headers=headers)
        assert over_mcp.status_code == 413 and over_mcp.json()["id"] is None
        assert over_mcp.json()["error"]["data"]["code"] == "PAYLOAD_TOO_LARGE"
    assert httpx.post(f"{jwt_served.base}/mcp", content=big).status_code == 413  # before authentication


def test_rest_wants_json(jwt_served: Served, idp: Idp) -> None:
    headers = {**bearer(idp.token()), "Content-Type": "text/plain"}
    response = httpx.post(f"{jwt_served.base}/api/v1/tools/acct_whoami", content=b'{"text": "x"}', headers=headers)
    assert _envelope(response, 415, "UNSUPPORTED_MEDIA_TYPE")
