"""What a pack's config validators use to check the providers its table declares (:data:`CHECK_PROVIDER_OPTIONS`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.api.registry import CONFIG_DIR
from gateway.plugin_manager import Registration, Registry

__all__ = ["error_message", "installed_names", "provider_options_check"]


def installed_names(table: Mapping[str, Registration]) -> str:
    """The names in ``table`` for an error message (``none`` when empty)."""
    return ", ".join(sorted(table)) or "none"


def provider_options_check(registry: Registry, config_dir: Path) -> Callable[[str, str, Mapping[str, Any]], None]:
    """:data:`gateway.api.CHECK_PROVIDER_OPTIONS` over the installed ``registry``, for a config file in
    ``config_dir``."""

    def check(kind: str, name: str, options: Mapping[str, Any]) -> None:
        table = registry.providers.get(kind, {})
        reg = table.get(name)
        if reg is None:
            raise ValueError(f"no {kind} provider {name!r} is installed (installed: {installed_names(table)})")
        if reg.config_model is None:
            if options:
                raise ValueError(f"{kind} {name!r} takes no options (given: {', '.join(sorted(options))})")
            return
        try:
            reg.config_model.model_validate(dict(options), context={CONFIG_DIR: config_dir})
        except ValidationError as exc:
            raise ValueError("; ".join(_error_line(error) for error in exc.errors())) from None

    return check


def error_message(error: Any) -> str:
    """A pydantic error's message as a config error says it (without pydantic's ``Value error,`` in front)."""
    return str(error["msg"]).removeprefix("Value error, ")


def _error_line(error: Any) -> str:
    where, message = ".".join(str(part) for part in error["loc"]), error_message(error)
    return f"{where}: {message}" if where else message
