"""``gateway keys`` through the real ``gateway`` command line, on a real config and SQLite store."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from gateway.api import AUTH, Principal, Unauthenticated
from gateway.cli import CliEnvironment, cli
from gateway_plugins.auth.cli import Duration, Timestamp

KEY = re.compile(r"gwk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n\n[providers]\nstore = "sqlite"\nauth = "api_key"\n',
        encoding="utf-8",
    )
    return path


def gateway(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config", str(config), "keys", *args], catch_exceptions=False)


def authenticate(config: Path, key: str) -> Principal | str:
    """What the deployment's api_key provider makes of ``key``: a principal, or the refusal reason."""

    async def main() -> Principal | str:
        async with CliEnvironment(config).running_provider(AUTH, "api_key") as auth:
            try:
                return await auth.authenticate({"X-API-Key": key})
            except Unauthenticated as exc:
                return exc.details["reason"]

    return anyio.run(main)


def create(config: Path, *extra: str) -> tuple[str, Result]:
    result = gateway(config, "create", "--name", "ci", "--scopes", "gim:read,gim:write", "--tenant", "acme", *extra)
    assert result.exit_code == 0, result.output
    return result.stdout.strip(), result


def listed(config: Path) -> list[dict[str, object]]:
    result = gateway(config, "list", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_create_prints_the_key_once_on_stdout(config: Path) -> None:
    key, result = create(config, "-v")
    assert KEY.fullmatch(key) and result.stdout == key + "\n"
    assert "cannot be recovered" in result.stderr and key not in result.stderr
    # The audit line (an info log: shown with -v) goes to stderr, stdout holds the key alone, and it carries no
    # part of the secret.
    assert "api key created" in result.stderr and key.split("_", 2)[2][:12] not in result.stderr
    _, plain = create(config)
    assert "cannot be recovered" in plain.stderr and "api key created" not in plain.stderr
    principal = authenticate(config, key)
    assert isinstance(principal, Principal)
    assert (principal.tenant, principal.scopes, principal.method) == ("acme", {"gim:read", "gim:write"}, "api_key")


def test_list_shows_keys_but_never_secrets(config: Path) -> None:
    key, _ = create(config)
    key_id, secret = key.split("_")[1], key.split("_", 2)[2]
    table = gateway(config, "list")
    assert table.exit_code == 0
    header, row = table.stdout.strip().splitlines()
    assert header.split() == ["ID", "NAME", "TENANT", "SCOPES", "CREATED", "EXPIRES", "REVOKED", "STATUS"]
    assert row.split()[:4] == [key_id, "ci", "acme", "gim:read,gim:write"] and row.split()[-1] == "active"
    [entry] = listed(config)
    assert entry["id"] == key_id and entry["scopes"] == ["gim:read", "gim:write"] and entry["revoked_at"] is None
    for output in (table.output, json.dumps(entry)):
        assert secret[:12] not in output and key not in output


def test_revoke(config: Path) -> None:
    key, _ = create(config)
    key_id = key.split("_")[1]
    result = gateway(config, "revoke", key_id)
    assert result.exit_code == 0 and f"Revoked API key {key_id}" in result.stderr
    assert authenticate(config, key) == "revoked"
    [entry] = listed(config)
    assert entry["status"] == "revoked" and entry["revoked_at"] is not None
    assert "No API keys." in gateway(config, "list", "--active").stderr


def test_expiry_options(config: Path) -> None:
    before = datetime.now(UTC)
    create(config, "--expires-in", "30d")
    create(config, "--expires-at", "2031-01-02T03:04:05+02:00")
    create(config, "--expires-at", "2031-01-02")  # no offset: UTC
    first, second, third = (datetime.fromisoformat(str(e["expires_at"])) for e in listed(config))
    assert before + timedelta(days=30) - timedelta(seconds=2) <= first <= datetime.now(UTC) + timedelta(days=30)
    assert second == datetime(2031, 1, 2, 1, 4, 5, tzinfo=UTC)
    assert third == datetime(2031, 1, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--expires-in", "30d", "--expires-at", "2031-01-01"], 2, "not both"),
        (["--expires-in", "30x"], 2, "not a duration"),
        (["--expires-in", "0d"], 2, "more than 0s"),
        (["--expires-at", "next tuesday"], 2, "not an ISO-8601"),
        (["--expires-at", "2001-01-01T00:00:00Z"], 1, "the expiry is in the past"),
        (["--scopes", 'gim:read,quo"te'], 1, "invalid scope"),
        (["--name", ""], 1, "key name"),
    ],
)
def test_create_refuses_bad_input(config: Path, args: list[str], code: int, message: str) -> None:
    base = {"--name": "ci", "--scopes": "a", "--tenant": "t"}
    for name, value in zip(args[::2], args[1::2], strict=True):
        base[name] = value
    result = gateway(config, "create", *[part for pair in base.items() for part in pair])
    assert result.exit_code == code, result.output
    assert message in result.output
    if code:
        assert listed(config) == []


