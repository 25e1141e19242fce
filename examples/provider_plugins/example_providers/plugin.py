"""The entry point (``[project.entry-points.mcp_gateway] example_providers = "example_providers.plugin"``): one
``gateway_register_providers`` hook offers every provider of this package, each with the model of its
``[plugins.<kind>.<name>]`` table. Factories run only when a deployment selects the provider."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gateway.api import (
    AUTH,
    EMBEDDER,
    JUDGE,
    RATE_LIMITER,
    SANITIZER,
    STORE,
    VECTOR_STORE,
    ProviderContext,
    ProviderRegistrar,
    ProviderUnavailable,
    Secret,
    hookimpl,
)


class HashingConfig(BaseModel):
    """``[plugins.embedder.hashing]``"""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error naming it
    dimension: int = Field(256, ge=8, le=4096)


class TimedStoreConfig(BaseModel):
    """``[plugins.store.timed]``"""

    model_config = ConfigDict(extra="forbid")
    inner: str = Field("sqlite", description="The store that does the work.")
    slow_ms: float = Field(100.0, gt=0, description="Statements slower than this are logged.")


class TeamTokenConfig(BaseModel):
    """``[plugins.auth.team_token]``"""

    model_config = ConfigDict(extra="forbid")
    token: Secret = Field({"env": "TEAM_TOKEN"}, validate_default=True)
    subject: str = "team"
    scopes: list[str] = ["gim:read", "gim:write"]


def _hashing(context: ProviderContext):
    from example_providers.embedder import HashingEmbedder  # heavy imports wait until the provider is used

    config = context.config if isinstance(context.config, HashingConfig) else HashingConfig()
    return HashingEmbedder(dimension=config.dimension)


def _memory(context: ProviderContext):
    from example_providers.vector_store import MemoryVectorStore

    return MemoryVectorStore()


def _timed(context: ProviderContext):
    from example_providers.store import TimedStore

    config = context.config if isinstance(context.config, TimedStoreConfig) else TimedStoreConfig()
    return TimedStore(context.provider(STORE, config.inner), slow_ms=config.slow_ms)


def _dict_limiter(context: ProviderContext):
    from example_providers.rate_limiter import DictRateLimiter

    return DictRateLimiter()


def _emails(context: ProviderContext):
    from example_providers.sanitizer import EmailSanitizer

    return EmailSanitizer()


def _team_token(context: ProviderContext):
    from example_providers.authenticator import TeamTokenAuthenticator

    config = context.config if isinstance(context.config, TeamTokenConfig) else TeamTokenConfig()
    if config.token is None:
        raise ProviderUnavailable("auth/team_token", "no token: set TEAM_TOKEN or [plugins.auth.team_token] token")
    return TeamTokenAuthenticator(config.token.get_secret_value(), config.subject, scopes=frozenset(config.scopes))


def _leftovers(context: ProviderContext):
    from example_providers.judge import LeftoversJudge

    return LeftoversJudge()


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(EMBEDDER, "hashing", _hashing, config_model=HashingConfig, description="Feature hashing, no model.")
    register(VECTOR_STORE, "memory", _memory, description="Exact cosine search in memory (nothing persists).")
    register(STORE, "timed", _timed, config_model=TimedStoreConfig, description="Another store, slow SQL logged.")
    register(RATE_LIMITER, "dict", _dict_limiter, description="Counters in a dict (one process, not persisted).")
    register(SANITIZER, "emails", _emails, description="Redacts e-mail addresses.")
    register(AUTH, "team_token", _team_token, config_model=TeamTokenConfig, description="X-Team-Token header.")
    register(JUDGE, "leftovers", _leftovers, description="Flags debugging leftovers on changed lines.")
