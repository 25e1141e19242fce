"""REST routes a pack contributes, served over real HTTP and called with a real client: scopes through the real
``api_key`` authenticator, path/query/body input, status codes, the error envelope, 404/405, tenants, and the
OpenAPI document generated from the same models."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from openapi_spec_validator import validate

from gateway.testing import http_gateway
from tests.gateway.rest_sample import PLUGINS, SCOPES, notes_config
from tests.gateway.rest_support import Served, envelope, run_schemathesis, serve_notes

KEYS = {
    "full": ("acme", SCOPES),
    "reader": ("acme", ["notes:read"]),
    "none": ("acme", []),
    "other": ("globex", SCOPES),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("rest_routes")
    tiers = {"index": 500, "search": {"limit": 500, "period_seconds": 60}}  # room for every test of the module
    with serve_notes(notes_config(tmp_path, rest={"tiers": tiers}), KEYS) as served:
        yield served


def test_a_note_lives_through_create_read_list_update_delete(served: Served) -> None:
    created = served.call("POST", "/notes", "full", json={"title": "first", "body": "hello", "tags": ["a", "b"]})
    assert created.status_code == 201, created.text
    note = created.json()
    assert note["title"] == "first" and note["author"].startswith("key:")
    assert created.headers["X-Correlation-ID"]
    assert served.call("GET", f"/notes/{note['id']}", "reader").json() == note
    listed = served.call("GET", "/notes", "reader", params=[("tag", "a"), ("tag", "b"), ("limit", "5")])
    assert listed.status_code == 200 and note in listed.json()["notes"]
    assert served.call("GET", "/notes", "reader", params={"tag": "zzz"}).json() == {"notes": [], "total": 0}
    updated = served.call("PUT", f"/notes/{note['id']}", "full", json={"body": "changed"})
    assert updated.status_code == 200 and updated.json()["body"] == "changed"
    deleted = served.call("DELETE", f"/notes/{note['id']}", "full")
    assert deleted.status_code == 204 and deleted.content == b""
    error = envelope(served.call("GET", f"/notes/{note['id']}", "reader"), 404, "NOT_FOUND_ERROR")
    assert error["details"] == {"code": "not_found", "id": note["id"]}


def test_no_credentials_is_401_and_a_missing_scope_403(served: Served) -> None:
    refused = served.call("GET", "/notes")
    envelope(refused, 401, "AUTHENTICATION_ERROR")
    assert refused.headers["WWW-Authenticate"].startswith("ApiKey")
    envelope(served.call("GET", "/notes", headers={"X-API-Key": "gwk_junk"}), 401, "AUTHENTICATION_ERROR")
    for key, method, path in (
        ("reader", "POST", "/notes"),
        ("none", "GET", "/notes"),
        ("reader", "DELETE", "/notes/0123abcd"),
    ):
        error = envelope(
            served.call(method, path, key, json={"title": "x"} if method == "POST" else None),
            403,
            "AUTHORIZATION_ERROR",
        )
        assert error["details"]["scope"] in ("notes:read", "notes:write")
    assert served.call("GET", "/notes", "reader").status_code == 200


def test_a_public_route_needs_no_credentials_but_still_checks_the_host(served: Served) -> None:
    pong = served.call("GET", "/ping")
    assert pong.status_code == 200 and pong.json() == {"status": "ok", "caller": "anonymous"}
    assert served.call("GET", "/ping", "full").json()["caller"] == "anonymous"  # credentials are not even read
    head = served.call("HEAD", "/ping")
    assert head.status_code == 200 and head.content == b""
    envelope(served.call("GET", "/ping", headers={"Host": "evil.example"}), 421, "MISDIRECTED_REQUEST")


def test_tenants_do_not_see_each_others_notes(served: Served) -> None:
    mine = served.call("POST", "/notes", "full", json={"title": "acme only"}).json()
    envelope(served.call("GET", f"/notes/{mine['id']}", "other"), 404, "NOT_FOUND_ERROR")
    assert all(n["id"] != mine["id"] for n in served.call("GET", "/notes", "other").json()["notes"])


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "field", "where"),
    [
        ("POST", "/notes", {"json": {}}, "title", "body"),
        ("POST", "/notes", {"json": {"title": "t", "colour": "red"}}, "colour", "body"),
        ("POST", "/notes", {"json": {"title": ""}}, "title", "body"),
        ("GET", "/notes", {"params": {"limit": "0"}}, "limit", "query"),
        ("GET", "/notes", {"params": {"limit": "many"}}, "limit", "query"),
        ("GET", "/notes", {"params": {"sort": "asc"}}, "sort", "query"),
        ("GET", "/notes", {"params": [("limit", "1"), ("limit", "2")]}, "limit", "query"),
        ("GET", "/notes/NOT-AN-ID", {}, "id", "path"),
        ("PUT", "/notes/0123abcd", {"json": {"id": "89abcdef"}}, "id", "body"),
        ("POST", "/notes", {"json": {"title": "t"}, "params": {"x": "1"}}, "x", "query"),
    ],
)
def test_invalid_input_is_400_naming_the_field_and_where(served: Served, method, path, kwargs, field, where) -> None:
    error = envelope(served.call(method, path, "full", **kwargs), 400, "VALIDATION_ERROR")
    assert error["details"]["code"] == "validation_error"
    assert any(e["field"] == field and e["in"] == where for e in error["details"]["errors"]), error
    assert field in error["message"]


def test_bodies_must_be_json_objects(served: Served) -> None:
    json_header = {"Content-Type": "application/json"}
    envelope(served.call("POST", "/notes", "full", content=b"{nope", headers=json_header), 400, "VALIDATION_ERROR")
    envelope(served.call("POST", "/notes", "full", content=b"[1]", headers=json_header), 400, "VALIDATION_ERROR")
    text = {"Content-Type": "text/plain"}
    envelope(
        served.call("POST", "/notes", "full", content=b'{"title": "t"}', headers=text), 415, "UNSUPPORTED_MEDIA_TYPE"
    )


def test_handler_errors_keep_their_status_and_crashes_hide_their_details(served: Served) -> None:
    served.call("POST", "/notes", "full", json={"title": "dup"})
    error = envelope(served.call("POST", "/notes", "full", json={"title": "dup"}), 409, "CONFLICT_ERROR")
    assert error["details"]["code"] == "conflict"
    error = envelope(served.call("POST", "/boom", "full", json={"mode": "tool_error"}), 422, "UNPROCESSABLE_ERROR")
    assert error["details"] == {"code": "semantic_error", "why": "test"}
    crashed = served.call("POST", "/boom", "full", json={"mode": "crash"})
    error = envelope(crashed, 500, "INTERNAL_ERROR")
    assert "secret" not in crashed.text and "Traceback" not in crashed.text
    assert error["details"]["correlation_id"] == error["correlation_id"]


def test_unknown_paths_and_methods_use_the_envelope(served: Served) -> None:
    envelope(served.call("GET", "/no/such/route", "full"), 404, "NOT_FOUND_ERROR")
    for odd in ("/no%0D%0Aroute", "/no/such%0A/route", "/%0A"):  # encoded line breaks reach the API too
        envelope(served.call("GET", odd, "full"), 404, "NOT_FOUND_ERROR")
    for odd_id in ("a%0Ab", "%0A", "a%00b"):
        envelope(served.call("GET", f"/notes/{odd_id}", "full"), 400, "VALIDATION_ERROR")
    refused = served.call("PATCH", "/notes/0123abcd", "full", json={})
    envelope(refused, 405, "METHOD_NOT_ALLOWED")
    assert refused.headers["Allow"] == "GET, PUT, DELETE"


def test_the_openapi_document_covers_pack_and_tool_routes(served: Served) -> None:
    document = served.call("GET", "/openapi.json", "full").json()
    validate(document)
    paths = document["paths"]
    assert {"/api/v1/notes", "/api/v1/notes/{id}", "/api/v1/ping", "/api/v1/tools/notes_count"} <= set(paths)
    create = paths["/api/v1/notes"]["post"]
    assert create["security"] == [{"apiKey": ["notes:write"]}]
    assert {"201", "400", "401", "403", "409", "415", "429", "500", "503"} <= set(create["responses"])
    assert create["x-rate-limit"] == {"limit": 500, "period_seconds": 60.0}
    body = document["components"]["schemas"]["NoteIn"]
    assert body["required"] == ["title"] and body["additionalProperties"] is False
    listing = {p["name"]: p for p in paths["/api/v1/notes"]["get"]["parameters"]}
    assert listing["limit"]["in"] == "query" and listing["limit"]["schema"]["maximum"] == 50
    assert listing["tag"]["explode"] is True and listing["tag"]["schema"]["type"] == "array"
    assert listing["prefix"]["schema"] == {"type": "string", "maxLength": 50, "title": "Prefix"}  # no null
    update = paths["/api/v1/notes/{id}"]["put"]
    assert [p["name"] for p in update["parameters"]] == ["id"] and update["parameters"][0]["required"] is True
    update_body = document["components"]["schemas"][
        update["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    ]
    assert set(update_body["properties"]) == {"title", "body"}
    assert set(paths["/api/v1/notes/{id}"]["delete"]["responses"]) >= {"204", "404"}
    assert paths["/api/v1/ping"]["get"]["security"] == []
    reader = served.call("GET", "/openapi.json", "reader").json()["paths"]
    assert "post" not in reader["/api/v1/notes"] and "get" in reader["/api/v1/notes"]  # only what it may call


def test_a_route_shares_the_pack_with_its_mcp_tool(served: Served) -> None:
    served.call("POST", "/notes", "full", json={"title": "shared"})
    counted = served.call("POST", "/tools/notes_count", "reader", json={"caller": "x"})
    assert counted.status_code == 200 and any(n["title"] == "shared" for n in counted.json()["notes"])


def test_schemathesis_finds_no_failure_on_the_live_server(tmp_path: Path) -> None:
    """Every check schemathesis has (status codes, content types, headers and bodies against the document,
    negative and positive data, unsupported methods, ignored auth...) over every phase, on the live server."""
    roomy = {"tiers": {name: 100_000 for name in ("search", "index", "notes_edit", "probe")}}
    with serve_notes(notes_config(tmp_path, rest=roomy), {"full": ("acme", SCOPES)}) as served:
        run = run_schemathesis(
            served, "full", tmp_path, max_examples=30, timeout=600, extra=["--exclude-path", "/api/v1/boom"]
        )  # /boom fails on purpose (a designed 500)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "No issues found" in run.stdout
    assert re.search(r"Tested: 10\b", run.stdout), run.stdout[-2000:]


def test_jwt_scopes_and_tenant_reach_the_routes(tmp_path: Path) -> None:
    secret = "s" * 48
    table = {"algorithms": ["HS256"], "secret": secret, "issuer": "https://idp.test/", "audience": "api"}
    config = notes_config(tmp_path, auth="jwt", plugins={"auth": {"jwt": table}})

    def token(scope: str, tenant: str) -> dict[str, str]:
        claims = {"iss": "https://idp.test/", "aud": "api", "sub": "ada", "exp": int(time.time()) + 300}
        signed = jwt.encode({**claims, "scope": scope, "tenant_id": tenant}, secret, algorithm="HS256")
        return {"Authorization": f"Bearer {signed}"}

    with http_gateway(config, extra_plugins=PLUGINS) as (base, _runtime):
        url = f"{base}/api/v1/notes"
        writer, reader, stranger = (
            token("notes:read notes:write", "acme"),
            token("notes:read", "acme"),
            token("notes:read", "globex"),
        )
        created = httpx.post(url, json={"title": "jwt"}, headers=writer, timeout=30)
        assert created.status_code == 201 and created.json()["author"] == "ada"
        refused = httpx.post(url, json={"title": "no"}, headers=reader, timeout=30)
        envelope(refused, 403, "AUTHORIZATION_ERROR")
        assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
        assert httpx.get(url, headers=reader, timeout=30).json()["total"] == 1
        assert httpx.get(url, headers=stranger, timeout=30).json()["total"] == 0  # another tenant's notes
        envelope(httpx.get(url, headers={"Authorization": "Bearer x.y.z"}, timeout=30), 401, "AUTHENTICATION_ERROR")
