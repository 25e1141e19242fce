"""The ``chain`` authenticator: accept any of several methods (say JWTs for people and API keys for services).

Each member is asked in order. A member that finds *no credential of its kind* (reason ``missing`` or
``unsupported_scheme``) passes; the first member that finds one decides — a present but invalid credential is
refused, never retried with the next method.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.api import AUTH, Authenticator, Forbidden, Principal, ProviderContext, Unauthenticated
from gateway_plugins.auth.headers import reason_of, refuse

_PASS = frozenset({"missing", "unsupported_scheme"})


class ChainConfig(BaseModel):
    """``[plugins.auth.chain]``: the ``auth`` providers to accept, in order."""

    model_config = ConfigDict(extra="forbid")

    methods: list[str] = Field(default_factory=lambda: ["jwt", "api_key"], min_length=1)

    @field_validator("methods")
    @classmethod
    def _distinct(cls, methods: list[str]) -> list[str]:
        if "chain" in methods:
            raise ValueError("a chain cannot contain itself")
        if len(set(methods)) != len(methods):
            raise ValueError("each method may appear once")
        return methods


class ChainAuthenticator:
    """Accepts a request when one of its members does. Refusals carry ``details["method"]``: the member that
    refused (absent when no member found a credential)."""

    name = "chain"

    def __init__(self, members: Sequence[Authenticator]) -> None:
        if not members:
            raise ValueError("a chain needs at least one authenticator")
        self._members = tuple(members)

    async def authenticate(self, headers: Mapping[str, str]) -> Principal:
        absent: list[str] = []
        for member in self._members:
            try:
                return await member.authenticate(headers)
            except Unauthenticated as exc:
                if reason_of(exc) in _PASS:
                    absent.append(exc.message)
                    continue
                exc.details.setdefault("method", member.name)
                raise
        raise refuse("missing", "missing credentials: " + "; or ".join(absent))

    def challenge(self, error: BaseException | None = None) -> str | None:
        """Every member's challenge, comma-separated (RFC 9110 §11.6.1). An :class:`Unauthenticated` is shown to
        the member that raised it only; a :class:`gateway.api.Forbidden` to every member."""
        method = error.details.get("method") if isinstance(error, Unauthenticated) else None
        parts = []
        for member in self._members:
            mine = error if method == member.name or isinstance(error, Forbidden) else None
            value = _challenge_of(member, mine)
            if value:
                parts.append(value)
        return ", ".join(parts) or None


def _challenge_of(member: Authenticator, error: BaseException | None) -> str | None:
    challenge: Any = member.challenge
    if error is not None and inspect.signature(challenge).parameters:
        return challenge(error)
    return challenge()  # a member implementing only the protocol's challenge() gets no error


def build(ctx: ProviderContext) -> ChainAuthenticator:
    """Provider factory of ``auth``/``chain``: its members are the named ``auth`` providers."""
    config = ctx.config if isinstance(ctx.config, ChainConfig) else ChainConfig()
    return ChainAuthenticator([ctx.provider(AUTH, name) for name in config.methods])
