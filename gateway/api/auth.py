"""Authenticator protocol: turns request headers into a :class:`Principal`, or refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from gateway.api.context import Principal


@runtime_checkable
class Authenticator(Protocol):
    """Credentials are read from headers only (never from the query string).

    Raise :class:`gateway.api.Unauthenticated` for missing or invalid credentials.
    """

    @property
    def name(self) -> str: ...

    async def authenticate(self, headers: Mapping[str, str]) -> Principal: ...

    def challenge(self, error: BaseException | None = None) -> str | None:
        """The ``WWW-Authenticate`` value sent with a refusal (401, or 403 for a missing scope), if any.

        ``error`` is the refusal (:class:`gateway.api.Unauthenticated` or :class:`gateway.api.Forbidden`), so the
        challenge can carry RFC 6750 ``error="invalid_token"`` or ``error="insufficient_scope"``.
        """
