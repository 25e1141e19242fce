"""The ``none`` authenticator: one configured principal with every scope, whatever the request carries."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.api import Authenticator, ProviderContext
from gateway_plugins.auth.none import NoAuthConfig, build

pytestmark = pytest.mark.anyio


def _build(tmp_path: Path, **table: object):
    ctx = ProviderContext(
        kind="auth", name="none", config=NoAuthConfig.model_validate(table), data_dir=tmp_path, provider=_no_provider
    )
    return build(ctx)


def _no_provider(kind: str, name: str | None = None) -> object:
    raise AssertionError("the none authenticator needs no other provider")


async def test_anonymous_by_default(tmp_path: Path) -> None:
    auth = _build(tmp_path)
    assert isinstance(auth, Authenticator) and auth.name == "none"
    principal = await auth.authenticate({})
    assert (principal.subject, principal.tenant, principal.method) == ("anonymous", None, "none")
    assert principal.all_scopes and principal.allows("gim:write")
    assert auth.challenge() is None


async def test_configured_identity_and_headers_ignored(tmp_path: Path) -> None:
    auth = _build(tmp_path, subject="ci-runner", tenant="acme")
    for headers in ({}, {"X-API-Key": "garbage"}, {"Authorization": "Bearer not-a-token"}):
        principal = await auth.authenticate(headers)
        assert principal.key == "acme:ci-runner" and principal.all_scopes


@pytest.mark.parametrize("table", [{"subject": ""}, {"tenant": ""}, {"user": "x"}])
def test_config_is_validated(table: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        NoAuthConfig.model_validate(table)
