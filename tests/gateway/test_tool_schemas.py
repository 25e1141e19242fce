"""Tool schemas come from the pydantic models; output schemas state simple nullable fields as type lists."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from gateway.tool_schemas import input_schema, output_schema


class Inner(BaseModel):
    n: int


class Out(BaseModel):
    text: str | None = None
    when: datetime | None = None
    mode: Literal["a", "b"] | None = None
    inner: Inner | None = None
    numbers: list[int] | None = None
    either: int | str | None = None
    fixed: Literal["x"] = "x"


def test_a_simple_nullable_field_is_a_list_of_types_and_the_rest_keeps_any_of() -> None:
    props = output_schema(Out)["properties"]
    assert props["text"]["type"] == ["string", "null"] and "anyOf" not in props["text"]
    assert props["when"] == {"default": None, "format": "date-time", "title": "When", "type": ["string", "null"]}
    assert props["mode"]["type"] == ["string", "null"] and props["mode"]["enum"] == ["a", "b", None]
    assert props["numbers"]["type"] == ["array", "null"] and props["numbers"]["items"] == {"type": "integer"}
    assert {"$ref": "#/$defs/Inner"} in props["inner"]["anyOf"]  # a reference stays a branch of its own
    assert len(props["either"]["anyOf"]) == 3


def test_input_schemas_are_pydantics_own() -> None:
    assert input_schema(Out) == Out.model_json_schema()


@pytest.mark.parametrize(
    "value",
    [
        Out(),
        Out(text="t", when=datetime(2026, 1, 2, tzinfo=UTC), mode="b", inner=Inner(n=1), numbers=[1], either="s"),
        Out(either=3),
    ],
)
def test_the_output_schema_accepts_what_the_model_serialises(value: Out) -> None:
    Draft202012Validator(output_schema(Out)).validate(value.model_dump(mode="json"))


@pytest.mark.parametrize(
    "bad",
    [{"text": 1}, {"mode": "c"}, {"numbers": ["x"]}, {"inner": {"n": "x"}}, {"when": 3}, {"either": 1.5}],
)
def test_the_output_schema_still_rejects_wrong_types(bad: dict[str, Any]) -> None:
    assert not Draft202012Validator(output_schema(Out)).is_valid(bad)
