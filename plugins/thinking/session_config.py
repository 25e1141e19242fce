"""``SessionConfig``: what an audit does, its defaults, and the sanitizing of an inline ``gan-config`` block.

Ranges (values outside are clamped, with a warning): ``threshold`` 0-100, ``maxCycles`` 1-5, ``candidates`` 1-5.
Invalid values of an inline block fall back to the configured default with a warning; unknown keys are ignored
with a warning; ``scope = "paths"`` without paths falls back to ``workspace`` with a warning.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Scope = Literal["diff", "paths", "workspace"]
SCOPES: tuple[Scope, ...] = ("diff", "paths", "workspace")
DEFAULT_TASK = "Audit and improve the provided candidate"
MAX_TASK = 2000
MAX_PATHS = 100
MAX_JUDGES = 5
RANGES = {"threshold": (0, 100), "max_cycles": (1, 5), "candidates": (1, 5)}


class SessionConfig(BaseModel):
    """The audit settings of one call. Field names follow the spec (``maxCycles``, ``applyFixes``); the TOML
    defaults table also accepts ``max_cycles`` and ``apply_fixes``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    task: str = Field(default=DEFAULT_TASK, min_length=1, max_length=MAX_TASK)
    scope: Scope = "diff"
    paths: tuple[str, ...] = Field(default=(), max_length=MAX_PATHS)
    threshold: int = Field(default=85, ge=0, le=100)
    max_cycles: int = Field(default=1, ge=1, le=5, alias="maxCycles")
    """Judge rounds: 1 reviews only; each further round re-judges the code with the best candidate fix applied
    in memory, and stops early once the verdict passes or no candidate improves the score."""
    candidates: int = Field(default=1, ge=1, le=5)
    """Candidate fixes tried per extra round: the judges' fixes combined, then each judge's own, in that order."""
    judges: tuple[str, ...] = Field(default=("internal",), min_length=1, max_length=MAX_JUDGES)
    apply_fixes: bool = Field(default=False, alias="applyFixes")

    @model_validator(mode="after")
    def _paths_need_paths(self) -> SessionConfig:
        if self.scope == "paths" and not self.paths:
            raise ValueError('scope "paths" needs a non-empty "paths" list')
        return self

    def public(self) -> dict[str, Any]:
        """The effective settings as the spec spells them."""
        return self.model_dump(mode="json", by_alias=True)


_KEYS = {
    "task": "task",
    "scope": "scope",
    "paths": "paths",
    "threshold": "threshold",
    "maxCycles": "max_cycles",
    "max_cycles": "max_cycles",
    "candidates": "candidates",
    "judges": "judges",
    "applyFixes": "apply_fixes",
    "apply_fixes": "apply_fixes",
}


def parse_block(text: str) -> tuple[Any, str | None]:
    """Decode the JSON of a ``gan-config`` block; ``(None, warning)`` when it is not JSON."""
    try:
        return json.loads(text), None
    except ValueError as error:
        return None, f"gan-config: not valid JSON ({error}); defaults used"
    except RecursionError:
        return None, "gan-config: not valid JSON (nested too deeply); defaults used"


def sanitize(raw: Any, base: SessionConfig, *, allowed_judges: Collection[str]) -> tuple[SessionConfig, list[str]]:
    """Overlay the inline block ``raw`` on ``base``; invalid values keep the base value and add a warning."""
    warnings: list[str] = []
    if raw is None:
        return base, warnings
    if not isinstance(raw, dict):
        return base, [f"gan-config: expected a JSON object, got {type(raw).__name__}; defaults used"]
    values = base.model_dump()
    for key, value in raw.items():
        field = _KEYS.get(key)
        if field is None:
            warnings.append(f"gan-config: unknown key {key!r} ignored")
            continue
        cleaned = _CLEANERS[field](value, warnings, key, allowed_judges)
        if cleaned is not _INVALID:
            values[field] = cleaned
    if values["scope"] == "paths" and not values["paths"]:
        warnings.append('gan-config: scope "paths" without paths; using scope "workspace"')
        values["scope"] = "workspace"
    return SessionConfig.model_validate(values), warnings


_INVALID = object()


def _number(value: Any, warnings: list[str], key: str, field: str) -> Any:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        warnings.append(f"gan-config: {key} must be a number; default kept")
        return _INVALID
    low, high = RANGES[field]
    number = round(value)
    if not low <= number <= high:
        clamped = min(max(number, low), high)
        warnings.append(f"gan-config: {key} {value!r} is outside {low}-{high}; clamped to {clamped}")
        return clamped
    return number


def _task(value: Any, warnings: list[str], key: str, _: Collection[str]) -> Any:
    if not isinstance(value, str) or not value.strip():
        warnings.append("gan-config: task must be a non-empty string; default kept")
        return _INVALID
    if len(value) > MAX_TASK:
        warnings.append(f"gan-config: task longer than {MAX_TASK} characters; truncated")
    return value.strip()[:MAX_TASK]


def _scope(value: Any, warnings: list[str], key: str, _: Collection[str]) -> Any:
    if isinstance(value, str) and value.strip().lower() in SCOPES:
        return value.strip().lower()
    warnings.append(f"gan-config: scope must be one of {', '.join(SCOPES)}; default kept")
    return _INVALID


def _strings(value: Any, warnings: list[str], key: str, limit: int) -> list[str] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        warnings.append(f"gan-config: {key} must be a list of strings; default kept")
        return None
    items = [item.strip() for item in value if isinstance(item, str) and item.strip() and len(item) <= 1000]
    if len(items) != len(value):
        warnings.append(f"gan-config: {len(value) - len(items)} invalid {key} entr(y/ies) dropped")
    unique = list(dict.fromkeys(items))
    if len(unique) > limit:
        warnings.append(f"gan-config: more than {limit} {key}; the first {limit} kept")
    return unique[:limit]


def _paths(value: Any, warnings: list[str], key: str, _: Collection[str]) -> Any:
    items = _strings(value, warnings, key, MAX_PATHS)
    return _INVALID if items is None else tuple(items)


def _judges(value: Any, warnings: list[str], key: str, allowed: Collection[str]) -> Any:
    items = _strings(value, warnings, key, MAX_JUDGES)
    if items is None:
        return _INVALID
    unknown = [item for item in items if item not in allowed]
    if unknown:
        warnings.append(f"gan-config: judge(s) {', '.join(unknown)} not allowed here (allowed: {', '.join(allowed)})")
    known = tuple(item for item in items if item in allowed)
    if not known:
        warnings.append("gan-config: no usable judge named; default judges kept")
        return _INVALID
    return known


def _flag(value: Any, warnings: list[str], key: str, _: Collection[str]) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    warnings.append(f"gan-config: {key} must be true or false; default kept")
    return _INVALID


_CLEANERS: dict[str, Callable[[Any, list[str], str, Collection[str]], Any]] = {
    "task": _task,
    "scope": _scope,
    "paths": _paths,
    "threshold": lambda value, warnings, key, _: _number(value, warnings, key, "threshold"),
    "max_cycles": lambda value, warnings, key, _: _number(value, warnings, key, "max_cycles"),
    "candidates": lambda value, warnings, key, _: _number(value, warnings, key, "candidates"),
    "judges": _judges,
    "apply_fixes": _flag,
}
