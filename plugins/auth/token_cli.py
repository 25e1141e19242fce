"""``gateway tokens``: mint a first token pair, and revoke a principal's refresh tokens, when the ``jwt``
authenticator issues tokens itself (``[plugins.auth.jwt.issuing]``).

``gateway tokens issue`` prints the pair as one JSON object alone on stdout (``{"access_token", "refresh_token",
"expires_in"}``, the body ``POST /api/v1/auth/refresh`` answers), so ``PAIR=$(gateway tokens issue ...)`` works;
everything else goes to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from gateway_plugins.auth.cli_support import run_with_auth_provider, split_scopes
from gateway_plugins.auth.jwt_issuer import TokenIssuer

T = TypeVar("T")


def _issuer(provider: Any) -> TokenIssuer:
    issuer = getattr(provider, "issuer", None)
    if not isinstance(issuer, TokenIssuer):
        raise click.ClickException(
            "the gateway does not issue tokens: add [plugins.auth.jwt.issuing] to the configuration"
        )
    return issuer


def _run(action: Callable[[TokenIssuer], Awaitable[T]]) -> T:
    return run_with_auth_provider("jwt", _issuer, action)


@click.group("tokens")
def tokens() -> None:
    """Tokens the gateway issues itself (the jwt authenticator's 'issuing' table)."""


@tokens.command("issue")
@click.option("--subject", required=True, help="Who the tokens are for (the 'sub' claim).")
@click.option("--tenant", default=None, help="The tenant (the 'tenant_id' claim).")
@click.option("--scopes", required=True, help="Comma-separated scopes, e.g. search:read,index:read ('' for none).")
def issue(subject: str, tenant: str | None, scopes: str) -> None:
    """Mint an access token and a refresh token (a new family) and print them as JSON on stdout."""
    pair: Any = _run(lambda issuer: issuer.issue(subject, tenant, split_scopes(scopes)))
    click.echo(f"Issued tokens for {subject!r} (tenant {tenant or '-'}, scopes {scopes or '-'}).", err=True)
    click.echo(json.dumps(pair.model_dump()))


@tokens.command("revoke")
@click.option("--subject", required=True, help="Whose refresh tokens to revoke.")
@click.option("--tenant", default=None, help="The subject's tenant.")
def revoke(subject: str, tenant: str | None) -> None:
    """Revoke every refresh token of a subject (its access tokens expire on their own within minutes)."""
    count = _run(lambda issuer: issuer.revoke(subject, tenant))
    click.echo(f"Revoked {count} refresh token(s) of {subject!r} (tenant {tenant or '-'}).", err=True)


def register(cli: click.Group) -> None:
    """Add ``tokens`` to the root ``gateway`` group."""
    cli.add_command(tokens)
