"""Checking values against the JSON Schemas of tools declared without pydantic models (a remote server's).

The schema's own ``$schema`` picks the draft (draft-07 for most Node servers, 2020-12 by default, as MCP says);
``$ref`` resolves only within the schema document, never over the network. Errors come out in the shape the
pydantic path gives (``{"field", "message", "type"}``), so a client sees one error format whatever the tool.

Every call of a remote tool checks its arguments, and its structured result, against such a schema. ``jsonschema``
takes 25-30 µs for even a one-property schema, a noticeable part of what a gateway spends forwarding a call, so
``jsonschema-rs`` (the same drafts, compiled, about 1 µs) answers first; when it finds the value invalid, or cannot
compile the schema, ``jsonschema`` decides and names the errors. A value is therefore refused only on
``jsonschema``'s word, and the error format never depends on the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema_rs
from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry

__all__ = ["CompiledSchema", "compile_schema", "schema_errors"]


@dataclass(frozen=True)
class CompiledSchema:
    """A schema ready to check values: ``fast`` (jsonschema-rs, None when it could not compile the schema) says
    whether a value is valid, ``validator`` (jsonschema) has the last word and names the errors."""

    validator: Validator
    fast: Any | None


def compile_schema(schema: Mapping[str, Any], *, what: str) -> CompiledSchema:
    """``schema`` compiled. Raises :class:`ValueError` naming ``what`` when the schema is invalid."""
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"{what} is not a valid JSON Schema: {exc.message}") from None
    try:
        # formats unchecked and nothing fetched, as with jsonschema below
        fast = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except (jsonschema_rs.ValidationError, ValueError):  # e.g. a $ref outside the document
        fast = None
    return CompiledSchema(cls(schema, registry=Registry()), fast)  # type: ignore[call-arg]


def schema_errors(schema: CompiledSchema, instance: Any) -> list[dict[str, str]]:
    """Every way ``instance`` breaks the schema, each naming its field (dotted path; ``(root)`` for the whole)."""
    if schema.fast is not None and schema.fast.is_valid(instance):
        return []
    errors = []
    for error in sorted(schema.validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        path = [str(part) for part in error.absolute_path]
        if error.validator == "required" and isinstance(error.instance, Mapping):
            missing = [name for name in error.validator_value if name not in error.instance]
            named = [name for name in missing if repr(name) in error.message]
            path += named[:1]
        errors.append({"field": ".".join(path) or "(root)", "message": error.message, "type": str(error.validator)})
    return errors
