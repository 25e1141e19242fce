"""Provider hub: builds the configured providers on first use, hands them out, and closes them."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import structlog
from pydantic import ValidationError

from gateway.api import (
    Authenticator,
    Embedder,
    Judge,
    RateLimiter,
    RelationalStore,
    Sanitizer,
    VectorStore,
)
from gateway.api.errors import (
    ConfigError,
    GatewayError,
    NotFound,
    PluginError,
    ProviderUnavailable,
    ValidationFailed,
)
from gateway.api.registry import (
    AUTH,
    CONFIG_DIR,
    EMBEDDER,
    JUDGE,
    RATE_LIMITER,
    SANITIZER,
    STORE,
    VECTOR_STORE,
    ProviderContext,
)
from gateway.config import LoadedConfig, errors_name_the_file
from gateway.plugin_manager import Registration, Registry

log = structlog.get_logger(__name__)

_SINGLE_KINDS = ("vector_store", "store", "rate_limiter", "auth")


_PROTOCOLS: dict[str, type] = {
    EMBEDDER: Embedder,
    VECTOR_STORE: VectorStore,
    STORE: RelationalStore,
    RATE_LIMITER: RateLimiter,
    SANITIZER: Sanitizer,
    AUTH: Authenticator,
    JUDGE: Judge,
}
"""The protocol a provider of each built-in kind implements (checked when it is built)."""


def _members(protocol: type) -> set[str]:
    """The public names a protocol declares (methods and attributes), its protocol bases' included."""
    return {
        name
        for base in protocol.__mro__
        if getattr(base, "_is_protocol", False) and base is not Protocol
        for name in (*vars(base), *getattr(base, "__annotations__", {}))
        if not name.startswith("_")
    }


class ProviderBroken(PluginError):
    """A provider's factory failed with a bug, or built something that is not the kind's protocol."""

    def __init__(self, who: str, reason: str) -> None:
        super().__init__(f"{who}: {reason}")
        self.reason = reason


def _build(reg: Registration, context: ProviderContext) -> Any:
    """Run ``reg``'s factory: a bug in it, or a result that is not the kind's protocol, is a
    :class:`ProviderBroken` naming the provider and its plugin (a :class:`GatewayError` passes unchanged)."""
    who = f"{reg.kind} provider {reg.name!r} (plugin {reg.plugin!r})"
    try:
        provider = reg.factory(context)
    except GatewayError:
        raise
    except Exception as exc:
        raise ProviderBroken(who, f"its factory failed: {type(exc).__name__}: {exc}") from exc
    protocol = _PROTOCOLS.get(reg.kind)
    if protocol is not None and not isinstance(provider, protocol):
        missing = sorted(name for name in _members(protocol) if not hasattr(provider, name))
        raise ProviderBroken(
            who,
            f"its factory returned {type(provider).__name__}, not a {protocol.__name__}"
            + (f" (missing: {', '.join(missing)})" if missing else ""),
        )
    return provider


