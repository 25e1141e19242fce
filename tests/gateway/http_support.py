"""Support for the HTTP security tests: an in-code pack with scoped tools that reports who called it, config
builders, API keys issued into the gateway's own store, ES256 tokens, and SDK clients that send headers."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

from gateway.api import AUTH, CallContext, Tool, ToolAnnotations, ToolPack, hookimpl
from gateway.app import prepare
from gateway.http_auth import parse_challenges
from gateway.providers import ProviderHub

ISSUER = "https://idp.test/"
PUBLIC_URL = "https://gateway.test"
RESOURCE = f"{PUBLIC_URL}/mcp"
METADATA_URL = f"{PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"
ACCEPT = {"Accept": "application/json, text/event-stream"}
SCOPED_TOOLS = {"acct_read": "acct:read", "acct_write": "acct:write"}


class Note(BaseModel):
    text: str = Field("hi", max_length=200)


class Caller(BaseModel):
    """Who the gateway says is calling: the principal the tool received."""

    key: str
    subject: str
    tenant: str | None
    method: str
    transport: str
    text: str
    headers: list[str] = Field(description="The request headers the tool was shown (names)")


async def _whoami(args: Note, ctx: CallContext) -> Caller:
    p = ctx.principal
    return Caller(
        key=p.key,
        subject=p.subject,
        tenant=p.tenant,
        method=p.method,
        transport=ctx.transport,
        text=args.text,
        headers=sorted(name.lower() for name in ctx.headers),
    )


class AcctPack(ToolPack):
    """``acct_whoami`` (no scope), ``acct_read`` (``acct:read``), ``acct_write`` (``acct:write``)."""

    name = "acct"

    def tools(self) -> list[Tool[Any, Any]]:
        read_only = ToolAnnotations(read_only=True)
        return [
            Tool("acct_whoami", "Who am I?", Note, Caller, _whoami, annotations=read_only),
            Tool("acct_read", "Read, with acct:read.", Note, Caller, _whoami, annotations=read_only, scope="acct:read"),
            Tool("acct_write", "Write, with acct:write.", Note, Caller, _whoami, scope="acct:write"),
        ]


class AcctPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("acct", lambda ctx: AcctPack())


PLUGINS = [("acct", AcctPlugin())]


def config(tmp_path: Path, auth: str, **tables: Any) -> dict[str, Any]:
    """The acct pack on a SQLite store behind ``auth``; ``tables`` add or replace top-level tables."""
    base: dict[str, Any] = {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "local"},
        "packs": {"enabled": ["acct"]},
        "sanitize": {"logs": ""},
        "providers": {"store": "sqlite", "auth": auth, "rate_limiter": "memory"},
    }
    for key, value in tables.items():
        base[key] = {**base.get(key, {}), **value}
    return base


def daily_quota(tools: Iterable[str], limit: int) -> dict[str, Any]:
    """``[pipeline]`` and ``[plugins.interceptor.rate_limit]`` for one daily rule on ``tools``."""
    return {
        "pipeline": {"interceptors": [{"name": "rate_limit"}]},
        "plugins": {
            "interceptor": {
                "rate_limit": {"rules": [{"name": "acct-daily", "tools": list(tools), "kind": "daily", "limit": limit}]}
            }
        },
    }


@asynccontextmanager
async def key_manager(source: Any) -> AsyncIterator[Any]:
    """The ``api_key`` authenticator on the deployment's own store (as ``gateway keys`` opens it)."""
    loaded, plugins = prepare(source, extra_plugins=PLUGINS)
    hub = ProviderHub(loaded, plugins.registry)
    try:
        yield hub.get(AUTH, "api_key")
    finally:
        await hub.aclose()


@dataclass(frozen=True)
class Idp:
    """An identity provider: an ES256 key whose public half the gateway trusts, minting tokens for it."""

    private: Any = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))

    def write_public_key(self, path: Path) -> Path:
        pem = self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        path.write_bytes(pem)
        return path

    def token(self, **overrides: Any) -> str:
        """A valid token for ``RESOURCE`` from ``ISSUER``; ``overrides`` change claims (``None`` removes one)."""
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "ada", "iat": now, "exp": now + 300, "tenant_id": "acme"}
        claims.update(overrides)
        return jwt.encode({k: v for k, v in claims.items() if v is not None}, self.private, algorithm="ES256")


def jwt_table(public_key: Path) -> dict[str, Any]:
    return {
        "algorithms": ["ES256"],
        "public_key_file": str(public_key),
        "issuer": ISSUER,
        "audience": RESOURCE,
        "resource_metadata_url": METADATA_URL,
    }


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rpc(method: str, params: dict[str, Any] | None = None, rpc_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params or {}}


INITIALIZE = rpc(
    "initialize",
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}},
)


def post_mcp(base: str, message: Any, headers: dict[str, str] | None = None, query: str = "") -> httpx.Response:
    """A raw Streamable HTTP POST (what any MCP client sends first)."""
    body = json.dumps(message).encode()
    merged = {**ACCEPT, "Content-Type": "application/json", **(headers or {})}
    return httpx.post(f"{base}/mcp{query}", content=body, headers=merged, timeout=30)


def call_rest(base: str, tool: str, body: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{base}/api/v1/tools/{tool}", json={} if body is None else body, headers=headers, timeout=30)


@asynccontextmanager
async def mcp_client(url: str, headers: dict[str, str] | None = None, *, mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK's ``Client`` over Streamable HTTP, sending ``headers`` with every request (the SDK's way: an
    ``httpx2.AsyncClient`` handed to ``streamable_http_client``)."""
    async with httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


def flatten(exc: BaseException) -> BaseException:
    """The one exception inside (nested) exception groups, as the SDK client's task groups raise it."""
    while isinstance(exc, BaseExceptionGroup):
        assert len(exc.exceptions) == 1, exc.exceptions
        exc = exc.exceptions[0]
    return exc


async def sdk_refusal(
    url: str, headers: dict[str, str] | None = None, *, mode: str = "auto", tool: str | None = None
) -> MCPError:
    """The ``MCPError`` the SDK client raises when connecting (or, with ``tool``, when calling it) is refused."""
    try:
        async with mcp_client(url, headers, mode=mode) as client:
            if tool is None:
                raise AssertionError("the connection was accepted")
            await client.call_tool(tool, {})
    except BaseException as exc:
        error = flatten(exc)
        if not isinstance(error, MCPError):
            raise
        return error
    raise AssertionError(f"calling {tool} was accepted")


def challenges(response: httpx.Response) -> dict[str, dict[str, str]]:
    """The ``WWW-Authenticate`` challenges by lower-cased scheme."""
    return {c.scheme.lower(): c.params for c in parse_challenges(response.headers.get("www-authenticate"))}
