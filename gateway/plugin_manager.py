"""Build the pluggy plugin manager and collect what plugins register.

Plugins are found only through the ``mcp_gateway`` entry-point group, built-ins included. A block list (from
config) keeps named plugins out; ``check_pending`` makes a misspelled hook fail loudly.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pluggy
import structlog
from pydantic import BaseModel

from gateway import hookspecs
from gateway.api.errors import GatewayError, PluginError
from gateway.api.markers import PROJECT_NAME
from gateway.api.registry import InterceptorFactory, PackFactory, ProviderFactory

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Registration:
    """One provider, pack or interceptor a plugin offered."""

    kind: str
    name: str
    factory: Any
    config_model: type[BaseModel] | None
    description: str
    plugin: str


@dataclass
class Registry:
    """Everything the loaded plugins registered, keyed by kind then name."""

    providers: dict[str, dict[str, Registration]] = field(default_factory=dict)
    packs: dict[str, Registration] = field(default_factory=dict)
    interceptors: dict[str, Registration] = field(default_factory=dict)

    def provider(self, kind: str, name: str) -> Registration:
        try:
            return self.providers[kind][name]
        except KeyError:
            installed = ", ".join(sorted(self.providers.get(kind, {}))) or "none"
            raise PluginError(f"no {kind} provider named {name!r} is installed (installed: {installed})") from None

    def all(self) -> Iterable[Registration]:
        for by_name in self.providers.values():
            yield from by_name.values()
        yield from self.packs.values()
        yield from self.interceptors.values()


@dataclass(frozen=True)
class PluginInfo:
    """Inventory line for ``gateway plugins``."""

    name: str
    distribution: str
    version: str
    entry_point: str
    module: str
    hooks: tuple[str, ...]
    offers: tuple[str, ...]


class GatewayPlugins:
    """A plugin manager with its registry; one per gateway instance (and per test)."""

    def __init__(self, pm: pluggy.PluginManager, registry: Registry, entry_points: dict[str, Any]) -> None:
        self.pm = pm
        self.registry = registry
        self._entry_points = entry_points

    def inventory(self) -> list[PluginInfo]:
        infos = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            ep = self._entry_points.get(name)
            dist = ep.dist if ep is not None else None
            hooks = tuple(sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or ()))
            offers = tuple(sorted(f"{reg.kind}:{reg.name}" for reg in self.registry.all() if reg.plugin == name))
            infos.append(
                PluginInfo(
                    name=name,
                    distribution=dist.metadata["Name"] if dist is not None else "(registered in code)",
                    version=dist.version if dist is not None else "",
                    entry_point=f"{ep.name} = {ep.value}" if ep is not None else "",
                    module=getattr(plugin, "__name__", type(plugin).__name__),
                    hooks=hooks,
                    offers=offers,
                )
            )
        return sorted(infos, key=lambda info: info.name)


def _registrars(registry: Registry) -> tuple[Any, Any, Any, dict[str, str]]:
    """Registrar callables for the three hooks; each records the registering plugin's name."""

    current: dict[str, str] = {"plugin": "?"}

    def add(table: dict[str, Registration], reg: Registration, label: str) -> None:
        if reg.name in table:
            raise PluginError(
                f"{label} {reg.name!r} is registered twice: by plugin {table[reg.name].plugin!r} "
                f"and by plugin {reg.plugin!r}"
            )
        table[reg.name] = reg

    def provider(
        kind: str,
        name: str,
        factory: ProviderFactory,
        *,
        config_model: type[BaseModel] | None = None,
        description: str = "",
    ) -> None:
        reg = Registration(kind, name, factory, config_model, description, current["plugin"])
        add(registry.providers.setdefault(kind, {}), reg, f"{kind} provider")

    def pack(
        name: str, factory: PackFactory, *, config_model: type[BaseModel] | None = None, description: str = ""
    ) -> None:
        add(registry.packs, Registration("pack", name, factory, config_model, description, current["plugin"]), "pack")

    def interceptor(
        name: str,
        factory: InterceptorFactory,
        *,
        config_model: type[BaseModel] | None = None,
        description: str = "",
    ) -> None:
        reg = Registration("interceptor", name, factory, config_model, description, current["plugin"])
        add(registry.interceptors, reg, "interceptor")

    return provider, pack, interceptor, current


