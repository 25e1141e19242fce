"""The fakes answer with the services' documented shapes, and the connectors ask what the services document.

A whole sync of each connector runs against its fake; then every answer the fake gave is validated against the API
description in ``tests/fakes/schemas`` (GitHub: the OpenAPI description GitHub publishes, through
``@octokit/openapi``; Slack and Jira: schemas written from their references), and every request's path, query
parameters and body against the operations those descriptions declare.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from gateway.contracts.connector_contract import full_sync
from tests.fakes.github import FakeGitHub
from tests.fakes.hosted import Answer
from tests.fakes.jira import FakeJira
from tests.fakes.slack import FakeSlack
from tests.plugins.connectors import test_github, test_jira, test_slack

pytestmark = [pytest.mark.anyio]

SCHEMAS = Path(__file__).parents[2] / "fakes" / "schemas"


def _load(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())


def json_schema_of_openapi(node: Any) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema: ``nullable: true`` becomes a null alternative."""
    if isinstance(node, list):
        return [json_schema_of_openapi(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: json_schema_of_openapi(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _validate(schema: dict[str, Any], root: dict[str, Any], body: Any) -> list[str]:
    validator = Draft202012Validator(
        {**schema, **{k: v for k, v in root.items() if k in ("components", "definitions")}}
    )
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(body)]


def _template(path: str, templates: list[str]) -> str | None:
    for template in templates:
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path):
            return template
    return None


async def test_github_answers_and_requests_match_the_openapi_description(
    fake_github: FakeGitHub, token_env: str
) -> None:
    test_github.seed(fake_github)
    github = test_github.connector(fake_github, token_env)
    pages = await full_sync(github)
    await full_sync(github, pages[-1].cursor)
    await github.read("octo/shop/pull/4")
    await github.aclose()
    spec = json_schema_of_openapi(copy.deepcopy(_load("github-rest-subset.json")))
    parameters = spec["components"]["parameters"]
    checked = 0
    for answer in fake_github.answers:
        path = answer.request.path.replace(f"/repositories/{fake_github.repo_id}/", "/repos/octo/shop/")
        template = _template(path, list(spec["paths"]))
        assert template is not None, f"{answer.request.path} is no operation of the description"
        operation = spec["paths"][template]["get"]
        declared = {}
        for parameter in operation["parameters"]:
            if "$ref" in parameter:
                parameter = parameters[parameter["$ref"].rsplit("/", 1)[1]]
            declared[parameter["name"]] = parameter
        for name, value in answer.request.query.items():
            assert name in declared and declared[name]["in"] == "query", f"{template}: undeclared {name}"
            schema = dict(declared[name]["schema"])
            coerced: Any = int(value) if schema.get("type") == "integer" else value
            assert not _validate(schema, spec, coerced), f"{template}: {name}={value}"
        status = str(answer.status)
        assert status in operation["responses"], f"{template}: undocumented status {status}"
        content = operation["responses"][status].get("content")
        if content:
            errors = _validate(content["application/json"]["schema"], spec, answer.body)
            assert not errors, f"{template} {status}: {errors[:5]}"
            checked += 1
    assert checked >= 10


def _check_simple(spec: dict[str, Any], answers: list[Answer], operation_of: Any) -> int:
    checked = 0
    for answer in answers:
        name, operation = operation_of(answer)
        assert operation is not None, f"{answer.request.method} {answer.request.path} is no documented operation"
        for key in answer.request.query:
            assert key in operation["query"], f"{name}: undeclared query parameter {key}"
        if "request" in operation:
            assert not _validate(operation["request"], spec, answer.request.json), name
        ok = answer.status == 200 and (not isinstance(answer.body, dict) or answer.body.get("ok", True))
        schema = operation["success"] if ok else spec["definitions"].get("error", {})
        if not ok and "error_collection" in spec["definitions"]:
            schema = spec["definitions"]["error_collection"]
        errors = _validate(schema, spec, answer.body)
        assert not errors, f"{name} {answer.status}: {errors[:5]}"
        checked += 1
    return checked


async def test_slack_answers_and_requests_match_the_method_reference(fake_slack: FakeSlack, token_env: str) -> None:
    stamps = test_slack.seed(fake_slack)
    slack = test_slack.connector(fake_slack, token_env)
    pages = await full_sync(slack)
    await full_sync(slack, pages[-1].cursor)
    await slack.read(f"{test_slack.DEV}/{stamps['thread']}")
    await slack.aclose()
    fake_slack.revoke()
    revoked = test_slack.connector(fake_slack, token_env)
    with pytest.raises(Exception, match="token_revoked"):
        await revoked.changes(None)
    await revoked.aclose()
    spec = _load("slack-web-subset.json")
    methods = spec["methods"]

    def operation_of(answer: Answer) -> tuple[str, Any]:
        name = answer.request.path.rsplit("/", 1)[-1]
        return name, methods.get(name)

    assert _check_simple(spec, fake_slack.answers, operation_of) >= 6


async def test_jira_answers_and_requests_match_the_rest_reference(fake_jira: FakeJira, token_env: str) -> None:
    test_jira.seed(fake_jira)
    jira = test_jira.connector(fake_jira, token_env)
    pages = await full_sync(jira)
    await full_sync(jira, pages[-1].cursor)
    await jira.read("PROJ-1")
    await jira.aclose()
    spec = _load("jira-rest-v3-subset.json")
    operations = spec["operations"]

    def operation_of(answer: Answer) -> tuple[str, Any]:
        path = re.sub(r"/issue/[A-Z][A-Z0-9_]+-\d+", "/issue/{key}", answer.request.path)
        name = f"{answer.request.method} {path}"
        return name, operations.get(name)

    assert _check_simple(spec, fake_jira.answers, operation_of) >= 6