def test_a_missing_required_option(config: Path) -> None:
    result = gateway(config, "create", "--name", "ci", "--scopes", "a")
    assert result.exit_code == 2 and "--tenant" in result.output


def test_revoke_unknown_or_invalid_ids(config: Path) -> None:
    assert "no API key with id" in gateway(config, "revoke", "0123456789abcdef").output
    result = gateway(config, "revoke", "not-an-id")
    assert result.exit_code == 1 and "16 hexadecimal digits" in result.output


def test_rotate_with_grace(config: Path) -> None:
    old, _ = create(config)
    result = gateway(config, "rotate", old.split("_")[1], "--grace", "1h", "--expires-in", "90d")
    assert result.exit_code == 0, result.output
    new = result.stdout.strip()
    assert KEY.fullmatch(new) and new != old and "Old key" in result.stderr and "expires at" in result.stderr
    assert isinstance(authenticate(config, old), Principal)  # still inside its grace period
    assert isinstance(authenticate(config, new), Principal)
    entries = {e["id"]: e for e in listed(config)}
    assert entries[new.split("_")[1]]["name"] == "ci" and entries[new.split("_")[1]]["tenant"] == "acme"


def test_rotate_keeps_the_expiry_and_refuses_a_rotated_key(config: Path) -> None:
    old, _ = create(config, "--expires-in", "30d")
    old_id = old.split("_")[1]
    expiry = listed(config)[0]["expires_at"]
    result = gateway(config, "rotate", old_id, "--grace", "1h")
    assert result.exit_code == 0, result.output
    entries = {e["id"]: e for e in listed(config)}
    new_id = result.stdout.strip().split("_")[1]
    assert expiry is not None and entries[new_id]["expires_at"] == expiry  # not a key that never expires
    assert entries[old_id]["replaced_by"] == new_id and entries[old_id]["expires_at"] < expiry
    again = gateway(config, "rotate", old_id)
    assert again.exit_code == 1 and "already rotated" in again.output and again.stdout == ""
    assert len(listed(config)) == 2


def test_parameter_types() -> None:
    assert Duration().convert("1w2d3h4m5s", None, None) == timedelta(days=9, hours=3, minutes=4, seconds=5)
    assert Duration().convert("90D", None, None) == timedelta(days=90)
    assert Timestamp().convert("2030-05-06T07:08:09Z", None, None) == datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)


def test_a_store_file_that_is_no_database_is_one_error_line_naming_it(config: Path, tmp_path: Path) -> None:
    create(config)  # the store exists
    store = tmp_path / "data" / "providers" / "store" / "sqlite" / "gateway.sqlite3"
    store.write_bytes(bytes(range(256)) * 32)  # damaged beyond recognition
    result = CliRunner().invoke(cli, ["--config", str(config), "keys", "list"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{store} is not an SQLite database, or it is damaged" in result.output
