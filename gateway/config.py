"""The deployment configuration (``config.toml``): load, validate, and resolve against installed plugins.

Every table forbids unknown keys. Errors name the file, the dotted key and the problem; a provider, pack or
interceptor that is not installed is reported with the list of what is installed. Each plugin validates its own
``[plugins.<pack>]`` / ``[plugins.<kind>.<name>]`` / ``[plugins.interceptor.<name>]`` table with its own model.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from gateway.api.errors import ConfigError
from gateway.api.registry import CHECK_PROVIDER_OPTIONS, CONFIG_DIR
from gateway.plugin_manager import Registration, Registry
from gateway.provider_options import error_message, installed_names, provider_options_check

DATA_DIR_ENV = "MCP_GATEWAY_DATA_DIR"
LogLevel = Literal["debug", "info", "warning", "error"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GatewaySection(_Section):
    name: str = "mcp-gateway"
    data_dir: Path | None = None
    """Where providers keep their files. Relative paths are relative to the config file. Overridden by the
    ``MCP_GATEWAY_DATA_DIR`` environment variable; default: ``$XDG_DATA_HOME/mcp-gateway``."""
    log_level: LogLevel = "info"
    block: list[str] = Field(default_factory=list)
    """Plugins (entry-point names) never to load."""
    identity: str | None = None
    """The caller identity over stdio; default: a per-install id generated and kept in the data dir."""
    instructions: str | None = None
    """Text put before the packs' own instructions."""
    loop_stall_warning_seconds: float = Field(1.0, ge=0)
    """Log a warning naming the calls in flight when the event loop does not answer for this long (a tool blocking
    inside ``async def``); 0 turns the watch off."""


_OTHER_ROUTES = ("/health", "/metrics", "/.well-known/", "/api/", "/auth/")
"""Paths the HTTP front serves itself (the liveness probe, metrics, discovery documents, REST, the token issuer)."""


class TransportSection(_Section):
    kind: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    path: str = "/mcp"
    """Where MCP is served: an absolute path that is none of the gateway's other routes."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host headers accepted besides the loopback ones (DNS-rebinding protection)."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Origin headers accepted besides the loopback ones; also the CORS allow-list."""
    max_body_bytes: int = Field(1_000_000, gt=0)
    max_header_bytes: int = Field(65_536, ge=1024)
    """A request's line and headers together; past it, ``431`` and the connection closes."""
    header_timeout_seconds: float = Field(30.0, gt=0)
    """How long a request's headers may take to arrive (a slow client's connection is closed)."""
    body_timeout_seconds: float = Field(60.0, gt=0)
    """How long a request's body may stall (from its headers, or from its previous piece) before it is cut."""
    session_idle_seconds: float = Field(300.0, gt=0)
    """A handshake-era MCP session unused this long is ended (the SDK's default is 30 minutes)."""
    max_sessions: int = Field(10_000, ge=1)
    """Handshake-era MCP sessions open at once, all callers together."""
    max_sessions_per_caller: int = Field(100, ge=1)
    """Sessions one authenticated caller may hold open (so one caller cannot fill ``max_sessions``)."""
    json_response: bool = False
    rest: bool = True
    """Serve the REST facade at ``/api/v1`` beside MCP."""
    allow_unauthenticated_remote: bool = False
    """Permit ``providers.auth = "none"`` on a non-loopback host (refused by default)."""
    public_url: str | None = None
    """The externally visible base URL (for OAuth protected-resource metadata)."""
    metrics: Literal["private", "public", "off"] = "private"
    """``GET /metrics`` (Prometheus): behind authentication like every other route (``private``), open to anyone
    who can reach the port (``public``, for a scraper on a private network), or not served (``off``)."""
    shutdown_grace_seconds: float = Field(10.0, ge=0)
    """On ``SIGTERM``/``SIGINT`` over HTTP, how long requests in flight may run before they are cancelled (each
    answered with a retryable 503) and the gateway stops (clients' open event streams end at once)."""

    @field_validator("path")
    @classmethod
    def _own_path(cls, path: str) -> str:
        if not path.startswith("/") or any(c in path for c in "?#") or any(c.isspace() for c in path):
            raise ValueError("an absolute URL path such as '/mcp' (no query, fragment or spaces)")
        taken = next((r for r in _OTHER_ROUTES if path == r.rstrip("/") or path.startswith(r.rstrip("/") + "/")), None)
        if taken is not None:  # the public routes skip authentication: MCP there would be served to anyone
            raise ValueError(f"{path!r} is taken by the gateway's own route {taken!r}; choose another (default '/mcp')")
        return path