class ProviderHub:
    """Lazily constructed providers, one instance per (kind, name) per gateway."""

    def __init__(self, loaded: LoadedConfig, registry: Registry) -> None:
        self._loaded = loaded
        self._registry = registry
        self._built: dict[tuple[str, str], Any] = {}
        self._failed: dict[tuple[str, str], ProviderUnavailable] = {}
        self._embeddings: Any = None
        self._sanitization: Any = None

    def configured_name(self, kind: str) -> str:
        if kind in _SINGLE_KINDS:
            return str(getattr(self._loaded.config.providers, kind))
        raise ConfigError(f"provider kind {kind!r} has no single configured provider: name one explicitly")

    def get(self, kind: str, name: str | None = None) -> Any:
        """The provider ``kind``/``name`` (the configured one when ``name`` is None), built on first use.

        Raises :class:`ProviderUnavailable` when its factory does (a missing key, a locked store), and a
        :class:`ConfigError` naming the config file for a provider that is not installed or misconfigured.
        """
        with errors_name_the_file(self._loaded.source):
            return self._get(kind, name)

    def _get(self, kind: str, name: str | None) -> Any:
        name = name or self.configured_name(kind)
        key = (kind, name)
        if key in self._built:
            return self._built[key]
        if key in self._failed:
            raise self._failed[key]
        installed = self._registry.providers.get(kind, {})
        if name not in installed:  # named by a plugin's table (e.g. a rate-limit rule's limiter)
            raise ConfigError(
                f"no {kind} provider {name!r} is installed (installed: {', '.join(sorted(installed)) or 'none'})"
            )
        reg = installed[name]
        data_dir = self._loaded.usable_data_dir() / "providers" / kind / name
        data_dir.mkdir(parents=True, exist_ok=True)
        context = ProviderContext(
            kind=kind, name=name, config=self._loaded.plugin_config(reg), data_dir=data_dir, provider=self.get
        )
        try:
            provider = _build(reg, context)
        except ProviderUnavailable as exc:
            self._failed[key] = exc
            raise
        self._built[key] = provider
        log.debug("provider built", kind=kind, name=name, plugin=reg.plugin)
        return provider

    def instantiate(self, kind: str, name: str, config: Mapping[str, Any], *, data_dir: Path | None = None) -> Any:
        """A new, caller-owned instance of ``kind``/``name`` built from ``config`` (see
        :class:`gateway.api.registry.ProviderInstantiator`)."""
        installed = self._registry.providers.get(kind, {})
        reg = installed.get(name)
        if reg is None:
            raise NotFound(
                f"no {kind} provider {name!r} is installed (installed: {', '.join(sorted(installed)) or 'none'})",
                details={"field": "type", "installed": sorted(installed)},
            )
        parsed = None
        if reg.config_model is not None:
            try:
                parsed = reg.config_model.model_validate(dict(config), context={CONFIG_DIR: self._loaded.base_dir})
            except ValidationError as exc:
                errors = [
                    {"field": ".".join(str(p) for p in err["loc"]) or "(root)", "message": err["msg"]}
                    for err in exc.errors(include_url=False)
                ]
                summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
                raise ValidationFailed(f"invalid {kind} configuration: {summary}", details={"errors": errors}) from None
        elif config:
            raise ValidationFailed(f"{kind} {name!r} takes no configuration", details={"errors": []})
        directory = data_dir or self._loaded.data_dir / "providers" / kind / name
        directory.mkdir(parents=True, exist_ok=True)
        context = ProviderContext(kind=kind, name=name, config=parsed, data_dir=directory, provider=self.get)
        return _build(reg, context)

    def built(self, kind: str) -> list[str]:
        """Names of the providers of ``kind`` built so far (the ones a deployment actually uses)."""
        return [name for built_kind, name in self._built if built_kind == kind]

    def embeddings(self) -> Any:
        """The embedder chain of ``[providers] embedder``; unavailable embedders are skipped."""
        with errors_name_the_file(self._loaded.source):
            return self._embedder_chain()

    def _embedder_chain(self) -> Any:
        if self._embeddings is None:
            from gateway.embedding_chain import EmbedderChain

            members: list[tuple[str, Any]] = []
            for name in self._loaded.config.providers.embedder:
                try:
                    members.append((name, self.get(EMBEDDER, name)))
                except ProviderUnavailable as exc:
                    log.info("embedder skipped", embedder=name, reason=exc.reason)
                    members.append((name, exc))
                except ProviderBroken as exc:  # a plugin's bug: that link is out, named, and the chain falls back
                    log.error("embedder factory failed", embedder=name, exc_info=exc)
                    members.append((name, ProviderUnavailable(name, exc.reason)))
            cfg = self._loaded.config.providers
            self._embeddings = EmbedderChain(
                members,
                retry_after_seconds=cfg.embedder_retry_seconds,
                query_deadline_seconds=cfg.embedder_query_deadline_seconds,
                document_grace_seconds=cfg.embedder_document_grace_seconds,
                fallback_deadline_seconds={
                    "query": cfg.embedder_fallback_query_deadline_seconds,
                    "document": cfg.embedder_fallback_document_deadline_seconds,
                },
            )
        return self._embeddings

    def sanitization(self) -> Any:
        """The sanitizer pipeline of ``[sanitize]``."""
        with errors_name_the_file(self._loaded.source):
            return self._sanitizer_pipeline()

    def _sanitizer_pipeline(self) -> Any:
        if self._sanitization is None:
            from gateway.sanitization import SanitizationPipeline

            cfg = self._loaded.config.sanitize
            table = {kind: getattr(cfg, kind) for kind in ("error_message", "code", "free_text", "query")}
            self._sanitization = SanitizationPipeline.from_config(
                table, lambda name: self.get("sanitizer", name), verifier=cfg.verifier
            )
        return self._sanitization

    async def aclose(self) -> None:
        """Close every built provider, newest first. Errors are logged, not raised: shut-down must finish."""
        for (kind, name), provider in reversed(list(self._built.items())):
            closer = getattr(provider, "aclose", None) or getattr(provider, "close", None)
            if closer is None:
                continue
            try:
                result = closer()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("provider failed to close", kind=kind, name=name)
        self._built.clear()
