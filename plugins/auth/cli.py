"""``gateway keys``: create, list, rotate and revoke the API keys of the ``api_key`` authenticator.

The commands reach the deployment's store through the :class:`gateway.api.CommandEnvironment` click hands them
(``obj``), so they manage exactly the keys the running gateway checks. A new key is printed once, alone on stdout
(so ``KEY=$(gateway keys create ...)`` works); everything else goes to stderr.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar, runtime_checkable

import click

from gateway_plugins.auth.cli_support import run_with_auth_provider, split_scopes
from gateway_plugins.auth.keys import ApiKeyInfo, IssuedKey

T = TypeVar("T")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(?:\d+[smhdw])+")
_MAX_DURATION = timedelta(days=3660)


@runtime_checkable
class KeyManager(Protocol):
    """What the commands need from the ``api_key`` provider (the built-in one, or a compatible plugin's)."""

    async def create_key(
        self, *, name: str, scopes: Iterable[str], tenant: str | None = None, expires_at: datetime | None = None
    ) -> IssuedKey: ...

    async def list_keys(self, *, include_revoked: bool = True) -> list[ApiKeyInfo]: ...

    async def revoke_key(self, key_id: str) -> ApiKeyInfo: ...

    async def rotate_key(
        self, key_id: str, *, grace: timedelta = ..., expires_at: datetime | None = None
    ) -> tuple[IssuedKey, ApiKeyInfo]: ...


class Duration(click.ParamType):
    """``30d``, ``12h``, ``1w2d``, ``90m``, ``3600s``."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        text = str(value).strip().lower()
        if not _DURATION.fullmatch(text):
            self.fail(f"{value!r} is not a duration such as 30d, 12h, 1w2d or 90m", param, ctx)
        seconds = sum(int(n) * _UNITS[unit] for n, unit in re.findall(r"(\d+)([smhdw])", text))
        if seconds <= 0 or seconds > _MAX_DURATION.total_seconds():
            self.fail(f"{value!r} must be more than 0s and at most {_MAX_DURATION.days} days", param, ctx)
        return timedelta(seconds=seconds)


class Timestamp(click.ParamType):
    """An ISO-8601 date or date-time; without an offset it is read as UTC."""

    name = "timestamp"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            parsed = value
        else:
            try:
                parsed = datetime.fromisoformat(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not an ISO-8601 date or time (e.g. 2030-01-31T12:00:00Z)", param, ctx)
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _expiry(expires_in: timedelta | None, expires_at: datetime | None) -> datetime | None:
    if expires_in is not None and expires_at is not None:
        raise click.UsageError("give --expires-in or --expires-at, not both")
    if expires_in is not None:
        return datetime.now(UTC) + expires_in
    return expires_at


def _key_manager(provider: Any) -> KeyManager:
    if not isinstance(provider, KeyManager):
        raise click.ClickException("the configured 'api_key' auth provider does not manage keys")
    return provider


def _run(action: Callable[[KeyManager], Awaitable[T]]) -> T:
    return run_with_auth_provider("api_key", _key_manager, action)


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else "-"


def _table(keys: Sequence[ApiKeyInfo], now: datetime) -> str:
    header = ("ID", "NAME", "TENANT", "SCOPES", "CREATED", "EXPIRES", "REVOKED", "STATUS")
    rows = [
        (
            k.id,
            k.name,
            k.tenant or "-",
            ",".join(sorted(k.scopes)) or "-",
            _when(k.created_at),
            _when(k.expires_at),
            _when(k.revoked_at),
            k.status(now),
        )
        for k in keys
    ]
    lines = (header, *rows)
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in lines)


def _announce(issued: IssuedKey) -> None:
    info = issued.info
    click.echo(
        f"Created API key {info.id} ({info.name!r}, tenant {info.tenant or '-'}, "
        f"scopes {','.join(sorted(info.scopes)) or '-'}, expires {_when(info.expires_at)}).",
        err=True,
    )
    click.echo("Store it now: the key is shown only this once and cannot be recovered.", err=True)
    click.echo(issued.key)


@click.group("keys")
def keys() -> None:
    """Manage the API keys of the 'api_key' authenticator (header X-API-Key)."""


@keys.command("create")
@click.option("--name", required=True, help="A label for the key (who or what uses it).")
@click.option("--scopes", required=True, help="Comma-separated scopes, e.g. gim:read,gim:write ('' for none).")
@click.option("--tenant", required=True, help="The tenant the key's calls belong to.")
@click.option("--expires-in", type=Duration(), help="Lifetime, e.g. 90d, 12h, 1w2d.")
@click.option("--expires-at", type=Timestamp(), help="Expiry as ISO-8601 (UTC unless an offset is given).")
def create(name: str, scopes: str, tenant: str, expires_in: timedelta | None, expires_at: datetime | None) -> None:
    """Create a key and print it (once) on stdout."""
    expiry = _expiry(expires_in, expires_at)
    issued = _run(lambda m: m.create_key(name=name, scopes=split_scopes(scopes), tenant=tenant, expires_at=expiry))
    _announce(issued)


@keys.command("list")
@click.option("--active", is_flag=True, help="Leave out revoked keys.")
@click.option("--json", "as_json", is_flag=True, help="One JSON array instead of a table.")
def list_(active: bool, as_json: bool) -> None:
    """List keys (never their secrets)."""
    found = _run(lambda m: m.list_keys(include_revoked=not active))
    now = datetime.now(UTC)
    if as_json:
        click.echo(json.dumps([k.to_json(now) for k in found], indent=2))
    elif found:
        click.echo(_table(found, now))
    else:
        click.echo("No API keys.", err=True)


@keys.command("revoke")
@click.argument("key_id")
def revoke(key_id: str) -> None:
    """Revoke a key at once (by its id, from 'gateway keys list')."""
    info = _run(lambda m: m.revoke_key(key_id))
    click.echo(f"Revoked API key {info.id} ({info.name!r}) at {_when(info.revoked_at)}.", err=True)


@keys.command("rotate")
@click.argument("key_id")
@click.option("--grace", type=Duration(), help="Keep the old key working this long (default: retire it now).")
@click.option("--expires-in", type=Duration(), help="Lifetime of the new key (default: the old key's expiry).")
@click.option("--expires-at", type=Timestamp(), help="Expiry of the new key as ISO-8601 (default: the old key's).")
def rotate(key_id: str, grace: timedelta | None, expires_in: timedelta | None, expires_at: datetime | None) -> None:
    """Issue a replacement key (same name, tenant, scopes and expiry) and retire the old one.

    Only a live key can be rotated, once: an expired, revoked or already rotated key is refused."""
    expiry = _expiry(expires_in, expires_at)
    issued, old = _run(lambda m: m.rotate_key(key_id, grace=grace or timedelta(0), expires_at=expiry))
    retired = f"revoked at {_when(old.revoked_at)}" if old.revoked_at else f"expires at {_when(old.expires_at)}"
    click.echo(f"Old key {old.id} {retired}.", err=True)
    _announce(issued)


def register(cli: click.Group) -> None:
    """Add ``keys`` to the root ``gateway`` group."""
    cli.add_command(keys)
