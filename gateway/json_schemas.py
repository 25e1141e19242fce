"""Checking values against the JSON Schemas of tools declared without pydantic models (a remote server's).

The schema's own ``$schema`` picks the draft (draft-07 for most Node servers, 2020-12 by default, as MCP says);
``$ref`` resolves only within the schema document, never over the network. Errors come out in the shape the
pydantic path gives (``{"field", "message", "type"}``), so a client sees one error format whatever the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry

__all__ = ["compile_schema", "schema_errors"]


def compile_schema(schema: Mapping[str, Any], *, what: str) -> Validator:
    """A validator for ``schema``. Raises :class:`ValueError` naming ``what`` when the schema is invalid."""
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"{what} is not a valid JSON Schema: {exc.message}") from None
    return cls(schema, registry=Registry())  # type: ignore[call-arg]


def schema_errors(validator: Validator, instance: Any) -> list[dict[str, str]]:
    """Every way ``instance`` breaks the schema, each naming its field (dotted path; ``(root)`` for the whole)."""
    errors = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        path = [str(part) for part in error.absolute_path]
        if error.validator == "required" and isinstance(error.instance, Mapping):
            missing = [name for name in error.validator_value if name not in error.instance]
            named = [name for name in missing if repr(name) in error.message]
            path += named[:1]
        errors.append({"field": ".".join(path) or "(root)", "message": error.message, "type": str(error.validator)})
    return errors
