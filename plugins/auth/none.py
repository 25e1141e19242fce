"""The ``none`` authenticator: no credentials, every caller is one configured (or anonymous) principal."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from gateway.api import Principal, ProviderContext


class NoAuthConfig(BaseModel):
    """``[plugins.auth.none]``: who every caller is when authentication is off."""

    model_config = ConfigDict(extra="forbid")

    subject: str = Field(default="anonymous", min_length=1, max_length=200)
    """The identity every call runs as (rate limits and usage records key on it)."""
    tenant: str | None = Field(default=None, min_length=1, max_length=200)


class NoAuthenticator:
    """Accepts every request as the configured principal, with every scope.

    Meant for local use (stdio, a loopback HTTP port). Headers are ignored, credentials included.
    """

    name = "none"

    def __init__(self, config: NoAuthConfig | None = None) -> None:
        config = config or NoAuthConfig()
        self._principal = Principal(subject=config.subject, tenant=config.tenant, method="none", all_scopes=True)

    async def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The configured principal, whatever the headers say."""
        return self._principal

    def challenge(self, error: BaseException | None = None) -> str | None:
        """No challenge: this authenticator never refuses."""
        return None


def build(ctx: ProviderContext) -> NoAuthenticator:
    """Provider factory of ``auth``/``none``."""
    config = ctx.config if isinstance(ctx.config, NoAuthConfig) else NoAuthConfig()
    return NoAuthenticator(config)
