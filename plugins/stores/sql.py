"""SQL text and value handling shared by the stores: placeholder translation, script splitting, migrations order."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from gateway.api import GatewayError, Migration

MIGRATIONS_TABLE = "schema_migrations"

_PYFORMAT_TOKENS = re.compile(
    r"""
      (?P<literal>
          (?<![\w$])[eE]'(?:[^'\\]|\\.|'')*'        # E'...' string (backslash escapes)
        | '(?:[^']|'')*'                            # standard string
        | "(?:[^"]|"")*"                            # quoted identifier
        | --[^\n]*                                  # line comment
        | /\*.*?\*/                                 # block comment
        | \$(?P<tag>[A-Za-z_][A-Za-z_0-9]*|)\$.*?\$(?P=tag)\$  # dollar-quoted string
      )
    | (?P<cast>::)
    | (?<![\w:]):(?P<name>[A-Za-z_][A-Za-z_0-9]*)
    | (?P<percent>%)
    """,
    re.VERBOSE | re.DOTALL,
)


class MigrationError(GatewayError):
    """The migrations given do not match the ones the database has applied, or are malformed."""


@lru_cache(maxsize=1024)
def to_pyformat(sql: str) -> str:
    """Translate ``:name`` placeholders to psycopg's ``%(name)s``.

    ``::type`` casts, string literals, quoted identifiers, comments and dollar-quoted bodies are left alone, and
    every literal ``%`` is doubled (psycopg reads ``%`` everywhere in a query that has parameters).
    """

    def replace(match: re.Match[str]) -> str:
        if match.group("literal") is not None:
            return match.group("literal").replace("%", "%%")
        if match.group("cast") is not None:
            return "::"
        if match.group("name") is not None:
            return f"%({match.group('name')})s"
        return "%%"

    return _PYFORMAT_TOKENS.sub(replace, sql)


def split_script(script: str) -> list[str]:
    """Split a script into complete SQLite statements (``;`` inside literals and trigger bodies is kept)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                statements.append(pending.strip())
            pending = ""
    if pending.strip(" \t\r\n;"):
        raise MigrationError(f"incomplete SQL statement at the end of a script: {pending.strip()[:200]!r}")
    return statements


def ordered_migrations(namespace: str, migrations: Sequence[Migration]) -> list[Migration]:
    """The migrations sorted by version, after checking that versions are positive and unique."""
    if not namespace:
        raise MigrationError("a migration namespace must not be empty")
    seen: dict[int, str] = {}
    for migration in migrations:
        if migration.version < 1:
            raise MigrationError(f"{namespace}: migration versions start at 1 (got {migration.version})")
        if migration.version in seen:
            raise MigrationError(
                f"{namespace}: migrations {seen[migration.version]!r} and {migration.name!r} share version "
                f"{migration.version}"
            )
        seen[migration.version] = migration.name
    return sorted(migrations, key=lambda m: m.version)


def check_applied(namespace: str, migration: Migration, applied_name: str) -> None:
    """Refuse to go on when the database applied a different migration under the same version."""
    if applied_name != migration.name:
        raise MigrationError(
            f"{namespace}: version {migration.version} was applied as {applied_name!r} but the code now calls it "
            f"{migration.name!r}; the database and the code disagree about the schema"
        )


def require_aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()} given to the store: pass an aware datetime (UTC)")
    return value


def to_sqlite_value(value: Any) -> Any:
    """A parameter as SQLite stores it (see the type table in :mod:`gateway_plugins.stores`)."""
    if isinstance(value, datetime):
        return require_aware(value).astimezone(UTC).isoformat(timespec="microseconds")
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def sqlite_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: to_sqlite_value(value) for key, value in (params or {}).items()}


def _timestamp(raw: bytes) -> datetime:
    parsed = datetime.fromisoformat(raw.decode())
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _naive_timestamp(raw: bytes) -> datetime:
    return datetime.fromisoformat(raw.decode())


def _boolean(raw: bytes) -> bool:
    return int(raw) != 0


def _json(raw: bytes) -> Any:
    return json.loads(raw)


def register_sqlite_converters() -> None:
    """Teach :mod:`sqlite3` to read the portable types back (for connections opened with ``PARSE_DECLTYPES``).

    The registry is process-wide; only connections that ask for declared-type parsing use it. ``TIMESTAMP``
    replaces Python's deprecated default converter, which cannot read ISO 8601 with a ``T`` or an offset.
    """
    sqlite3.register_converter("TIMESTAMPTZ", _timestamp)
    sqlite3.register_converter("TIMESTAMP", _naive_timestamp)
    sqlite3.register_converter("BOOLEAN", _boolean)
    for name in ("JSONB", "JSON"):
        sqlite3.register_converter(name, _json)
