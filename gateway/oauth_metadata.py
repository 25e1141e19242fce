"""OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint, served when tokens come from an issuer.

``GET /.well-known/oauth-protected-resource<mcp path>`` (the RFC's path-suffixed form, which MCP clients try first)
and ``GET /.well-known/oauth-protected-resource`` (the root form older clients use) both answer::

    {"resource": "<public_url>/mcp", "authorization_servers": ["<issuer>"],
     "scopes_supported": [<every scope a tool or resource needs>], "bearer_methods_supported": ["header"]}

An MCP client that gets a 401 follows the challenge's ``resource_metadata`` URL here, then asks the authorization
server for a token whose audience is ``resource``. The documents are public and readable from any origin.

``authorization_servers`` lists only issuers that are URLs (RFC 9728 §2 takes RFC 8414 issuer identifiers: ``https``,
no query or fragment; ``http`` is accepted for a loopback host); an issuer that is a plain name, as the gateway's
own issuer may be, is left out, with a warning at start. Without ``transport.public_url`` the resource URL is
derived from the request: :mod:`gateway.http_security` checks the ``Host`` of these paths against the allowed hosts
(421 otherwise), so a document only ever names a host the gateway serves and may be cached.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import structlog
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route, request_response

from gateway.http_auth import HttpAuth, required_scopes
from gateway.runtime import GatewayRuntime

log = structlog.get_logger(__name__)

WELL_KNOWN = "/.well-known/oauth-protected-resource"
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


def metadata_paths(mcp_path: str) -> list[str]:
    """The path-suffixed form first (RFC 9728 §3.1), then the root form."""
    return [WELL_KNOWN + mcp_path, WELL_KNOWN]


def resource_url(runtime: GatewayRuntime, request: Request | None = None) -> str | None:
    """The MCP endpoint's public URL: ``transport.public_url`` + path, else derived from ``request``."""
    t = runtime.loaded.config.transport
    if t.public_url:
        return t.public_url.rstrip("/") + t.path
    if request is None:
        return None
    return f"{request.url.scheme}://{request.url.netloc}{t.path}"


def is_issuer_url(issuer: str) -> bool:
    """Whether ``issuer`` is an RFC 8414 issuer identifier: an ``https`` URL (``http`` for a loopback host) with a
    host and no query or fragment."""
    try:
        parts = urlsplit(issuer)
        host = parts.hostname
    except ValueError:
        return False
    if not host or parts.query or parts.fragment or "?" in issuer or "#" in issuer:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and host in _LOOPBACK)


def metadata_document(runtime: GatewayRuntime, auth: HttpAuth, request: Request | None = None) -> dict[str, Any]:
    """The RFC 9728 document; ``authorization_servers`` is left out when no issuer is a URL."""
    servers = [issuer for issuer in auth.issuers if is_issuer_url(issuer)]
    document: dict[str, Any] = {"resource": resource_url(runtime, request)}
    if servers:
        document["authorization_servers"] = servers
    document.update(
        scopes_supported=required_scopes(runtime), bearer_methods_supported=["header"], resource_name=runtime.name
    )
    return document


def protected_resource_routes(runtime: GatewayRuntime, auth: HttpAuth) -> list[BaseRoute]:
    """The metadata routes, or none when no auth provider names an issuer."""
    if not auth.issuers:
        return []
    _check_consistency(runtime, auth)

    async def metadata(request: Request) -> JSONResponse:
        return JSONResponse(metadata_document(runtime, auth, request), headers={"Cache-Control": "public, max-age=300"})

    endpoint = CORSMiddleware(
        request_response(metadata), allow_origins=["*"], allow_methods=["GET", "OPTIONS"], allow_headers=["*"]
    )
    paths = metadata_paths(runtime.loaded.config.transport.path)
    return [Route(path, endpoint, methods=["GET", "OPTIONS"]) for path in paths]


def _check_consistency(runtime: GatewayRuntime, auth: HttpAuth) -> None:
    """Warn when the challenge will not lead clients here, or when tokens minted for this resource would be
    refused (their audience is the resource URL, RFC 8707), and when an issuer cannot be published."""
    for issuer in auth.issuers:
        if not is_issuer_url(issuer):
            log.warning(
                "the protected-resource metadata leaves out an issuer that is not a URL (RFC 9728 names authorization "
                "servers by their https issuer URL)",
                issuer=issuer,
            )
    bearer = auth.challenge("Bearer")
    announced = bearer.params.get("resource_metadata") if bearer else None
    resource = resource_url(runtime)
    if resource is None:
        if announced is None:
            log.warning(
                "OAuth clients cannot discover the protected-resource metadata: set transport.public_url and the "
                "jwt authenticator's resource_metadata_url",
            )
        return
    base = resource[: -len(runtime.loaded.config.transport.path)]
    expected = base + metadata_paths(runtime.loaded.config.transport.path)[0]
    if announced != expected and announced != base + WELL_KNOWN:
        log.warning(
            "the 401 challenge does not point at this gateway's protected-resource metadata",
            announced=announced,
            expected=expected,
            hint=f'set resource_metadata_url = "{expected}" in [plugins.auth.jwt]',
        )
    if auth.audiences and resource not in auth.audiences:
        log.warning(
            "tokens minted for this resource (audience = resource URL) would be refused",
            resource=resource,
            audiences=list(auth.audiences),
        )