class RestTierSize(_Section):
    limit: int = Field(ge=1)
    """Requests per ``period_seconds`` per caller and route (the bucket's capacity)."""
    period_seconds: float = Field(60.0, gt=0)


def _tier_size(value: Any) -> Any:
    return {"limit": value} if isinstance(value, int) and not isinstance(value, bool) else value


class RestSection(_Section):
    """``[rest]``: the REST routes packs contribute under ``/api/v1`` (served when ``transport.rest`` is on)."""

    rate_limiter: str | None = None
    """The ``rate_limiter`` provider holding the routes' token buckets; default: ``[providers] rate_limiter``."""
    tiers: dict[str, Annotated[RestTierSize, BeforeValidator(_tier_size)]] = Field(default_factory=dict)
    """Tier sizes by name, overriding the defaults: ``search = 100`` (per minute) or
    ``search = { limit = 100, period_seconds = 60 }``."""


def _once_each(names: list[str]) -> list[str]:
    if repeated := sorted({name for name in names if names.count(name) > 1}):
        raise ValueError(f"names {', '.join(map(repr, repeated))} more than once")
    return names


class PacksSection(_Section):
    enabled: list[str] = Field(default_factory=list)
    prefix: dict[str, Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{0,64}$")]] = Field(default_factory=dict)
    """Optional prefix per pack, prepended to each of its tool names (characters a tool name may hold)."""

    @field_validator("enabled")
    @classmethod
    def _each_pack_once(cls, names: list[str]) -> list[str]:
        return _once_each(names)


class InterceptorRef(_Section):
    name: str
    on_error: Literal["fail_closed", "fail_open"] = "fail_closed"


class PipelineSection(_Section):
    interceptors: list[InterceptorRef] = Field(default_factory=list)


class ProvidersSection(_Section):
    embedder: list[str] = Field(default_factory=lambda: ["gemini", "local"], min_length=1)
    """Ordered embedder chain; unavailable ones (no key) are skipped, the last one is the always-on fallback."""

    @field_validator("embedder")
    @classmethod
    def _each_embedder_once(cls, names: list[str]) -> list[str]:
        return _once_each(names)

    embedder_retry_seconds: float = Field(30.0, ge=0)
    """After an embedder fails, skip it for this long before trying it again."""
    embedder_query_deadline_seconds: float = Field(5.0, gt=0)
    """A search waits this long for an embedder before the chain falls back to the next one."""
    embedder_document_grace_seconds: float = Field(10.0, gt=0)
    """Once the last embedder has a document's vectors, the others get this much longer; one still busy then is
    skipped (its vectors are filled in later by ``gateway reindex --missing``)."""
    embedder_fallback_query_deadline_seconds: float = Field(30.0, gt=0)
    """How long the last embedder may take for a query; past it the call fails as ``service_unavailable`` (a
    fallback that hangs must not hang every call)."""
    embedder_fallback_document_deadline_seconds: float = Field(300.0, gt=0)
    """The same for one batch of documents (an index build embeds up to ``embed_batch`` texts at a time)."""
    vector_store: str = "qdrant-edge"
    store: str = "sqlite"
    rate_limiter: str = "sqlite"
    auth: str = "none"


class SanitizeSection(_Section):
    error_message: list[str] = Field(default_factory=lambda: ["patterns", "contextual"])
    code: list[str] = Field(default_factory=lambda: ["patterns", "contextual"])
    free_text: list[str] = Field(default_factory=lambda: ["patterns", "contextual"])
    query: list[str] = Field(default_factory=lambda: ["patterns"])
    verifier: str = "patterns"
    """The layer that re-scans every sanitized text; anything it still finds refuses the submission."""
    logs: str = "patterns"
    """The layer applied to every log line (``""``: no log redaction)."""


class GatewayConfig(_Section):
    gateway: GatewaySection = Field(default_factory=GatewaySection)
    transport: TransportSection = Field(default_factory=TransportSection)
    rest: RestSection = Field(default_factory=RestSection)
    packs: PacksSection = Field(default_factory=PacksSection)
    pipeline: PipelineSection = Field(default_factory=PipelineSection)
    providers: ProvidersSection = Field(default_factory=ProvidersSection)
    sanitize: SanitizeSection = Field(default_factory=SanitizeSection)
    plugins: dict[str, Any] = Field(default_factory=dict)


class LoadedConfig:
    """A validated config plus each plugin's validated table."""

    def __init__(self, source: str, config: GatewayConfig, base_dir: Path) -> None:
        self.source = source
        self.config = config
        self.base_dir = base_dir
        self.plugin_configs: dict[tuple[str, str], BaseModel | None] = {}
        self.validation_context: dict[str, Any] = {CONFIG_DIR: base_dir}
        """What plugin tables are validated with (:data:`gateway.api.CONFIG_DIR`, and once resolved against the
        installed plugins :data:`gateway.api.CHECK_PROVIDER_OPTIONS`)."""

    @property
    def data_dir(self) -> Path:
        env = os.environ.get(DATA_DIR_ENV)
        if env:
            return Path(env).expanduser().resolve()
        configured = self.config.gateway.data_dir
        if configured is not None:
            path = configured.expanduser()
            return path if path.is_absolute() else (self.base_dir / path).resolve()
        xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return Path(xdg) / "mcp-gateway"

    def usable_data_dir(self) -> Path:
        """:attr:`data_dir`, created if missing; :class:`ConfigError` naming it when it cannot be written to (a
        read-only mount, a file in its place, no permission)."""
        path = self.data_dir
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / f".write-test-{os.getpid()}"
            probe.touch()
            probe.unlink()
        except OSError as exc:
            why = "it is not a directory" if path.exists() and not path.is_dir() else exc.strerror or str(exc)
            raise ConfigError(
                f"{self.source}: the data dir {path} cannot be used: {why} (set gateway.data_dir or "
                f"{DATA_DIR_ENV} to a writable directory)"
            ) from None
        return path

    def plugin_config(self, reg: Registration) -> BaseModel | None:
        """The validated table of a provider, pack or interceptor; defaults when the config has none."""
        key = (reg.kind, reg.name)
        if key not in self.plugin_configs:
            table = f"plugins.{reg.name}" if reg.kind == "pack" else f"plugins.{reg.kind}.{reg.name}"
            self.plugin_configs[key] = _validate_plugin_table(self, reg, {}, table)
        return self.plugin_configs[key]


@contextmanager
def errors_name_the_file(source: str) -> Iterator[None]:
    """Re-raise a :class:`ConfigError` raised inside the block (by a plugin, which knows its table but not the
    file) as one whose message starts with ``source``, the config file, as every config error's does."""
    try:
        yield
    except ConfigError as exc:
        if str(exc).startswith(f"{source}:"):
            raise
        raise ConfigError(f"{source}: {exc}") from exc


def _format_errors(source: str, exc: ValidationError, prefix: str = "") -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(part) for part in (prefix, *err["loc"]) if part != "")
        if err["type"] == "extra_forbidden":
            lines.append(f"{source}: unknown key '{key}'")
        else:
            lines.append(f"{source}: '{key}': {error_message(err)}")
    return "\n".join(lines)


