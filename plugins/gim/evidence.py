"""Specific evidence about a report's failure, cause and fix, beyond embeddings (pure functions).

Two reports whose errors read alike can still have different causes: the same ``ModuleNotFoundError`` for a
package that is not installed and for a module that a new major version removed; ``cannot import name X`` for two
different removed names; one fix that upgrades a package and one that pins it below a version. Embeddings blur
exactly these details. :func:`extract_facts` pulls them out so that :mod:`gateway_plugins.gim.agreement` can
check that a submission and a master do not contradict each other:

* **failure lines** — each line that states the failure, as a *template* (lower-cased, the quoted values and
  path-like tokens replaced by a slot) and the *values* that filled its slots (``'soft_unicode'``,
  ``'markupsafe'``, ``node-fetch/src/index.js``);
* **subjects** — the packages the root cause and the fix are about: what the fix's commands install, upgrade or
  remove (under any common package manager's spelling: :mod:`gateway_plugins.gim.commands`), the keys of its
  working versions, and names followed by a version in the prose (``NumPy 1.24``,
  ``torch>=2``);
* **directions** — per package, whether the fix moves it ``up`` (upgrade, ``>=``, ``-U``, ``@latest``) or
  ``down`` (downgrade, ``<``, ``pin X<``), from the action types, the version specifiers and explicit verbs;
* **explained** / **mentioned** — the identifier tokens of the root cause and fix (what the reporter *explained*),
  and of everything the report says (error included).

Nothing here knows particular libraries beyond a few well-known distribution/import name pairs (``scikit-learn``
is ``sklearn``); every rule is about how errors, version specifiers and install commands are written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from gateway_plugins.gim.commands import DOWN, UP, command_packages, specifier_direction
from gateway_plugins.gim.models import FixBundle
from gateway_plugins.gim.signatures import ErrorSignature, normalise_error

__all__ = ["Facts", "FailureLine", "canonical_package", "extract_facts", "identifier_tokens"]

_ERROR_CHARS = 4000
"""How much of an error is read for failure lines and traced libraries."""

_QUOTED = re.compile(r"'([^'\n]{1,120})'|\"([^\"\n]{1,120})\"")
# A path (two segments or more) where a run of path characters starts, or a file name with a source extension. A
# run of name characters that is not followed by such an extension is matched whole as ``skip`` (and kept): the
# scan then resumes after it instead of trying the run again from each of its word boundaries, which made a long
# ``a-a-a-...`` quadratic. tests/plugins/gim/test_evidence_linear.py checks it against the form it replaced.
_PATHLIKE = re.compile(
    r"(?<![\w@/.-])(?:@?[\w.-]++/)+[\w.-]++"
    r"|\b[\w-]++(?:\.(?:py|pyx|js|mjs|cjs|ts|tsx|jsx|so|dll|java|go|rs)\b|(?P<skip>))"
)
_SOURCE_PATH = re.compile(r"(?<![\w.@/-])(@?[\w.-]+)/[\w./@-]*\.(?:py|pyx|js|mjs|cjs|ts|tsx|jsx|java|go|rs|rb)\b")
_SYSTEM_LIBRARY = re.compile(r"^lib(?!rar|ert)(?P<name>[a-z]{3,})(?:\d[a-z0-9]*)?$")
"""A system library's file or package name (``libxkbcommon0``, ``libnss3``, ``libpango``), not ``library``."""
_FILLER = re.compile(r"[^a-z<>]+")
_IDENT = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    "the and for from with not this that into has have was were are its use used using when then than can cannot "
    "does did you your our their which while will also only after before error errors module object attribute "
    "name file line value type none true false src lib dist index main init self".split()
)

