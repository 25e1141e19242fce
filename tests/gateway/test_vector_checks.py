"""The checks on what callers pass to a vector store, as :mod:`gateway.api` offers them to every store."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gateway.api import FilterCondition, canonical_point_id, check_limit_and_offset, checked_payload, filter_conditions

ID = "0f8fad5b-d9cb-469f-a165-70867728950e"


def test_a_point_id_comes_back_in_canonical_form() -> None:
    assert canonical_point_id(ID.upper()) == ID
    assert canonical_point_id("{" + ID.replace("-", "") + "}") == ID


@pytest.mark.parametrize("bad", ["", "not-a-uuid", ID[:-1], 42, None])
def test_anything_but_a_uuid_string_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="point id"):
        canonical_point_id(bad)


def test_negative_limits_or_offsets_are_refused_naming_both() -> None:
    check_limit_and_offset(0, 0)
    for limit, offset in ((-1, 0), (10, -1)):
        with pytest.raises(ValueError, match=f"limit={limit}, offset={offset}"):
            check_limit_and_offset(limit, offset)


def test_a_filter_becomes_one_condition_per_field() -> None:
    assert filter_conditions(None) == [] and filter_conditions({}) == []
    found = filter_conditions({"lang": "py", "stars": [1, 2.5], "kind": ("a", "b"), "open": True})
    assert found == [
        FilterCondition("lang", ("py",)),
        FilterCondition("stars", (1, 2.5)),
        FilterCondition("kind", ("a", "b")),
        FilterCondition("open", (True,)),
    ]


@pytest.mark.parametrize(
    ("filter", "named"),
    [({"": "x"}, "filter field"), ({"a": math.nan}, "'a'"), ({"a": [1, {"b": 2}]}, "'a'"), ({"a": None}, "'a'")],
)
def test_unsupported_filters_are_refused_naming_the_field(filter: dict[Any, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        filter_conditions(filter)


def test_a_payload_must_be_a_json_object() -> None:
    payload = {"title": "x", "tags": ["a"], "nested": {"n": 1}}
    assert checked_payload(ID, payload) == payload
    for bad in ({"x": math.inf}, {"x": {1, 2}}, ["not", "a", "mapping"]):
        with pytest.raises(ValueError, match=ID):
            checked_payload(ID, bad)  # type: ignore[arg-type]
