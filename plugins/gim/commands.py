"""How a fix's commands are read: the packages an install-like command moves, and what an action acts on.

Two fixes of one cause are often written with other tools and spellings (``pip install x``, ``python -m pip
install x``, ``uv add x``, ``poetry add x``; ``apt-get install libnss3``, ``brew install nss``); two fixes of
different causes often run the same tool on different things (``pip install numba`` vs ``pip install numpy``,
``gunicorn --timeout 120`` vs ``gunicorn --workers 4``). So:

* :func:`command_packages` names each package an install-like command moves, and which way (and the extras it
  asks for, which are named after what they pull in: ``beautifulsoup4[lxml]`` is about lxml too); system package
  names (Debian, Homebrew, Alpine, Fedora, Chocolatey, winget) are read by their conventions (``libpango-1.0-0``,
  ``portaudio19-dev``, ``python3-tk``, ``poppler-utils`` are about ``pango``, ``portaudio``, ``tk``, ``poppler``);
* :func:`action_objects` is what an action acts on: its text without the program and, for an installer, its verb
  (the tool alone says nothing about the action: every Python fix may run ``pip install``); what a removing verb
  (``uninstall``) acts on is marked, since removing a package is not installing it. An extra
  (``pip install 'pandas[parquet]'``) names what it pulls in only by the extra's name, so an action installing one
  also acts on what its explanation names (:func:`installs_extra`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DOWN",
    "REMOVED",
    "UP",
    "Named",
    "action_objects",
    "command_packages",
    "installs_extra",
    "named_packages",
    "specifier_direction",
    "system_package",
]

UP, DOWN = "up", "down"
REMOVED = "~"
"""Prefix of the terms a removing action (``pip uninstall x``) acts on (see :func:`action_objects`)."""

INSTALLER = re.compile(
    r"\b(?P<tool>pip3?|python3?\s+-m\s+pip|uv\s+pip|uv|poetry|pdm|pipx|conda|mamba|npm|pnpm|yarn|apt-get|apt|brew|"
    r"dnf|yum|apk|zypper|choco|winget|gem|cargo|go)\s+(?P<verb>install|add|i|get|uninstall|remove|rm|upgrade|"
    r"update)\b(?P<args>[^\n;&|]*)",
    re.IGNORECASE,
)
_SYSTEM_TOOLS = frozenset("apt-get apt brew dnf yum apk zypper choco winget".split())
_REMOVING = frozenset("uninstall remove rm".split())
_VALUE_FLAGS = frozenset(
    "-r -c -f -i -e -t -G --requirement --constraint --find-links --index-url --extra-index-url "
    "--target --prefix --editable --platform --python-version --group --channel --source --index".split()
)
_PROSE_STOP = frozenset("and or then to with for if instead before after when which so".split())
_SPEC = re.compile(r"^(@[\w.\-]+/[\w.\-]+|[A-Za-z][\w.\-]*)(?:\[([^\]]*)\])?\s*(?:(>=|<=|==|~=|!=|<|>|@|=)\s*(\S*))?$")
_EXTRA = re.compile(r"[A-Za-z0-9]\[[\w,.\- ]+\]")
_SEGMENTS = re.compile(r"&&|\|\||[;|\n]")
_LEAD = re.compile(r"^\s*(?:(?:sudo|doas)(?:\s+-\w+)*\s+|[A-Za-z_]\w*=\S*\s+)*")
_SYSTEM_SUFFIX = re.compile(r"[-_.](?:dev|devel|utils|tools|bin|common|runtime)$")


def system_package(name: str) -> str:
    """A system package's name by its distribution's conventions: without ``lib``, the development/utility
    suffix, a ``python3-`` prefix and the soname version (``libpango-1.0-0`` is ``pango``, ``portaudio19-dev`` is
    ``portaudio``, ``libnss3`` is ``nss``, ``python3-tk`` is ``tk``)."""
    name = name.lower()
    while (stripped := _SYSTEM_SUFFIX.sub("", name)) != name:
        name = stripped
    name = re.sub(r"^python3?-(?=[a-z])", "", name)
    name = re.sub(r"^lib(?=[a-z]{2})", "", name)
    return re.sub(r"(?<=[a-z])[\d.\-_]*\d[a-z]?\d*$", "", name) or name


@dataclass(frozen=True)
class Named:
    """One package an install-like command names: its name as written, the canonical name, the extras it asks
    for, its version operator and version (``None`` without), whether the command upgrades (``-U``, ``upgrade``)
    or removes it (``uninstall``), and whether the tool is a system package manager."""

    name: str
    package: str
    extras: tuple[str, ...]
    op: str | None
    version: str | None
    upgrade: bool
    removing: bool
    system: bool
    itself: bool = False

    @property
    def direction(self) -> str | None:
        """``up`` for an upgrade or a lower bound (``>=``, ``@latest``), ``down`` for an upper bound (``<``); a
        range with both bounds (``"x>=7,<8"``) says which versions, not which way (the action's type may)."""
        op, version = self.op, self.version
        if (op == "@" and version in ("latest", "next")) or self.upgrade:
            return UP
        if op is None or op in ("@", "=") or not version:
            return None
        return specifier_direction(op + version)


def specifier_direction(spec: str) -> str | None:
    """``up`` for a lower bound (``>=1.2``), ``down`` for an upper bound (``<2``); ``None`` for a range with both
    (``>=3.13,<4`` says where the working versions lie, not which way a fix moves) or for neither."""
    bounds = [part.strip() for part in spec.split(",")]
    lower = any(b.startswith((">=", ">", "~=")) for b in bounds)
    upper = any(b.startswith(("<", "<=")) for b in bounds)
    if lower == upper:
        return None
    return UP if lower else DOWN


def named_packages(command: str, canonical: Callable[[str], str | None]) -> list[Named]:
    """Each package an install-like command names (see :class:`Named`); ``canonical`` spells a name the one way
    (:func:`gateway_plugins.gim.evidence.canonical_package`, ``None`` for a name that is no package)."""
    out: list[Named] = []
    for match in INSTALLER.finditer(command):
        args = re.findall(r"\"[^\"]+\"|'[^']+'|\S+", match.group("args"))
        verb = match.group("verb").lower()
        upgrade = verb in ("upgrade", "update") or any(a in ("-U", "--upgrade") for a in args)
        tool = match.group("tool").lower()
        system = tool in _SYSTEM_TOOLS
        skip = False
        for raw in args:
            if raw.lower() in _PROSE_STOP or raw.startswith(("(", "#")):
                break  # the command's words end, its explanation begins ("pip install x and restart")
            if skip:
                skip = False
                continue
            if raw in _VALUE_FLAGS:
                skip = True
                continue
            raw = raw.strip("'\"")
            spec = _SPEC.match(raw)
            if raw.startswith("-") or spec is None or re.search(r"\.(?:txt|toml|cfg|whl|tar\.gz|zip)$", raw):
                continue
            name, extras, op, version = spec.groups()
            package = canonical(system_package(name) if system else name)
            if package is None:
                continue
            # an extra is named after what it pulls in (beautifulsoup4[lxml]): the command is about that too
            pulled = tuple(e for e in map(canonical, (extras or "").split(",")) if e is not None and e != package)
            itself = package == canonical(tool.split()[-1].rstrip("3"))
            removing = verb in _REMOVING
            out.append(Named(name, package, pulled, op, version or None, upgrade, removing, system, itself))
    return out


def command_packages(command: str, canonical: Callable[[str], str | None]) -> list[tuple[str, str | None]]:
    """``(package, direction)`` of each package an install-like command names (and of the extras it asks for, with
    no direction); ``canonical`` as for :func:`named_packages`."""
    out: list[tuple[str, str | None]] = []
    for named in named_packages(command, canonical):
        out += [(extra, None) for extra in named.extras]
        out.append((named.package, named.direction))
    return out


def installs_extra(command: str) -> bool:
    """Whether an install-like command installs a package's extra (``pip install 'pandas[parquet]'``): what it
    pulls in is not in the command, only in the reporter's words about it."""
    return any(_EXTRA.search(match.group("args")) for match in INSTALLER.finditer(command))


def action_objects(command: str) -> tuple[str, str]:
    """What an action's command acts on: ``(installed or run-on text, removed text)``. Each shell segment loses its
    ``sudo`` and variable assignments, then an installer's tool and verb (``python -m pip install``, ``apt-get
    remove``), any other command its program (``gunicorn``, ``./gradlew``, ``git``)."""
    acted, removed = [], []
    for segment in _SEGMENTS.split(command):
        segment = _LEAD.sub("", segment)
        match = INSTALLER.search(segment)
        if match is not None:
            target = removed if match.group("verb").lower() in _REMOVING else acted
            target.append(match.group("args"))
            continue
        words = segment.split(maxsplit=1)
        acted.append(words[1] if len(words) > 1 else "")
    return "\n".join(acted), "\n".join(removed)