_VERSIONED = re.compile(
    r"(?<![\w.\-/])(?P<name>[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9])(?:\s*(?P<op>>=|<=|==|~=|<|>)\s*|\s+v?)"
    r"(?P<version>\d+(?P<dotted>(?:\.(?:\d+|x))+)?)\b"
)
_NOT_PACKAGES = frozenset(
    "line lines version versions error errno code codes step steps port status http https release releases "
    "since in on at of to from and or than before after above below gpu gpus cuda capability sm compute "
    "pid process processes worker workers rank epoch epochs iteration iterations batch size limit max min "
    "api v level chapter part page total tokens token os windows macos linux ubuntu debian fedora centos alpine "
    "issue issues pr pull commit ecma es module modules class file files day days hours seconds am pm x major "
    "minor patch pep cve rfc january february march april may june july august september october november "
    "december jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_ALIASES = {
    "pytorch": "torch",
    "scikit-learn": "sklearn",
    "opencv": "cv2",
    "opencv-contrib": "cv2",
    "pillow": "pil",
    "pyyaml": "yaml",
    "beautifulsoup4": "bs4",
    "tf": "tensorflow",
    "nodejs": "node",
    "node-js": "node",
    "cpython": "python",
    "py": "python",
    "golang": "go",
    "jdk": "java",
    "jre": "java",
    "openjdk": "java",
}
_SUFFIXES = ("-python", "-binary", "-headless", "-gpu", "-cpu", "-full", "-contrib")
_UP_WORDS = r"upgrad\w*|updat\w*|bump\w*"
_DOWN_WORDS = r"downgrad\w*|roll\w*\s+back|revert\w*\s+to"
_VERB_PACKAGE = re.compile(
    rf"\b(?P<verb>{_UP_WORDS}|{_DOWN_WORDS})\s+(?:to\s+|the\s+|an?\s+)*(?P<pkg>@?[A-Za-z][\w.\-/]*)", re.I
)
_PIN_BELOW = re.compile(r"\bpin\w*\s+(?:it\s+)?(?:to\s+)?(?P<pkg>@?[A-Za-z][\w.\-/]*?)\s*(?P<op><=?)\s*\d", re.I)
_TOO = re.compile(
    r"(?<![\w.\-/@])(?P<pkg>@?[A-Za-z][\w.\-/]*)\s+(?:\S+\s+){0,2}?(?:is|was|are)\s+too\s+(?P<how>old|new)\b", re.I
)


@dataclass(frozen=True)
class FailureLine:
    """A line that states the failure: its template and the values in its slots, in order."""

    template: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Facts:
    """The specific evidence of one report (or of a master and its items)."""

    failure_lines: tuple[FailureLine, ...] = ()
    components: frozenset[str] = frozenset()
    """Libraries the traceback passes through (``pandas`` for a frame in ``pandas/io/sql.py``)."""
    subjects: frozenset[str] = frozenset()
    directions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    explained: frozenset[str] = frozenset()
    """Identifier tokens of the root cause and the fix."""
    mentioned: frozenset[str] = frozenset()
    """Identifier tokens of everything the report says (error, root cause, fix)."""

    def merged_with(self, other: Facts) -> Facts:
        """The evidence of several items of one master: lines, tokens and directions together."""
        directions = {
            p: self.directions.get(p, frozenset()) | other.directions.get(p, frozenset())
            for p in set(self.directions) | set(other.directions)
        }
        return Facts(
            failure_lines=tuple(dict.fromkeys(self.failure_lines + other.failure_lines)),
            components=self.components | other.components,
            subjects=self.subjects | other.subjects,
            directions=directions,
            explained=self.explained | other.explained,
            mentioned=self.mentioned | other.mentioned,
        )


def identifier_tokens(text: str) -> set[str]:
    """Lower-cased identifiers of ``text`` and their dotted/underscored parts (``torch._six`` gives ``torch``,
    ``_six``, ``six``); ``-`` counts as ``_`` so that ``langchain-community`` meets ``langchain_community``. A
    system library's name also gives its bare name (``libnss3`` and ``libnss3.so`` give ``nss``, as the package
    ``libnss3`` does: :func:`gateway_plugins.gim.commands.system_package`)."""
    lowered = text.lower().replace("-", "_")
    out: set[str] = set()
    for token in _IDENT.findall(lowered):
        for part in {token, token.strip("_"), *token.split("_")}:
            if len(part) >= 3 and part not in _STOP and not part.isdigit():
                out.add(part)
                if (library := _SYSTEM_LIBRARY.match(part)) is not None:
                    out.add(library.group("name"))
    return out


def canonical_package(name: str) -> str | None:
    """A package name in one spelling (``PyTorch`` and ``torch``, ``opencv-python-headless`` and ``cv2``), or
    ``None`` when ``name`` is not package-like."""
    name = name.strip().strip("'\"`()[],:;").lower()
    if name.startswith("@") and "/" in name:  # npm scope: keep it
        scope, _, rest = name.partition("/")
        name = f"{scope}/{rest.split('/')[0]}"
    else:
        name = name.split("/")[0]
    name = re.sub(r"[_.]", "-", name).strip("-")
    stripped = True
    while stripped:  # opencv-python-headless -> opencv-python -> opencv
        stripped = False
        for suffix in _SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix) + 1:
                name, stripped = name[: -len(suffix)], True
    name = name.removeprefix("python-") if name.startswith("python-") and len(name) > 8 else name
    name = _ALIASES.get(name, name)
    if len(name) < 2 or name in _NOT_PACKAGES or name.isdigit() or not re.match(r"^@?[a-z]", name):
        return None
    return name


