"""``SessionConfig`` defaults, clamps, and the sanitizing of inline ``gan-config`` blocks."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway_plugins.thinking.config import ThinkingConfig
from gateway_plugins.thinking.session_config import SessionConfig, parse_block, sanitize

ALLOWED = ("internal", "gemini")


def overlay(raw: Any, base: SessionConfig | None = None) -> tuple[SessionConfig, list[str]]:
    return sanitize(raw, base or SessionConfig(), allowed_judges=ALLOWED)


def test_defaults_are_the_specs() -> None:
    assert SessionConfig().public() == {
        "task": "Audit and improve the provided candidate",
        "scope": "diff",
        "paths": [],
        "threshold": 85,
        "maxCycles": 1,
        "candidates": 1,
        "judges": ["internal"],
        "applyFixes": False,
    }


def test_valid_values_are_taken() -> None:
    config, warnings = overlay(
        {"task": "Harden the parser", "scope": "paths", "paths": ["src/a.py", "src/a.py", "lib"], "threshold": 90,
         "maxCycles": 3, "candidates": 2, "judges": ["gemini", "internal"], "applyFixes": True}
    )  # fmt: skip
    assert warnings == []
    assert config.public() == {
        "task": "Harden the parser", "scope": "paths", "paths": ["src/a.py", "lib"], "threshold": 90,
        "maxCycles": 3, "candidates": 2, "judges": ["gemini", "internal"], "applyFixes": True,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "field", "value", "warning"),
    [
        ({"threshold": 150}, "threshold", 100, "clamped to 100"),
        ({"threshold": -5}, "threshold", 0, "clamped to 0"),
        ({"threshold": 88.6}, "threshold", 89, None),
        ({"threshold": "92"}, "threshold", 92, None),
        ({"threshold": "high"}, "threshold", 85, "must be a number"),
        ({"threshold": True}, "threshold", 85, "must be a number"),
        ({"threshold": None}, "threshold", 85, "must be a number"),
        ({"maxCycles": 0}, "max_cycles", 1, "clamped to 1"),
        ({"maxCycles": 99}, "max_cycles", 5, "clamped to 5"),
        ({"candidates": 12}, "candidates", 5, "clamped to 5"),
        ({"candidates": [2]}, "candidates", 1, "must be a number"),
        ({"scope": "Workspace"}, "scope", "workspace", None),
        ({"scope": "everything"}, "scope", "diff", "scope must be one of"),
        ({"applyFixes": "true"}, "apply_fixes", True, None),
        ({"applyFixes": "yes please"}, "apply_fixes", False, "must be true or false"),
        ({"task": ""}, "task", "Audit and improve the provided candidate", "non-empty"),
        ({"task": "x" * 3000}, "task", "x" * 2000, "truncated"),
        ({"judges": "gemini"}, "judges", ("gemini",), None),
        ({"judges": ["internal", "shell"]}, "judges", ("internal",), "shell not allowed"),
        ({"judges": ["shell"]}, "judges", ("internal",), "no usable judge"),
        ({"judges": []}, "judges", ("internal",), "no usable judge"),
        ({"judges": 7}, "judges", ("internal",), "list of strings"),
        ({"paths": ["ok.py", 3, ""], "scope": "paths"}, "paths", ("ok.py",), "2 invalid paths"),
    ],
)
def test_invalid_values_fall_back_or_clamp(raw: dict, field: str, value: Any, warning: str | None) -> None:
    config, warnings = overlay(raw)
    assert getattr(config, field) == value
    if warning is None:
        assert warnings == []
    else:
        assert warnings and any(warning in text for text in warnings), warnings


def test_paths_scope_without_paths_falls_back_to_workspace() -> None:
    config, warnings = overlay({"scope": "paths"})
    assert config.scope == "workspace" and warnings == [
        'gan-config: scope "paths" without paths; using scope "workspace"'
    ]
    config, warnings = overlay({"scope": "paths", "paths": [1, 2]})
    assert config.scope == "workspace" and len(warnings) == 2


def test_unknown_keys_and_non_objects_are_reported() -> None:
    config, warnings = overlay({"threshold": 70, "temperature": 2})
    assert config.threshold == 70 and warnings == ["gan-config: unknown key 'temperature' ignored"]
    config, warnings = overlay([1, 2, 3])
    assert config == SessionConfig() and "expected a JSON object" in warnings[0]


def test_snake_case_keys_are_accepted_too() -> None:
    config, warnings = overlay({"max_cycles": 2, "apply_fixes": True})
    assert (config.max_cycles, config.apply_fixes, warnings) == (2, True, [])


def test_overlay_starts_from_the_configured_defaults() -> None:
    base = SessionConfig(threshold=70, judges=("internal", "gemini"))
    config, _ = overlay({"maxCycles": 2}, base)
    assert (config.threshold, config.judges, config.max_cycles) == (70, ("internal", "gemini"), 2)


def test_a_block_that_is_not_json_is_reported() -> None:
    raw, warning = parse_block('{ "threshold": 90, }')
    assert raw is None and warning is not None and "not valid JSON" in warning
    assert parse_block('{"threshold": 90}') == ({"threshold": 90}, None)


def test_the_pack_config_validates_its_defaults_strictly() -> None:
    config = ThinkingConfig.model_validate({"defaults": {"threshold": 90, "max_cycles": 2, "applyFixes": True}})
    assert (config.defaults.threshold, config.defaults.max_cycles, config.defaults.apply_fixes) == (90, 2, True)
    with pytest.raises(ValidationError, match="less than or equal to 100"):
        ThinkingConfig.model_validate({"defaults": {"threshold": 101}})
    with pytest.raises(ValidationError, match='scope "paths" needs'):
        ThinkingConfig.model_validate({"defaults": {"scope": "paths"}})
    with pytest.raises(ValidationError, match="allowed_judges does not list"):
        ThinkingConfig.model_validate({"defaults": {"judges": ["gemini"]}, "allowed_judges": ["internal"]})
    with pytest.raises(ValidationError, match="Extra inputs"):
        ThinkingConfig.model_validate({"auditing": True})


def test_a_block_nested_too_deeply_is_a_warning_and_the_defaults() -> None:
    from gateway_plugins.thinking.session_config import parse_block

    raw, warning = parse_block("[" * 45000 + "]" * 45000)
    assert raw is None and warning is not None and "nested too deeply" in warning
