"""Checking values against JSON Schemas of tools declared without pydantic models (:mod:`gateway.json_schemas`):
the compiled engine only ever says "valid"; refusals and their wording come from ``jsonschema``."""

from __future__ import annotations

from typing import Any

import pytest
from referencing.exceptions import Unresolvable

from gateway.json_schemas import compile_schema, schema_errors

ADDRESS = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "street": {"type": "string", "minLength": 1},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "tags": {"type": "array", "items": {"$ref": "#/definitions/tag"}},
    },
    "required": ["street"],
    "additionalProperties": False,
    "definitions": {"tag": {"enum": ["home", "work"]}},
}


def test_a_valid_value_has_no_errors() -> None:
    schema = compile_schema(ADDRESS, what="test")
    assert schema.fast is not None
    assert schema_errors(schema, {"street": "Main St", "zip": "12345", "tags": ["home"]}) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({}, [{"field": "street", "message": "'street' is a required property", "type": "required"}]),
        (
            {"street": "x", "zip": "12"},
            [{"field": "zip", "message": "'12' does not match '^[0-9]{5}$'", "type": "pattern"}],
        ),
        (
            {"street": "x", "tags": ["home", "garage"]},
            [{"field": "tags.1", "message": "'garage' is not one of ['home', 'work']", "type": "enum"}],
        ),
        ("a string", [{"field": "(root)", "message": "'a string' is not of type 'object'", "type": "type"}]),
    ],
)
def test_an_invalid_value_gets_every_error_named_by_jsonschema(value: Any, expected: list[dict[str, str]]) -> None:
    schema = compile_schema(ADDRESS, what="test")
    assert schema_errors(schema, value) == expected
    assert schema_errors(schema, value) == schema_errors(schema.__class__(schema.validator, None), value)


def test_a_schema_the_compiled_engine_cannot_take_is_checked_by_jsonschema_alone() -> None:
    """A ``$ref`` outside the document: nothing is fetched; jsonschema reports it as unresolvable at check time."""
    schema = compile_schema({"type": "object", "properties": {"a": {"type": "integer"}}, "$defs": {}}, what="ok")
    assert schema.fast is not None
    remote = compile_schema({"$ref": "https://schemas.example.invalid/thing.json"}, what="remote")
    assert remote.fast is None
    with pytest.raises(Unresolvable, match=r"thing\.json"):
        schema_errors(remote, {"a": 1})


def test_an_invalid_schema_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="the input schema of tool 'x' is not a valid JSON Schema"):
        compile_schema({"type": "no-such-type"}, what="the input schema of tool 'x'")
