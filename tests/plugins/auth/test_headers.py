"""Reading credentials from headers (plain dicts and Starlette's multi-valued ``Headers``) and writing challenges."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from gateway.api import Forbidden, Unauthenticated
from gateway_plugins.auth.headers import (
    MAX_CREDENTIAL_LENGTH,
    bearer_challenge,
    bearer_token,
    format_challenge,
    header_value,
    quote,
)


def _reason(call, *args) -> str:
    with pytest.raises(Unauthenticated) as caught:
        call(*args)
    return caught.value.details["reason"]


def test_header_lookup_ignores_case_in_dicts_and_starlette_headers() -> None:
    assert header_value({"x-api-key": "v"}, "X-API-Key") == "v"
    assert header_value({"X-Api-Key": "v"}, "X-API-Key") == "v"
    assert header_value(Headers(raw=[(b"x-api-key", b"v")]), "X-API-Key") == "v"
    assert header_value({"accept": "*/*"}, "X-API-Key") is None


def test_a_repeated_credential_header_is_refused() -> None:
    headers = Headers(raw=[(b"authorization", b"Bearer a"), (b"authorization", b"Bearer b")])
    assert _reason(header_value, headers, "Authorization") == "malformed"


def test_non_text_and_oversized_values_are_refused() -> None:
    assert _reason(header_value, {"X-API-Key": b"bytes"}, "X-API-Key") == "malformed"
    assert _reason(header_value, {"X-API-Key": "k" * (MAX_CREDENTIAL_LENGTH + 1)}, "X-API-Key") == "malformed"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Bearer abc.def-ghi_jkl~+/==", "abc.def-ghi_jkl~+/=="),
        ("bearer   spaced", "spaced"),
        ("  Bearer padded  ", "padded"),
    ],
)
def test_bearer_token_parsing(value: str, expected: str) -> None:
    assert bearer_token({"Authorization": value}) == expected


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "missing"),
        ({"Authorization": "   "}, "missing"),
        ({"Authorization": "Basic dTpw"}, "unsupported_scheme"),
        ({"Authorization": "Bearer"}, "malformed"),
        ({"Authorization": "Bearer "}, "malformed"),
        ({"Authorization": "Bearer two tokens"}, "malformed"),
        ({"Authorization": "Bearer tok\u00e9n"}, "malformed"),
        ({"Authorization": "Bearer a=b"}, "malformed"),
    ],
)
def test_bearer_token_refusals(headers: dict[str, str], reason: str) -> None:
    assert _reason(bearer_token, headers) == reason


def test_quoting() -> None:
    assert quote('a "b" \\ c') == '"a \\"b\\" \\\\ c"'
    assert quote("line\r\nbreak\x00") == '"linebreak"'
    assert format_challenge("ApiKey", {"realm": "r", "skip": None}) == 'ApiKey realm="r"'
    assert format_challenge("Basic", {}) == "Basic"


def test_bearer_challenge_forms() -> None:
    assert bearer_challenge(realm="gw", error=None) == 'Bearer realm="gw"'
    missing = Unauthenticated("missing bearer token", details={"reason": "missing"})
    assert bearer_challenge(realm="gw", error=missing) == 'Bearer realm="gw"'
    invalid = Unauthenticated('bad "token" \\ here\n', details={"reason": "invalid_signature"})
    assert bearer_challenge(realm="gw", error=invalid, resource_metadata="https://m") == (
        'Bearer realm="gw", error="invalid_token", error_description="bad token  here", resource_metadata="https://m"'
    )
    forbidden = Forbidden("needs a scope")
    assert bearer_challenge(realm="gw", error=forbidden, scope="gim:write") == (
        'Bearer realm="gw", error="insufficient_scope", error_description="needs a scope", scope="gim:write"'
    )
