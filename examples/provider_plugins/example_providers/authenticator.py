"""An authenticator: callers present a shared team token in the ``X-Team-Token`` header."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.api import Principal, Unauthenticated

HEADER = "x-team-token"


class TeamTokenAuthenticator:
    """One token, one principal. The comparison takes the same time whatever the token, and a refusal never
    repeats what the caller sent."""

    def __init__(self, token: str, subject: str, tenant: str | None = None, scopes: frozenset[str] = frozenset()):
        self._token = token.encode()
        self._principal = Principal(subject=subject, tenant=tenant, scopes=scopes, method="team_token")

    @property
    def name(self) -> str:
        return "team_token"

    async def authenticate(self, headers: Mapping[str, str]) -> Principal:
        sent = next((value for name, value in headers.items() if name.lower() == HEADER), None)
        if sent is None:
            raise Unauthenticated("missing X-Team-Token header")
        if not hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), self._token):
            raise Unauthenticated("invalid team token")
        return self._principal

    def challenge(self, error: BaseException | None = None) -> str | None:
        return None  # no standard WWW-Authenticate scheme for a custom header
