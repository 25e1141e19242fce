"""The four tools' input schemas against ``context-engine-api.md`` section 2: same names, properties, types, enums,
required fields and ``top_k`` bounds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gateway.tool_schemas import input_schema
from gateway_plugins.context.models import ConnectorInput, IndexControlInput, RelatedInput, SearchInput

SPEC = Path(__file__).resolve().parents[3].parent / "shared" / "spec" / "context-engine-api.md"
MODELS = {
    "context.search": SearchInput,
    "context.get_related_info": RelatedInput,
    "context.index_control": IndexControlInput,
    "context.connector_management": ConnectorInput,
}


def spec_schemas() -> dict[str, dict[str, Any]]:
    text = SPEC.read_text()
    found = {}
    for name in MODELS:
        block = re.search(rf"\*\*Tool: `{re.escape(name)}`\*\*.*?```json\n(.*?)```", text, re.S)
        assert block, name
        found[name] = json.loads(block.group(1))
    return found


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow $ref and take the non-null branch of Optional fields."""
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    if "anyOf" in schema:
        schema = next(s for s in schema["anyOf"] if s.get("type") != "null")
        return resolve(schema, root)
    return schema


def conforms(ours: dict[str, Any], theirs: dict[str, Any], root: dict[str, Any], where: str) -> None:
    ours = resolve(ours, root)
    assert ours.get("type") == theirs.get("type"), where
    if "enum" in theirs:
        assert ours["enum"] == theirs["enum"], where
    for key in ("default", "maximum"):
        if key in theirs:
            assert ours[key] == theirs[key], f"{where}.{key}"
    if theirs.get("type") == "object" and "properties" in theirs:
        assert set(ours["properties"]) == set(theirs["properties"]), where
        assert set(ours.get("required", [])) == set(theirs.get("required", [])), where
        for prop, sub in theirs.get("properties", {}).items():
            conforms(ours["properties"][prop], sub, root, f"{where}.{prop}")
    if theirs.get("type") == "array":
        conforms(ours["items"], theirs["items"], root, f"{where}[]")


@pytest.mark.skipif(not SPEC.exists(), reason="the shared spec folder is not beside the repository")
@pytest.mark.parametrize("name", list(MODELS))
def test_input_schema_matches_the_spec(name: str) -> None:
    ours = input_schema(MODELS[name])
    conforms(ours, spec_schemas()[name], ours, name)
