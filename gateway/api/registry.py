"""What hooks receive: registrars for providers, packs and interceptors, and the contexts factories get."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, BeforeValidator, SecretStr

from gateway.api.embedding import EmbeddingService
from gateway.api.errors import ProviderUnavailable
from gateway.api.sanitizers import SanitizationService
from gateway.api.tools import Interceptor, Tool, ToolPack
from gateway.api.upstream import UpstreamConnector

EMBEDDER = "embedder"
VECTOR_STORE = "vector_store"
STORE = "store"
RATE_LIMITER = "rate_limiter"
SANITIZER = "sanitizer"
AUTH = "auth"
JUDGE = "judge"
CONNECTOR = "connector"
PROVIDER_KINDS = (EMBEDDER, VECTOR_STORE, STORE, RATE_LIMITER, SANITIZER, AUTH, JUDGE, CONNECTOR)
"""Every swappable provider kind. Plugins may register further kinds of their own."""


CONFIG_DIR = "config_dir"
"""Key of the pydantic validation context a plugin's ``config_model`` is validated with: the directory of the config
file (a relative path in the table is relative to it)."""
CHECK_PROVIDER_OPTIONS = "check_provider_options"
"""Key of the same validation context: ``check(kind, name, options)``, which raises ``ValueError`` naming the problem
when no ``kind`` provider ``name`` is installed or its ``config_model`` refuses ``options``. A pack whose table
declares providers of its own (the Context Engine's ``connectors``) calls it from a validator, so ``gateway config
check`` finds their mistakes without starting anything. Absent when the model is validated outside a deployment's
config file."""


def _resolve_secret(value: Any) -> Any:
    if isinstance(value, Mapping):
        if set(value) != {"env"} or not isinstance(value["env"], str):
            raise ValueError('a secret is a string or { env = "NAME" }')
        return os.environ.get(value["env"]) or None
    return value


Secret = Annotated[SecretStr | None, BeforeValidator(_resolve_secret)]
"""A config value written as ``{ env = "NAME" }`` (or, discouraged, a literal). ``None`` when the variable is
unset. The value is a :class:`pydantic.SecretStr`, so it never appears in reprs or logs; it is passed on exactly as
set (a provider that knows its value cannot hold whitespace, an API key, strips it)."""


def api_key(secret: SecretStr | None, provider: str, missing: str) -> str:
    """An API key from a :data:`Secret`: surrounding whitespace dropped (a key read from a file keeps its line end);
    :class:`ProviderUnavailable` naming ``provider`` when there is none (``missing`` says how to set one) or when it
    holds a control character (it could not travel in a header)."""
    key = secret.get_secret_value().strip() if secret is not None else ""
    if not key:
        raise ProviderUnavailable(provider, missing)
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise ProviderUnavailable(provider, "the API key holds a control character")
    return key


class ProviderLookup(Protocol):
    def __call__(self, kind: str, name: str | None = None) -> Any:
        """The provider of ``kind`` (the configured one when ``name`` is ``None``), built on first use."""


class ProviderInstantiator(Protocol):
    def __call__(self, kind: str, name: str, config: Mapping[str, Any], *, data_dir: Path | None = None) -> Any:
        """A new instance of the provider ``kind``/``name`` configured with ``config`` (validated by the provider's
        config model; a bad value raises :class:`gateway.api.ValidationFailed` naming the field). The caller owns
        it and closes it. Unknown ``name``: :class:`gateway.api.NotFound` listing the installed ones."""


def _no_instances(kind: str, name: str, config: Mapping[str, Any], *, data_dir: Path | None = None) -> Any:
    raise NotImplementedError("this host cannot build provider instances")


@dataclass(frozen=True)
class ProviderContext:
    """Handed to a provider factory."""

    kind: str
    name: str
    config: BaseModel | None
    data_dir: Path
    """A directory of this provider's own (created)."""
    provider: ProviderLookup


@dataclass(frozen=True)
class PackContext:
    """Handed to a tool-pack factory: its config, its data dir, and the shared services."""

    name: str
    config: BaseModel | None
    data_dir: Path
    provider: ProviderLookup
    embeddings: Callable[[], EmbeddingService]
    """The embedder chain, built on first call (packs that never embed never load a model)."""
    sanitization: Callable[[], SanitizationService]
    instantiate: ProviderInstantiator = _no_instances
    """Build several configured instances of one provider kind (the context pack's connectors, one per source)."""
    upstreams: Callable[[], UpstreamConnector] = field(default=lambda: _no_upstreams())
    """The client for other MCP servers (:mod:`gateway.api.upstream`), for packs that front them."""
    catalogue_changed: Callable[[], Awaitable[None]] = field(default=lambda: _nothing_to_announce())
    """Await after the pack's tools, resources or prompts changed: the host reads them again and notifies clients."""


def _no_upstreams() -> UpstreamConnector:
    raise NotImplementedError("this host offers no upstream connector")


async def _nothing_to_announce() -> None:
    return None


@dataclass(frozen=True)
class InterceptorContext:
    """Handed to an interceptor factory."""

    name: str
    config: BaseModel | None
    data_dir: Path
    provider: ProviderLookup
    tools: Mapping[str, tuple[str, Tool[Any, Any]]]
    """Every served tool by full name, with the name of the pack that offers it (a live view: it follows the
    packs' catalogue changes)."""
    packs: Mapping[str, bool] = field(default_factory=dict)
    """Every installed tool pack by name: True when it is enabled (so a link can tell a pack that is off from a
    name that exists nowhere)."""
    may_offer_later: Callable[[str], bool] = lambda name: False
    """Whether an enabled pack may serve a tool of this name later, though it does not now (a remote server that is
    down at start-up, whose names carry its prefix): a link naming such a tool waits for it."""


ProviderFactory = Callable[[ProviderContext], Any]
PackFactory = Callable[[PackContext], ToolPack]
InterceptorFactory = Callable[[InterceptorContext], Interceptor]


class ProviderRegistrar(Protocol):
    def __call__(
        self,
        kind: str,
        name: str,
        factory: ProviderFactory,
        *,
        config_model: type[BaseModel] | None = None,
        description: str = "",
    ) -> None:
        """Offer a provider. Its config is the ``[plugins.<kind>.<name>]`` table, validated by ``config_model``.
        The factory may raise :class:`gateway.api.ProviderUnavailable` (a missing key, say)."""


class PackRegistrar(Protocol):
    def __call__(
        self,
        name: str,
        factory: PackFactory,
        *,
        config_model: type[BaseModel] | None = None,
        description: str = "",
    ) -> None:
        """Offer a tool pack. Its config is the ``[plugins.<name>]`` table, validated by ``config_model``."""


class InterceptorRegistrar(Protocol):
    def __call__(
        self,
        name: str,
        factory: InterceptorFactory,
        *,
        config_model: type[BaseModel] | None = None,
        description: str = "",
    ) -> None:
        """Offer a pipeline link. Its config is the ``[plugins.interceptor.<name>]`` table."""