def parse_config(text: str, *, source: str = "<config>", base_dir: Path | None = None) -> LoadedConfig:
    """Parse and validate the gateway-level tables (plugin tables are validated by :func:`resolve`)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    return _validate(raw, source, base_dir or Path.cwd())


def load_config(path: str | Path) -> LoadedConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}): TOML files are UTF-8") from None
    return parse_config(text, source=str(path), base_dir=path.resolve().parent)


def config_from_mapping(raw: dict[str, Any], *, source: str = "<config>", base_dir: Path | None = None) -> LoadedConfig:
    return _validate(raw, source, base_dir or Path.cwd())


def _validate(raw: dict[str, Any], source: str, base_dir: Path) -> LoadedConfig:
    try:
        config = GatewayConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format_errors(source, exc)) from exc
    return LoadedConfig(source, config, base_dir)


def _validate_plugin_table(loaded: LoadedConfig, reg: Registration, raw: Any, key: str) -> BaseModel | None:
    if reg.config_model is None:
        if raw not in (None, {}):
            raise ConfigError(f"{loaded.source}: '{key}': {reg.kind} {reg.name!r} takes no configuration")
        return None
    try:
        return reg.config_model.model_validate(raw or {}, context=loaded.validation_context)
    except ValidationError as exc:
        raise ConfigError(_format_errors(loaded.source, exc, key)) from exc


def resolve(loaded: LoadedConfig, registry: Registry) -> LoadedConfig:
    """Check every name the config uses against the installed plugins and validate every plugin table."""
    cfg = loaded.config
    src = loaded.source
    loaded.validation_context[CHECK_PROVIDER_OPTIONS] = provider_options_check(registry, loaded.base_dir)

    selected: list[Registration] = []
    """What the config names: their tables are validated even when absent (a required option is missing)."""

    def need_provider(kind: str, name: str, key: str) -> None:
        table = registry.providers.get(kind, {})
        if name not in table:
            elsewhere = sorted(other for other, offered in registry.providers.items() if name in offered)
            hint = (
                f"; {name!r} is registered as a provider of kind {', '.join(map(repr, elsewhere))}" if elsewhere else ""
            )
            raise ConfigError(
                f"{src}: '{key}': no {kind} provider {name!r} is installed (installed: {installed_names(table)}){hint}"
            )
        selected.append(table[name])

    for name in cfg.packs.enabled:
        if name not in registry.packs:
            raise ConfigError(
                f"{src}: 'packs.enabled': no tool pack {name!r} is installed "
                f"(installed: {installed_names(registry.packs)})"
            )
    for name in cfg.packs.prefix:
        if name not in cfg.packs.enabled:
            raise ConfigError(f"{src}: 'packs.prefix.{name}': pack {name!r} is not enabled")
    for ref in cfg.pipeline.interceptors:
        if ref.name not in registry.interceptors:
            raise ConfigError(
                f"{src}: 'pipeline.interceptors': no interceptor {ref.name!r} is installed "
                f"(installed: {installed_names(registry.interceptors)})"
            )
    # Names written in the config are checked now; defaults are checked when first used, so a deployment that
    # never embeds does not need an embedder installed.
    explicit = cfg.providers.model_fields_set
    if "embedder" in explicit:
        for name in cfg.providers.embedder:
            need_provider("embedder", name, "providers.embedder")
    for field_name in ("vector_store", "store", "rate_limiter", "auth"):
        if field_name in explicit:
            need_provider(field_name, getattr(cfg.providers, field_name), f"providers.{field_name}")
    if cfg.rest.rate_limiter is not None:
        need_provider("rate_limiter", cfg.rest.rate_limiter, "rest.rate_limiter")
    for field_name in ("error_message", "code", "free_text", "query"):
        if field_name in cfg.sanitize.model_fields_set:
            for name in getattr(cfg.sanitize, field_name):
                need_provider("sanitizer", name, f"sanitize.{field_name}")
    if "verifier" in cfg.sanitize.model_fields_set:
        need_provider("sanitizer", cfg.sanitize.verifier, "sanitize.verifier")
    if cfg.sanitize.logs and "logs" in cfg.sanitize.model_fields_set:
        need_provider("sanitizer", cfg.sanitize.logs, "sanitize.logs")

    for top, value in cfg.plugins.items():
        if top in registry.packs:
            loaded.plugin_configs[("pack", top)] = _validate_plugin_table(
                loaded, registry.packs[top], value, f"plugins.{top}"
            )
            continue
        table = registry.interceptors if top == "interceptor" else registry.providers.get(top)
        if table is None:
            known = sorted({*registry.packs, *registry.providers, "interceptor"})
            raise ConfigError(
                f"{src}: unknown key 'plugins.{top}': not an installed pack or provider kind "
                f"(installed: {', '.join(known)})"
            )
        if not isinstance(value, dict):
            raise ConfigError(f"{src}: 'plugins.{top}': expected a table of {top} providers")
        for name, sub in value.items():
            if name not in table:
                raise ConfigError(
                    f"{src}: unknown key 'plugins.{top}.{name}': no {top} {name!r} is installed "
                    f"(installed: {installed_names(table)})"
                )
            kind = "interceptor" if top == "interceptor" else top
            loaded.plugin_configs[(kind, name)] = _validate_plugin_table(
                loaded, table[name], sub, f"plugins.{top}.{name}"
            )
    selected += [registry.packs[name] for name in cfg.packs.enabled]
    selected += [registry.interceptors[ref.name] for ref in cfg.pipeline.interceptors]
    for reg in selected:
        loaded.plugin_config(reg)  # the defaults of a table the config leaves out
    return loaded
