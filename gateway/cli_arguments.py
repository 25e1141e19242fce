"""A tool's arguments as the command line gives them (``gateway call TOOL ARGUMENTS``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

__all__ = ["read_arguments"]


def read_arguments(value: str) -> dict[str, Any]:
    """A tool's arguments from the command line: a JSON object written inline, ``-`` (stdin) or ``@FILE``.
    A problem is a usage error naming where the text came from."""
    if value == "-":
        source, text = "stdin", sys.stdin.read()
    elif value.startswith("@"):
        path = Path(value[1:]).expanduser()
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="ARGUMENTS") from None
        except UnicodeDecodeError:
            raise click.BadParameter(f"{path} is not UTF-8 text", param_hint="ARGUMENTS") from None
    else:
        source, text = "the command line", value
    if not text.strip():
        raise click.BadParameter(f"{source} gave nothing; expected a JSON object", param_hint="ARGUMENTS")
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{source}: not JSON: {exc}", param_hint="ARGUMENTS") from None
    if not isinstance(parsed, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean"}.get(type(parsed), "a number or null")
        raise click.BadParameter(f"{source}: must be a JSON object, not {kind}", param_hint="ARGUMENTS")
    return parsed
