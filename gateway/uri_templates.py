"""Which URIs an RFC 6570 URI template describes, and the values of its variables in one of them.

A resource template (``gim://issues/{issue_id}/stats``, a remote server's ``files{/path*}`` or ``search{?q,limit}``)
answers ``resources/read`` for every URI it describes. Matching is the inverse of expansion and RFC 6570 does not
define it; this follows what the expressions of each operator produce:

- ``{x}``: one path segment (no ``/``, ``?`` or ``#``); ``{x,y}`` two, joined by a comma;
- ``{+x}``: any text (reserved expansion keeps ``/``); ``{#x}``: a fragment;
- ``{.x}``: a ``.``-prefixed label; ``{/x}``: a ``/``-prefixed segment, ``{/x*}`` the rest of the path;
- ``{;x}``: a ``;x=value`` path parameter;
- ``{?x,y}`` and ``{&x}``: query parameters, in any order, percent-decoded.

Every expression other than ``{x}`` and ``{+x}`` may be absent (an undefined variable expands to nothing); an
absent variable is left out of the values. Prefix modifiers (``{x:3}``) match like their variable.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["UriTemplate"]

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]*)\}")


class UriTemplate:
    """A compiled template: :meth:`match` gives a URI's variables, or None when the template does not describe it."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._names: dict[str, str] = {}
        """Regex group name -> variable name (a variable name may hold characters a group name cannot)."""
        self._query_groups: dict[str, list[str]] = {}
        """Regex group holding a query string -> the variables it may set."""
        parts: list[str] = []
        position = 0
        for expression in _EXPRESSION.finditer(template):
            parts.append(re.escape(template[position : expression.start()]))
            operator, names = expression.group(1), _names(expression.group(2))
            parts.append(self._pattern(operator, names))
            position = expression.end()
        parts.append(re.escape(template[position:]))
        self._regex = re.compile("^" + "".join(parts) + "$")

    def match(self, uri: str) -> dict[str, str] | None:
        found = self._regex.match(uri)
        if found is None:
            return None
        values: dict[str, str] = {}
        queries: list[str] = []  # the first query expression takes the whole query: parsed once, for all
        for group, value in found.groupdict().items():
            if value is None:
                continue
            if group in self._query_groups:
                queries.append(value)
            else:
                values[self._names[group]] = value
        wanted = {name for names in self._query_groups.values() for name in names}
        for query in queries:  # percent-decoded; a "+" is a plus (RFC 6570 does not write spaces as "+")
            for pair in query.split("&"):
                key, _, value = pair.partition("=")
                if unquote(key) in wanted:
                    values[unquote(key)] = unquote(value)
        return values

    def _group(self, name: str) -> str:
        group = f"v{len(self._names) + len(self._query_groups)}"
        self._names[group] = name
        return group

    def _pattern(self, operator: str, names: list[tuple[str, bool]]) -> str:
        if not names:
            return ""
        if operator in ("?", "&"):
            group = f"q{len(self._names) + len(self._query_groups)}"
            self._query_groups[group] = [name for name, _ in names]
            return rf"(?:[?&](?P<{group}>[^#]*))?"
        if operator == "":
            segment = "[^/?#]+?" if len(names) == 1 else "[^/?#,]*?"  # lazy: a later expression takes its part
            return ",".join(f"(?P<{self._group(name)}>{segment})" for name, _ in names)
        if operator == "+":
            return ",".join(f"(?P<{self._group(name)}>.*?)" for name, _ in names)
        if operator == "#":
            return rf"(?:\#(?P<{self._group(names[0][0])}>.*))?"
        if operator == ".":
            return "".join(rf"(?:\.(?P<{self._group(name)}>[^/?#.]*))?" for name, _ in names)
        if operator == "/":
            return "".join(
                rf"(?:/(?P<{self._group(name)}>{'[^?#]*?' if explode else '[^/?#]*'}))?" for name, explode in names
            )
        return "".join(  # ";"
            rf"(?:;{re.escape(name)}(?:=(?P<{self._group(name)}>[^;/?#]*))?)?" for name, _ in names
        )


def _names(varlist: str) -> list[tuple[str, bool]]:
    """``(name, explode)`` of each variable of an expression (prefix modifiers dropped)."""
    out = []
    for spec in varlist.split(","):
        spec = spec.strip()
        if spec:
            explode = spec.endswith("*")
            out.append((spec.rstrip("*").split(":", 1)[0], explode))
    return out