def create_plugin_manager(
    *, blocked: Iterable[str] = (), extra_plugins: Iterable[tuple[str, object]] = ()
) -> GatewayPlugins:
    """Load every plugin of the ``mcp_gateway`` entry-point group (except ``blocked``) and collect registrations.

    ``extra_plugins`` registers in-code plugins by name (tests use it; deployments use entry points).
    """
    blocked, extra_plugins = set(blocked), list(extra_plugins)
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name in blocked:
        pm.set_blocked(name)
    entry_points = _entry_points_by_name()
    if unknown := sorted(blocked - set(entry_points) - {name for name, _ in extra_plugins}):
        log.warning(  # a typo would leave the plugin it meant loaded
            "[gateway] block names no installed plugin", names=unknown, installed=sorted(entry_points)
        )
    for name, ep in sorted(entry_points.items()):
        if pm.is_blocked(name):
            continue
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(f"plugin {name!r} ({ep.value}) failed to import: {exc}") from exc
        _register(pm, plugin, name)
    for name, plugin in extra_plugins:
        if name not in blocked:
            _register(pm, plugin, name)
    _check_pending(pm)

    registry = Registry()
    provider, pack, interceptor, current = _registrars(registry)
    for hook_name, registrar in (
        ("gateway_register_providers", provider),
        ("gateway_register_tool_packs", pack),
        ("gateway_register_interceptors", interceptor),
    ):
        caller = getattr(pm.hook, hook_name)
        for impl in caller.get_hookimpls():
            # Called one implementation at a time so each registration records the plugin that made it.
            current["plugin"] = impl.plugin_name
            try:
                impl.function(*[{"register": registrar}[arg] for arg in impl.argnames])
            except GatewayError:
                raise
            except Exception as exc:
                raise PluginError(
                    f"plugin {impl.plugin_name!r}: {hook_name} failed: {type(exc).__name__}: {exc}"
                ) from exc
    for name, reg in registry.packs.items():
        if name in registry.providers or name == "interceptor":  # [plugins.<name>] would be ambiguous
            raise PluginError(
                f"plugin {reg.plugin!r}: a pack may not be named {name!r}: [plugins.{name}] configures the "
                f"{name} providers"
            )
    return GatewayPlugins(pm, registry, entry_points)


def _entry_points_by_name() -> dict[str, Any]:
    """The group's entry points by name; a name two distributions both claim is an error naming both (one would
    otherwise replace the other, a built-in included, silently, by the order of ``sys.path``)."""
    found: dict[str, Any] = {}
    for ep in importlib.metadata.entry_points(group=PROJECT_NAME):
        taken = found.get(ep.name)
        if taken is not None and _dist_name(taken) != _dist_name(ep):
            raise PluginError(
                f"plugin name {ep.name!r} is claimed by two installed distributions, {_dist_name(taken)!r} "
                f"({taken.value}) and {_dist_name(ep)!r} ({ep.value}): rename one entry point in the "
                f"{PROJECT_NAME!r} group, or uninstall one"
            )
        found[ep.name] = ep
    return found


def _dist_name(ep: Any) -> str:
    return ep.dist.name if ep.dist is not None else "?"


def _register(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    """Register ``plugin``; a hook implementation that does not match its specification, or a function named like a
    hook without ``@hookimpl`` (pluggy would ignore it silently), names the plugin."""
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {name!r}: {exc}") from exc
    except ValueError as exc:  # pluggy: the same object or name twice
        raise PluginError(
            f"plugin {name!r} is registered twice ({exc}); an installed plugin is found through its entry point: "
            "pass only plugins that are not installed in extra_plugins"
        ) from exc
    unmarked = [
        attr
        for attr in dir(plugin)
        if attr.startswith("gateway_")
        and inspect.isroutine(getattr(plugin, attr, None))
        and pm.parse_hookimpl_opts(plugin, attr) is None
    ]
    if unmarked:
        pm.unregister(plugin)
        raise PluginError(
            f"plugin {name!r}: {', '.join(unmarked)} is named like a hook but has no @hookimpl "
            "(from gateway.api import hookimpl)"
        )


def _check_pending(pm: pluggy.PluginManager) -> None:
    """A hook implementation with no specification (a misspelt hook) fails loudly, naming its plugin."""
    known = sorted(name for name in vars(hookspecs) if name.startswith("gateway_"))
    for hook_name, caller in vars(pm.hook).items():
        if hook_name.startswith("_") or caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if not impl.optionalhook:
                raise PluginError(
                    f"plugin {impl.plugin_name!r}: {hook_name} is not a hook of the gateway (misspelt?); "
                    f"the hooks are: {', '.join(known)}"
                )


@contextlib.contextmanager
def plugin_bugs_named(who: str, what: str) -> Iterator[None]:
    """A plain exception from a plugin's code at start-up becomes a :class:`PluginError` naming the plugin (the
    host's own errors, a plugin's :class:`ConfigError` included, pass unchanged)."""
    try:
        yield
    except GatewayError:
        raise
    except Exception as exc:
        raise PluginError(f"{who}: {what} failed: {type(exc).__name__}: {exc}") from exc
