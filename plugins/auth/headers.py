"""Reading credentials from request headers, and writing ``WWW-Authenticate`` challenges.

Authenticators receive the request headers as a ``Mapping[str, str]``: a Starlette ``Headers`` object over HTTP
(case-insensitive, may hold repeated fields), a plain ``dict`` in tests and in-memory transports. The helpers here
treat both alike and refuse what is ambiguous (a credential header sent twice).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gateway.api import Forbidden, GatewayError, Unauthenticated

MAX_CREDENTIAL_LENGTH = 8192
"""Longer credential values are refused before any parsing (no legitimate key or token is that long)."""

_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""RFC 6750 §2.1 ``b64token``: the only characters a bearer token may carry."""

_NOT_DESCRIPTION = re.compile(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]")


def refuse(reason: str, message: str) -> Unauthenticated:
    """An :class:`Unauthenticated` carrying a machine-readable ``reason`` (``details["reason"]``).

    The message is what the client sees: it must never contain the credential or any part of it.
    """
    return Unauthenticated(message, details={"reason": reason})


def reason_of(error: BaseException | None) -> str | None:
    """The ``reason`` an authenticator gave when it refused (``None`` when not one of ours)."""
    if isinstance(error, Unauthenticated):
        reason = error.details.get("reason")
        return reason if isinstance(reason, str) else None
    return None


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` (any case), or ``None`` when absent.

    Raises :class:`Unauthenticated` (``reason="malformed"``) when the header is repeated (a Starlette ``Headers``
    exposes every occurrence), is not text, or is implausibly long.
    """
    value = headers.get(name)
    lowered = name.lower()
    if value is None:
        value = headers.get(lowered)
    if value is None:
        for key, candidate in headers.items():
            if isinstance(key, str) and key.lower() == lowered:
                value = candidate
                break
    if value is None:
        return None
    getlist = getattr(headers, "getlist", None)
    if callable(getlist) and len(getlist(lowered)) > 1:
        raise refuse("malformed", f"the {name} header must be sent once")
    if not isinstance(value, str):
        raise refuse("malformed", f"the {name} header is not text")
    if len(value) > MAX_CREDENTIAL_LENGTH:
        raise refuse("malformed", f"the {name} header is too long")
    return value


def bearer_token(headers: Mapping[str, str]) -> str:
    """The token of ``Authorization: Bearer <token>`` (RFC 6750 §2.1; the scheme is case-insensitive).

    Raises :class:`Unauthenticated` with reason ``missing`` (no ``Authorization`` header),
    ``unsupported_scheme`` (another scheme, such as ``Basic``) or ``malformed``.
    """
    value = header_value(headers, "Authorization")
    if value is None or not value.strip():
        raise refuse("missing", "missing bearer token (send it as 'Authorization: Bearer <token>')")
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise refuse("unsupported_scheme", "the Authorization header must use the Bearer scheme")
    token = token.strip(" ")
    if not token:
        raise refuse("malformed", "the bearer token is empty")
    if not _B64TOKEN.fullmatch(token):
        raise refuse("malformed", "the bearer token contains characters a token cannot contain")
    return token


def quote(value: str) -> str:
    """An RFC 9110 ``quoted-string``. Control characters are dropped; quotes and backslashes are escaped."""
    cleaned = "".join(ch for ch in value if ch >= " " and ch != "\x7f")
    return '"' + re.sub(r'(["\\])', r"\\\1", cleaned) + '"'


def format_challenge(scheme: str, params: Mapping[str, str | None]) -> str:
    """``Scheme k1="v1", k2="v2"`` with every value quoted; ``None`` values are left out."""
    rendered = ", ".join(f"{key}={quote(value)}" for key, value in params.items() if value is not None)
    return f"{scheme} {rendered}" if rendered else scheme


def bearer_challenge(
    *,
    realm: str,
    error: GatewayError | None,
    resource_metadata: str | None = None,
    scope: str | None = None,
) -> str:
    """The RFC 6750 §3 ``WWW-Authenticate: Bearer ...`` value for a refused request.

    * no error, or the request carried no credentials: ``realm`` (and ``resource_metadata``) only, as §3.1 asks;
    * an :class:`Unauthenticated` for a credential that was present: ``error="invalid_token"`` with its message;
    * a :class:`Forbidden` (the principal lacks a scope): ``error="insufficient_scope"`` and the needed
      ``scope``, taken from ``scope`` or ``error.details["scope"]``.

    ``resource_metadata`` is the RFC 9728 protected-resource metadata URL that OAuth clients (MCP clients
    among them) follow to find the authorization server.
    """
    params: dict[str, str | None] = {"realm": realm}
    if isinstance(error, Forbidden):
        needed = scope or error.details.get("scope")
        params.update(
            error="insufficient_scope",
            error_description=_description(error.message),
            scope=needed if isinstance(needed, str) else None,
        )
    elif isinstance(error, Unauthenticated) and reason_of(error) not in (None, "missing", "unsupported_scheme"):
        params.update(error="invalid_token", error_description=_description(error.message))
    params["resource_metadata"] = resource_metadata
    return format_challenge("Bearer", params)


def _description(message: str) -> str:
    """RFC 6750 §3: ``error_description`` is printable ASCII without ``"`` and ``\\``."""
    return _NOT_DESCRIPTION.sub("", message)
