"""Assemble a gateway from a configuration: plugins, validated config, logging, runtime."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gateway.api.errors import ConfigError
from gateway.config import (
    LoadedConfig,
    LogLevel,
    config_from_mapping,
    errors_name_the_file,
    load_config,
    parse_config,
    resolve,
)
from gateway.logs import configure_logging, make_log_redactor
from gateway.loop_watch import LoopWatch
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


def setup_logging(runtime: GatewayRuntime, level: LogLevel | None = None) -> None:
    """JSON logs at ``level`` (default: the configured one), every line passed through the configured redaction
    layer.

    Redaction fails closed: a configured layer that cannot be loaded stops the start-up.
    """
    cfg = runtime.loaded.config
    level = level or cfg.gateway.log_level
    configure_logging(level)  # stderr first: building the redaction layer may log
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
    configure_logging(level, redactor=redactor)


@asynccontextmanager
async def running_runtime(
    source: ConfigSource,
    *,
    extra_plugins: Iterable[tuple[str, object]] = (),
    configure_logs: bool = True,
    log_level: LogLevel | None = None,
) -> AsyncIterator[GatewayRuntime]:
    """A started runtime for ``source``; stopped (packs, interceptors, providers) on exit. Logs go to stderr at
    ``log_level`` (default: the configured ``[gateway] log_level``) unless ``configure_logs`` is false."""
    loaded, plugins = prepare(source, extra_plugins=extra_plugins)
    runtime = GatewayRuntime(loaded, plugins)
    if configure_logs:
        setup_logging(runtime, log_level)
    with errors_name_the_file(loaded.source):  # what packs and interceptors refuse in their own tables
        await runtime.start()
    watch = None
    if threshold := loaded.config.gateway.loop_stall_warning_seconds:
        watch = LoopWatch(
            asyncio.get_running_loop(),
            threshold,
            lambda: sorted(f"{tool} ({cid})" for cid, tool in dict(runtime.calls_in_flight).items()),
        )
        watch.start()
    try:
        yield runtime
    finally:
        if watch is not None:
            watch.stop()
        await runtime.stop()
