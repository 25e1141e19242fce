"""Layer-1 rules for a deployment's internal identifiers: project paths and internal host names.

* Absolute paths outside the operating system's roots lose their deployment-specific part and keep the part
  that names a library, or the file name (:mod:`~gateway_plugins.sanitizers.paths`).
* Internal host names: a host under an internal suffix (``*.internal``, ``*.corp``, ``*.local``, ``*.lan``,
  ``*.intranet``, ``*.home.arpa``…), one with an internal label inside (``db01.internal.acme-corp.com``),
  or one whose first label is a numbered machine (``db01.acme-corp.com``, ``web-03.prod.acme.io``,
  ``ip-10-0-1-2.ec2.internal``). Attribute chains in code (``self.db.local``, ``threading.local()``,
  ``from app.settings.local import x``), file names and documentation domains are not hosts.
"""

from __future__ import annotations

import re

from gateway_plugins.sanitizers.engine import Rule, View
from gateway_plugins.sanitizers.paths import redacted_span

__all__ = ["INTERNAL_RULES"]

_PATH_CHARS = r"[^\s\"'<>|:*?(),;=\[\]{}!&/\\`]"
_WIN_SEP = r"(?:\\\\|\\|/)"
_WIN_INNER = r"[^\\/:*?\"<>|\r\n,;'=`]"
_WIN_LAST = r"[^\s\\/:*?\"<>|,;'()=`]"


def _path_start(view: View) -> bool:
    """A path starts a token: not the rest of a URL (``host/path``), of a relative path (``src/app``,
    ``./x``), of a placeholder (``<PATH_1>/x``) or of a Windows drive (``C:/x``)."""
    before = view.before(16)
    if not before:
        return True
    if before.endswith(("file://", "\\n", "\\r", "\\t")):
        return True  # a file URL, or an escaped line break or tab inside a JSON string
    if before[-1].isalnum() or before[-1] in "_.-/~@$>`":
        return False
    return not (before.endswith(":") and len(before) >= 2 and before[-2].isalpha())


def _posix_path(view: View) -> tuple[int, int] | None:
    span = redacted_span(view.value)
    return None if span is None else (view.start + span[0], view.start + span[1])


def _windows_path(view: View) -> tuple[int, int] | None:
    if view.before(1).isalnum():  # a non-ASCII letter (RE2's \w is ASCII)
        return None
    return _posix_path(view)


_INTERNAL_SUFFIXES = ("internal", "corp", "local", "lan", "intranet", "intra", "localdomain")
_INTERNAL_LABELS = frozenset({*_INTERNAL_SUFFIXES, "int"})
_GENERIC_TLDS = frozenset(
    """com net org io co dev app cloud ai tech biz info site online systems services solutions digital global
    network host hosting cc tv me sh""".split()
)
"""Top-level domains a host under an internal label or with a numbered name ends in (or any two-letter
country code that is not a file extension): ``com.acme.internal.Config`` and ``System.Private.CoreLib``
are code, not hosts."""
_ALLOWED_HOSTS = frozenset(
    {"metadata.google.internal", "host.docker.internal", "gateway.docker.internal", "kubernetes.docker.internal",
     "host.containers.internal", "kubernetes.default.svc.cluster.local", "cluster.local", "svc.cluster.local",
     "localhost.localdomain", "localhost.local", "compute.internal", "ec2.internal"}
)  # fmt: skip
_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = frozenset({"example", "test", "invalid", "localhost"})
_NOT_TLDS = frozenset(
    """py pyc pyi js mjs cjs ts tsx jsx go rs java kt rb php c cc cpp h hpp cs md rst txt log json yaml yml toml
    ini cfg conf lock xml html htm css scss png jpg jpeg gif svg ico pdf zip gz tgz whl exe dll so sh bat ps1
    vue svelte sql proto map env bak tmp pid sock jar war class""".split()
)
_NUMBERED_MACHINE = re.compile(r"[a-z]+(?:-[a-z]+)*-?\d{2,}\Z|ip(?:-\d{1,3}){4}\Z")
_CODE_HEADS = ("import ", "from ", "require(", "@import ")


def _internal_host(view: View) -> bool:
    host = view.value.lower()
    labels = host.split(".")
    if not _internal_name(host, labels) or host in _ALLOWED_HOSTS:
        return False
    if len(host) > 253 or any(len(label) > 63 for label in labels):
        return False
    # a call or an import, not a host
    return view.after(1) != "(" and not view.line_before().lstrip().startswith(_CODE_HEADS)


def _internal_name(host: str, labels: list[str]) -> bool:
    tld = labels[-1]
    if tld in _INTERNAL_SUFFIXES or host.endswith(".home.arpa"):
        return True
    if len(labels) < 3 or not (tld in _GENERIC_TLDS or len(tld) == 2):
        return False
    if tld in _NOT_TLDS or tld in _RESERVED_TLDS or host.endswith(_RESERVED_DOMAINS) or not tld.isalpha():
        return False
    if any(label in _INTERNAL_LABELS for label in labels[:-1]):
        return True  # db01.internal.acme-corp.com
    return _NUMBERED_MACHINE.match(labels[0]) is not None  # db01.acme-corp.com


INTERNAL_RULES: tuple[Rule, ...] = (
    Rule(
        "project_path",
        "internal",
        "PATH",
        # The character before is matched too, so that RE2 skips the inside of URLs and relative paths
        # (``host/a/b``, ``src/a``) without handing each of their slashes to Python.
        rf"(?:^|file://|\\[nrt]|[^\w.\-/~@$>`])(?P<s>~?/{_PATH_CHARS}+(?:/{_PATH_CHARS}*)*)",
        _path_start,
        0.8,
        requires=("/",),
        refine=_posix_path,
    ),
    Rule(
        "project_path",
        "internal",
        "PATH",
        rf"(?:^|[^\w])(?P<s>[A-Za-z]:{_WIN_SEP}(?:{_WIN_INNER}+{_WIN_SEP})*{_WIN_LAST}*)",
        None,
        0.8,
        requires=("\\", ":/"),
        refine=_windows_path,
    ),
    Rule(
        "internal_host",
        "internal",
        "INTERNAL_HOST",
        r"(?:^|[^\w.-])(?P<s>(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9])",
        _internal_host,
        0.75,
        probe=r"[A-Za-z0-9]\.[A-Za-z]",
        left=r"[\w.-]",
        right=r"[\w-]|\.[A-Za-z0-9]",
    ),
)
"""Project paths and internal hosts, in priority order."""