def _failure_lines(signature: ErrorSignature) -> tuple[FailureLine, ...]:
    out = []
    for line in signature.key_lines:
        values: list[str] = []

        def slot(match: re.Match[str], values: list[str] = values) -> str:
            groups = [g for g in match.groups() if g]
            values.append((groups[0] if groups else match.group(0)).strip().lower())
            return " <> "

        def path_slot(match: re.Match[str], slot: Callable[[re.Match[str]], str] = slot) -> str:
            return match.group(0) if match.group("skip") is not None else slot(match)

        templated = _QUOTED.sub(slot, line)
        templated = _PATHLIKE.sub(path_slot, templated)
        template = _FILLER.sub(" ", templated.lower()).strip()
        if values and len(template) >= 8:
            out.append(FailureLine(template, tuple(values)))
    return tuple(out)


def _components(signature: ErrorSignature) -> frozenset[str]:
    """The libraries of the source files the error names: the first segment of each library-relative path (the
    normaliser keeps ``pandas/io/sql.py`` of a site-packages path, and only the file name of the user's files);
    the signature may come from a raw error or from an already normalised one."""
    out = set()
    paths = [*signature.components, *(m.group(0) for m in _SOURCE_PATH.finditer(signature.text))]
    for first in (path.split("/")[0] for path in paths if "/" in path):
        package = canonical_package(first)
        if package is not None:
            out.add(package)
    return frozenset(out)


def _prose_directions(text: str, known: set[str]) -> list[tuple[str, str]]:
    """Explicit moves stated in prose: ``upgrade X``, ``downgrade X``, ``pin X<v``, ``X is too old``."""
    out: list[tuple[str, str]] = []
    for match in _VERB_PACKAGE.finditer(text):
        package = canonical_package(match.group("pkg"))
        if package in known:
            out.append((package, DOWN if re.match(_DOWN_WORDS, match.group("verb"), re.I) else UP))
    for match in _PIN_BELOW.finditer(text):
        package = canonical_package(match.group("pkg"))
        if package is not None:
            out.append((package, DOWN))
    for match in _TOO.finditer(text):
        package = canonical_package(match.group("pkg"))
        if package in known:
            out.append((package, UP if match.group("how").lower() == "old" else DOWN))
    return out


def _versioned_names(text: str) -> set[str]:
    """Names followed by a version (``NumPy 1.24``, ``torch>=2``, ``Pillow 10``): the packages prose is about. A
    bare integer counts only after a capitalised name or an operator (``holds 17 GiB`` names no package)."""
    out: set[str] = set()
    for match in _VERSIONED.finditer(text):
        name = match.group("name")
        if not (match.group("dotted") or match.group("op") or name[0].isupper()):
            continue
        package = canonical_package(name)
        if package is not None:
            out.add(package)
    return out


def extract_facts(error: str, root_cause: str, fix: FixBundle | None, *, extra_text: Iterable[str] = ()) -> Facts:
    """The facts of one report: its error (raw or normalised), root cause and fix. ``extra_text`` adds to what the
    report *mentions* (other texts stored with it)."""
    subjects: set[str] = set()
    moves: list[tuple[str, str]] = []
    # the failure lines come first in a normalised error; the cap bounds the work on pathological input
    signature = normalise_error(error[:_ERROR_CHARS])
    prose = [root_cause]
    if fix is not None:
        for action in fix.env_actions:
            for package, direction in command_packages(action.command, canonical_package):
                subjects.add(package)
                if direction is None:
                    direction = {"upgrade": UP, "downgrade": DOWN}.get(action.type)
                if direction is not None:
                    moves.append((package, direction))
            prose.append(action.explanation)
        for name, spec in fix.constraints.working_versions.items():
            package = canonical_package(name)
            if package is not None:
                subjects.add(package)
                direction = specifier_direction(spec)  # its fix's commands may give one
                if direction is not None:
                    moves.append((package, direction))
        if fix.code_fix:
            prose.append(fix.code_fix)
    prose_text = "\n".join(prose)
    subjects |= _versioned_names(prose_text)
    structured = {package for package, _ in moves}
    # prose is descriptive ("upgrading torch makes it worse"): it only speaks for packages the fix's commands,
    # action types and working versions leave without a direction
    moves += [(p, d) for p, d in _prose_directions(prose_text, subjects) if p not in structured]
    directions: dict[str, set[str]] = {}
    for package, direction in moves:
        directions.setdefault(package, set()).add(direction)
    fix_text = "" if fix is None else "\n".join(a.command for a in fix.env_actions)
    explained = identifier_tokens(prose_text + "\n" + fix_text)
    mentioned = explained | identifier_tokens(error) | set().union(*(identifier_tokens(t) for t in extra_text))
    return Facts(
        failure_lines=_failure_lines(signature),
        components=_components(signature),
        subjects=frozenset(subjects),
        directions={p: frozenset(d) for p, d in directions.items()},
        explained=frozenset(explained),
        mentioned=frozenset(mentioned),
    )
