"""Assemble a gateway from a configuration: plugins, validated config, logging, runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gateway.api.errors import ConfigError
from gateway.config import LoadedConfig, config_from_mapping, load_config, parse_config, resolve
from gateway.logs import configure_logging, make_log_redactor
from gateway.plugin_manager import GatewayPlugins, create_plugin_manager
from gateway.runtime import GatewayRuntime

PACKAGED_CONFIG = Path(__file__).resolve().with_name("default_config.toml")
"""An installed wheel's copy of the repository's ``config.toml`` (its build backend puts it there)."""
SOURCE_CONFIG = Path(__file__).resolve().parent.parent / "config.toml"
DEFAULT_CONFIG = PACKAGED_CONFIG if PACKAGED_CONFIG.is_file() else SOURCE_CONFIG
"""The embedded default deployment: the wheel's copy, or in a source checkout the repository's own file."""

ConfigSource = str | Path | dict[str, Any] | LoadedConfig


def read_config(source: ConfigSource) -> LoadedConfig:
    """A config from a path, TOML text, or a mapping (the last two are for tests and embedding)."""
    if isinstance(source, LoadedConfig):
        return source
    if isinstance(source, dict):
        return config_from_mapping(source)
    if isinstance(source, Path) or ("\n" not in source and source.endswith(".toml")):
        return load_config(source)
    return parse_config(source)


def prepare(
    source: ConfigSource, *, extra_plugins: Iterable[tuple[str, object]] = ()
) -> tuple[LoadedConfig, GatewayPlugins]:
    """Load plugins (honouring the block list) and validate the config against what they registered."""
    loaded = read_config(source)
    plugins = create_plugin_manager(blocked=loaded.config.gateway.block, extra_plugins=extra_plugins)
    return resolve(loaded, plugins.registry), plugins


def setup_logging(runtime: GatewayRuntime) -> None:
    """JSON logs at the configured level, every line passed through the configured redaction layer.

    Redaction fails closed: a configured layer that cannot be loaded stops the start-up.
    """
    cfg = runtime.loaded.config
    configure_logging(cfg.gateway.log_level)  # stderr first: building the redaction layer may log
    redactor = None
    if cfg.sanitize.logs:
        layer = runtime.providers.get("sanitizer", cfg.sanitize.logs)
        redact = getattr(layer, "redact", None)
        if redact is None:
            raise ConfigError(
                f"{runtime.loaded.source}: 'sanitize.logs': sanitizer {cfg.sanitize.logs!r} has no synchronous "
                "redact(text) method, so it cannot redact log lines"
            )
        redactor = make_log_redactor(redact)
    configure_logging(cfg.gateway.log_level, redactor=redactor)


@asynccontextmanager
async def running_runtime(
    source: ConfigSource, *, extra_plugins: Iterable[tuple[str, object]] = (), configure_logs: bool = True
) -> AsyncIterator[GatewayRuntime]:
    """A started runtime for ``source``; stopped (packs, interceptors, providers) on exit."""
    loaded, plugins = prepare(source, extra_plugins=extra_plugins)
    runtime = GatewayRuntime(loaded, plugins)
    if configure_logs:
        setup_logging(runtime)
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()
