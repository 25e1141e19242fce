"""How the configured authentication looks from outside: its challenge schemes and its OAuth issuers.

The host never imports an auth plugin, so it learns what the authenticator speaks from the protocol itself: the
``WWW-Authenticate`` challenge it sends (RFC 9110 §11.6.1: one challenge per accepted scheme, e.g.
``Bearer realm="gateway", ApiKey realm="gateway", header="X-API-Key"``), and from the validated configuration of
the auth providers in use (an ``issuer`` field names the OAuth authorization server that mints its tokens).
The OpenAPI document's security schemes and the RFC 9728 protected-resource metadata are both derived from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import structlog

from gateway.api.auth import Authenticator
from gateway.api.registry import AUTH
from gateway.runtime import GatewayRuntime

log = structlog.get_logger(__name__)

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_PARAM = re.compile(rf"\s*({_TOKEN})\s*=\s*({_TOKEN}|{_QUOTED})\s*(?:,|$)")
_SCHEME = re.compile(rf"\s*({_TOKEN})(?=\s|,|$)\s*,?")
_TOKEN68 = re.compile(r"\s*[A-Za-z0-9\-._~+/]+=*\s*(?:,|$)")


@dataclass(frozen=True)
class Challenge:
    """One ``WWW-Authenticate`` challenge: its scheme (as sent) and its auth-params (names lower-cased)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)


def parse_challenges(value: str | None) -> list[Challenge]:
    """The challenges of a ``WWW-Authenticate`` value (RFC 9110 §11.6.1); unparseable parts are skipped."""
    challenges: list[Challenge] = []
    text = value or ""
    pos = 0
    while pos < len(text):
        if text[pos] in " \t,":
            pos += 1
            continue
        param = _PARAM.match(text, pos)
        if param is not None and challenges:
            raw = param.group(2)
            if raw.startswith('"'):
                raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
            challenges[-1].params[param.group(1).lower()] = raw
            pos = param.end()
            continue
        scheme = _SCHEME.match(text, pos)
        if scheme is not None:
            challenges.append(Challenge(scheme.group(1)))
            pos = scheme.end()
            token68 = _TOKEN68.match(text, pos)
            if token68 is not None and _PARAM.match(text, pos) is None:
                pos = token68.end()
            continue
        comma = text.find(",", pos)
        pos = len(text) if comma < 0 else comma + 1
    return challenges


@dataclass(frozen=True)
class HttpAuth:
    """The deployment's authentication as HTTP clients see it. ``authenticator`` is None when it is off."""

    authenticator: Authenticator | None
    challenges: tuple[Challenge, ...] = ()
    issuers: tuple[str, ...] = ()
    """OAuth authorization servers whose tokens are accepted (from each auth provider's ``issuer`` setting)."""
    audiences: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.authenticator is not None

    def challenge(self, scheme: str) -> Challenge | None:
        """The challenge of ``scheme`` (case-insensitive), if the authenticator sends one."""
        return next((c for c in self.challenges if c.scheme.lower() == scheme.lower()), None)


def describe_auth(runtime: GatewayRuntime) -> HttpAuth:
    """Build (if not yet built) the configured authenticator and describe it.

    With ``auth = "none"`` callers run as the gateway's identity, unless a ``[plugins.auth.none]`` table names
    the principal they run as.
    """
    cfg = runtime.loaded.config
    if cfg.providers.auth == "none" and "none" not in cfg.plugins.get("auth", {}):
        return HttpAuth(None)  # every HTTP caller is the gateway's own identity, as over stdio
    authenticator = runtime.providers.get(AUTH)
    issuers: list[str] = []
    audiences: list[str] = []
    for config in _auth_configs_in_use(runtime):
        issuers += _strings(getattr(config, "issuer", None))
        audiences += _strings(getattr(config, "audience", None))
    return HttpAuth(
        authenticator,
        tuple(parse_challenges(authenticator.challenge())),
        tuple(dict.fromkeys(issuers)),
        tuple(dict.fromkeys(audiences)),
    )


def _auth_configs_in_use(runtime: GatewayRuntime) -> list[Any]:
    """The validated tables of the auth providers built so far: the configured one and, for a composite such as
    ``chain``, the members it built through the provider hub."""
    configs = []
    for name in runtime.providers.built(AUTH):
        config = runtime.loaded.plugin_config(runtime.plugins.registry.provider(AUTH, name))
        if config is not None:
            configs.append(config)
    return configs


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def required_scopes(runtime: GatewayRuntime) -> list[str]:
    """Every scope a served tool or resource requires, sorted."""
    scopes = {scope for served in runtime.tools.values() for scope in served.tool.scopes}
    scopes |= {resource.scope for _, resource in runtime.resources.values()}
    scopes |= {template.scope for _, template, _ in runtime.templates}
    return sorted(scope for scope in scopes if scope)
