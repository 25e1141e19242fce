"""Layer-1 rules for URLs and connection strings: passwords in the authority, and the hosts of data stores.

``scheme://user:password@host`` of any scheme. The password is everything between the user's colon and the
*last* ``@`` of the URL that a host follows, so reserved characters a password may hold unencoded (``& @ :
/ ? # % + =``) stay inside it: ``postgresql://admin:Tr0ub4dor&3xyz@db01…`` gives the password
``Tr0ub4dor&3xyz`` whole. ``host:8080/path@x`` is a port and a path, not a password.

The host of a database, cache, broker or directory URL (``postgresql://…@db01.acme.io:5432``) names a
deployment's infrastructure and is replaced too; public hosts of other schemes (``https://pypi.org``) stay
unless :mod:`~gateway_plugins.sanitizers.rules_internal` finds them internal. So do single-label service
names (``redis://redis:6379``), ``localhost`` and IP literals (the IP rule decides those).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway_plugins.sanitizers.engine import Candidate, Found, Rule, ScanText, View, add
from gateway_plugins.sanitizers.heuristics import is_placeholder

__all__ = ["URL_RULES", "host_rule", "is_datastore_scheme"]

_DATASTORES = frozenset(
    """postgres postgresql pgsql mysql mariadb mongodb redis rediss amqp amqps mssql sqlserver oracle cockroachdb
    clickhouse cassandra neo4j bolt couchdb couchbase memcached kafka nats mqtt mqtts ldap ldaps""".split()
)
_GENERIC_HOSTS = frozenset({"localhost", "localhost.localdomain", "host.docker.internal", "ip6-localhost"})
_NOT_PASSWORDS = frozenset({"x-oauth-basic", "x-access-token"})
_PORT_AND_PATH = re.compile(r"\d{1,5}/")
_SCHEME, _USER, _PASSWORD, _HOST = 1, 2, 3, 4

_URL = (
    r"([A-Za-z][A-Za-z0-9+.-]*)://"
    r"(?:([^\s:/@?#'\"<>`]*)(?::([^\s\"<>`]*))?@)?"
    r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)"
)


def is_datastore_scheme(scheme: str) -> bool:
    """``postgresql``, ``mysql+pymysql``, ``mongodb+srv``, ``rediss``...: a URL of a data store."""
    return scheme.lower().split("+", 1)[0] in _DATASTORES


def _named_host(host: str) -> bool:
    """A host name worth hiding: several labels, not localhost, not an IP literal (the IP rule's)."""
    lowered = host.lower()
    if "." not in lowered or lowered in _GENERIC_HOSTS or lowered.startswith("["):
        return False
    return not lowered.replace(".", "").isdigit()


@dataclass(frozen=True, eq=False)
class UrlRule(Rule):
    """One RE2 scan for URLs; each gives a password candidate (this rule) and a host candidate
    (:attr:`host`, an ``internal`` rule)."""

    host: Rule | None = None

    def collect(self, scan_text: ScanText, out: Found) -> None:
        text = scan_text.text
        for match in scan_text.matches(self.regex):
            view = View(text, match, *match.span())
            scheme = view.group(_SCHEME) or ""
            password_start, password_end = match.span(_PASSWORD)
            host_start, host_end = match.span(_HOST)
            if password_start >= 0 and _PORT_AND_PATH.match(text, password_start, password_end):
                # host:8080/path@x — no credentials: the host is what read as the user
                password_start = -1
                host_start, host_end = match.span(_USER)
            if password_start >= 0 and password_end > password_start:
                password = text[password_start:password_end]
                if not is_placeholder(password) and password not in _NOT_PASSWORDS:
                    add(out, Candidate(password_start, password_end, self))
            if self.host is not None and is_datastore_scheme(scheme) and _named_host(text[host_start:host_end]):
                add(out, Candidate(host_start, host_end, self.host))


def host_rule(kind: str) -> Rule:
    """The rule a host candidate is reported under (shared with the internal-host rule: one placeholder
    for one host wherever it appears)."""
    return Rule(kind, "internal", "INTERNAL_HOST", "", None, 0.8)


_CONNECTION_HOST = (
    r"(?i:\b(?:server|data source|host|hostname|address|addr))[ \t]*=[ \t]*(?i:tcp:)?"
    r"(?P<s>[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)+)"
)


def _in_connection_string(view: View) -> bool:
    """``Server=sql.acme.io,1433;Database=…``: a ``;``-separated list of settings around the host."""
    line = view.line_before() + view.after(64).split("\n", 1)[0]
    return ";" in line and _named_host(view.value)


URL_RULES: tuple[Rule, ...] = (
    UrlRule("url_password", "secret", "PASSWORD", _URL, None, 0.95, ("://",), host=host_rule("datastore_host")),
    Rule(
        "connection_string_host",
        "internal",
        "INTERNAL_HOST",
        _CONNECTION_HOST,
        _in_connection_string,
        0.8,
        ("server", "data source", "host", "address", "addr"),
        True,
        right=r"[\w-]",
    ),
)
"""URL credentials (secrets) and connection-string hosts."""
