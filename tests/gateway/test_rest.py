"""The REST facade over real HTTP: tool calls, the error envelope, and a generated OpenAPI document that validates
and that schemathesis cannot make return a 5xx."""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from structlog.testing import capture_logs

from gateway.testing import http_gateway
from tests.gateway.sample_plugin import SamplePlugin, sample_config


@pytest.fixture(scope="module")
def rest_server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("rest")
    with http_gateway(sample_config(tmp_path), extra_plugins=[("sample", SamplePlugin())]) as (base, runtime):
        yield base


def test_tools_listing_and_call(rest_server):
    tools = httpx.get(f"{rest_server}/api/v1/tools").json()["tools"]
    assert {t["name"] for t in tools} == {"echo_echo", "echo_fail", "echo_admin"}
    response = httpx.post(f"{rest_server}/api/v1/tools/echo_echo", json={"text": "rest", "times": 2})
    assert response.status_code == 200
    assert response.json() == {"echoed": "rest rest", "caller": "tester"}
    assert response.headers["X-Correlation-ID"]


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("echo_echo", {"times": 1}, 400, "VALIDATION_ERROR"),
        ("echo_fail", {"mode": "missing"}, 404, "NOT_FOUND_ERROR"),
        ("echo_fail", {"mode": "crash"}, 500, "INTERNAL_ERROR"),
        ("no_such_tool", {}, 404, "NOT_FOUND_ERROR"),
    ],
)
def test_errors_use_the_envelope(rest_server, path, body, status, code):
    response = httpx.post(f"{rest_server}/api/v1/tools/{path}", json=body)
    error = response.json()["error"]
    assert response.status_code == status
    assert error["code"] == code
    assert set(error) >= {"code", "message", "detail", "correlation_id", "retryable"}
    assert "Traceback" not in response.text


@pytest.mark.parametrize(
    ("path", "content", "headers", "status"),
    [
        ("/api/v1/tools/no_such_tool", b"{}", {"Content-Type": "application/json"}, 404),
        ("/api/v1/tools/echo_echo", b"text", {"Content-Type": "text/plain"}, 415),
        ("/api/v1/tools/echo_echo", b"[1]", {"Content-Type": "application/json"}, 400),
        ("/api/v1/tools/echo_echo", b"x" * 2_000_000, {"Content-Type": "application/json"}, 413),
    ],
)
def test_a_refusal_before_the_call_is_logged_with_its_correlation_id(rest_server, path, content, headers, status):
    with capture_logs() as logs:
        response = httpx.post(f"{rest_server}{path}", content=content, headers=headers)
    assert response.status_code == status
    cid = response.headers["X-Correlation-ID"]
    assert [e["status"] for e in logs if e["event"] == "request refused" and e["correlation_id"] == cid] == [status]


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[" * 5000 + b"]" * 5000,  # deeper than the parser's recursion
        b'{"times": 1' + b"0" * 5000 + b"}",  # an integer past Python's digit limit
        b'{"text": "\xff"}',  # not UTF-8
    ],
)
def test_malformed_json_is_a_validation_error(rest_server, body):
    response = httpx.post(
        f"{rest_server}/api/v1/tools/echo_echo", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_openapi_document_validates(rest_server):
    document = httpx.get(f"{rest_server}/api/v1/openapi.json").json()
    validate(document)
    operation = document["paths"]["/api/v1/tools/echo_echo"]["post"]
    schema_ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert document["components"]["schemas"][schema_ref.rsplit("/", 1)[1]]["required"] == ["text"]


def test_no_generated_input_makes_the_api_fail_with_5xx(rest_server):
    schema = schemathesis.openapi.from_url(f"{rest_server}/api/v1/openapi.json")
    checked = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path == "/api/v1/tools/echo_fail":
            continue  # this tool fails on purpose (mode="crash" is a designed 500)

        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            response = case.call(base_url=rest_server)
            assert response.status_code < 500, (case.path, case.body, response.text)

        check()
        checked += 1
    assert checked >= 3
