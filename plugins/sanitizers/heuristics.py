"""Validators shared by the sanitizer layers: entropy, placeholders, Luhn, IP ranges, hashes and versions.

Every check here answers one question about a candidate value, so the rules that use them stay declarative.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter
from functools import lru_cache

__all__ = [
    "GENERIC_ACCOUNTS",
    "char_classes",
    "classes",
    "is_hash_like",
    "is_identifying_ip",
    "is_placeholder",
    "is_reference",
    "is_template",
    "looks_like_secret",
    "luhn_valid",
    "shannon_entropy",
]

_PLACEHOLDER_WORDS = frozenset(
    {
        "your", "yours", "example", "examples", "placeholder", "changeme", "redacted", "dummy", "sample",
        "fake", "replace", "replaceme", "insert", "here", "todo", "tbd", "fixme", "xxx", "none", "null", "nil",
        "undefined", "empty", "notset", "unset", "mask", "masked", "hidden", "omitted", "removed", "censored",
    }
)  # fmt: skip
_PLACEHOLDER_VALUES = frozenset(
    {
        "password", "passwd", "pass", "secret", "token", "key", "apikey", "api_key", "api-key", "test", "testing",
        "string", "str", "value", "true", "false", "bearer", "basic", "required", "optional", "invalid",
        "missing", "expired", "revoked", "default", "username", "pwd", "auth", "foo", "bar", "baz", "foobar",
        "env", "environ", "getenv", "os", "self", "this",
    }
)  # fmt: skip
_TEMPLATE = re.compile(
    r"""^(?:<[^<>]*>|\$\{[^}]*\}|\{\{[^}]*\}\}|\{[^{}]*\}|\$\([^)]*\)|%\(?[A-Za-z_][\w]*\)?s?%?|\$[A-Za-z_]\w*
        |\[[^\]]*\]|__[A-Z0-9_]+__|@[A-Za-z_]\w*@|\*+|[xX]{3,}|[•·.#-]{3,})$""",
    re.VERBOSE,
)
_MASK = re.compile(r"^(?P<prefix>[\w-]{0,12}?)[*xX•#.]{4,}(?P<suffix>\w{0,6})$")
_SEPARATORS = re.compile(r"[-_.\s]")
_JOINED_PREFIXES = ("your", "changeme", "replaceme", "insert", "placeholder", "dummy", "fake")
_JOINED_SUFFIXES = ("here", "placeholder", "changeme")
_JOINED_FIRSTS = frozenset(prefix[0] for prefix in _JOINED_PREFIXES)
_JOINED_LASTS = frozenset(suffix[-1] for suffix in _JOINED_SUFFIXES)
_MASK_CHARS = "*xX•#."
_SPLIT = re.compile(r"[-_.\s/:]+|(?<=[a-z])(?=[A-Z])")
_PLACEHOLDER_HINTS = tuple(w for w in _PLACEHOLDER_WORDS if not any(o != w and o in w for o in _PLACEHOLDER_WORDS))
"""A placeholder word can only be a part of a value whose lower case contains it; these decide (``yours``
contains ``your``) whether splitting the value is worth it."""

GENERIC_ACCOUNTS = frozenset(
    {
        "root", "user", "users", "runner", "ubuntu", "ec2-user", "admin", "administrator", "vagrant", "circleci",
        "jenkins", "travis", "node", "app", "www-data", "docker", "public", "shared", "default", "all users",
        "default user", "guest", "build", "builder", "buildbot", "gitlab-runner", "vscode", "codespace",
        "codespaces", "runneradmin", "me", "you", "username", "your-name", "yourname", "name", "someone",
        "somebody", "developer", "dev", "nobody", "pi", "debian", "centos", "fedora", "alpine", "oracle",
        "postgres", "mysql", "git", "linuxbrew", "home", "test", "tester", "travis-ci", "appveyor", "sandbox",
    }
)  # fmt: skip
"""Account names every machine of a kind shares (CI runners, images, containers): not personal data."""

_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+){1,3}(?:[-+._]?[0-9A-Za-z.]+)?$")
_IDENT_CHAIN = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:\(\)|\[\])?$")
_REFERENCE_PREFIXES = (
    "os.environ", "os.getenv", "process.env", "env.", "env:", "settings.", "config.", "self.", "this.",
    "cfg.", "conf.", "secrets.", "vault:", "ssm:", "arn:aws:secretsmanager", "import.meta.env", "getenv(",
    "system.getenv", "environment.getenvironmentvariable", "args.", "options.", "opts.", "params.", "request.",
    "req.", "ctx.", "context.",
)  # fmt: skip
_RESERVED = frozenset(
    {
        "none", "null", "nil", "undefined", "true", "false", "str", "string", "int", "bool", "bytes", "optional",
        "secretstr", "field", "any", "object", "new", "function", "lambda", "await", "async", "return", "if",
        "else", "void", "nan", "required", "os", "getpass", "input", "prompt", "env", "self", "this", "ref",
    }
)  # fmt: skip


_ASCII_DIGIT = re.compile(r"[0-9]")


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value`` (0.0 for the empty string)."""
    if not value:
        return 0.0
    length = len(value)
    log2 = math.log2
    return -sum([n / length * log2(n / length) for n in Counter(value).values()])


def classes(value: str) -> tuple[bool, bool, bool, bool]:
    """Whether ``value`` has lower-case letters, upper-case letters, digits, and any other character."""
    if value.isascii():  # the common case, answered by C loops: casing changes only letters
        return (
            value != value.upper(),
            value != value.lower(),
            _ASCII_DIGIT.search(value) is not None,
            bool(value) and not value.isalnum(),
        )
    lower = upper = digit = other = False
    for ch in value:
        if ch.islower():
            lower = True
        elif ch.isupper():
            upper = True
        elif ch.isdigit():
            digit = True
        else:
            other = True
    return lower, upper, digit, other


def char_classes(value: str) -> int:
    """How many of lower case, upper case, digits and other characters ``value`` uses."""
    return sum(classes(value))


def is_placeholder(value: str) -> bool:
    """True for template and documentation values: ``<TOKEN>``, ``${API_KEY}``, ``your-api-key-here``, ``xxx``,
    ``changeme``, ``sk-xxxx…``, ``********``, an empty string, or a bare word such as ``password``."""
    v = value.strip().strip("\"'`")
    if len(v) < 3:
        return True
    lower = v.lower()
    if _at_most_two_characters(lower) or "example" in lower or lower in _PLACEHOLDER_VALUES:
        return True
    if _TEMPLATE.match(v) or _masked(v) or v.endswith(("...", "\u2026")) or _joined_affix(lower):
        return True
    if not any(map(lower.__contains__, _PLACEHOLDER_HINTS)):
        return False
    return any(part.lower() in _PLACEHOLDER_WORDS for part in _SPLIT.split(v) if part)


def is_template(value: str) -> bool:
    """A template or documentation value (``<user>``, ``${USER}``, ``your.name``, ``xxx``, ``example``), but
    not a mere short or common word: the test for parts of larger values (an e-mail's local part)."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    lower = v.lower()
    return bool(_TEMPLATE.match(v)) or "example" in lower or _masked(v) or _joined_affix(lower)


def _masked(value: str) -> bool:
    """``sk-****``, ``AKIA••••1234``: a short prefix, four or more mask characters, a short suffix."""
    if len(value) >= 20 and value[12] not in _MASK_CHARS:
        return False  # the run starts by index 12 and ends 6 (7 with a final newline) from the end: past 12
    return _MASK.match(value) is not None


def _joined_affix(lower: str) -> bool:
    """``your-api-key``, ``api_key_here``: a placeholder word opens or closes the value, separators aside."""
    first, last = lower[0], lower[-1]
    if not (
        first in _JOINED_FIRSTS
        or last in _JOINED_LASTS
        or first in "-_."
        or last in "-_."
        or first.isspace()
        or last.isspace()
    ):
        return False  # the value's own first and last characters are kept by the join, and fit no word
    joined = _SEPARATORS.sub("", lower)
    return joined.startswith(_JOINED_PREFIXES) or joined.endswith(_JOINED_SUFFIXES)


def _at_most_two_characters(value: str) -> bool:
    """One distinct character (``xxx``), or two in a value of six or more (``ababab``, ``x-x-x-x``); the value
    has at least three characters."""
    if value[0] != value[1] != value[2] != value[0]:
        return False
    rest = value.replace(value[0], "")
    return not rest or (len(value) >= 6 and not rest.replace(rest[0], ""))


def is_reference(value: str, key: str = "") -> bool:
    """True when an unquoted assignment value names something instead of being a literal: a variable, an
    attribute chain, a call, an environment lookup, a reserved word, or the key's own name (``api_key=api_key``)."""
    v = value.strip()
    lower = v.lower()
    if not v or lower in _RESERVED or lower.startswith(_REFERENCE_PREFIXES):
        return True
    if v.startswith(("$", "%", "@", "<", "{", "(", "[", "&", "*")):
        return True
    if not _IDENT_CHAIN.match(v.rstrip("(),;")):
        return False
    if "." in v or "(" in v or "::" in v or "->" in v:
        return True  # attribute chain or call
    if v.isupper() and "_" in v:
        return True  # a CONSTANT_NAME
    key_words = {w for w in re.split(r"[^a-z]+", key.lower()) if len(w) > 2}
    value_words = {w for w in re.split(r"[^a-z]+", lower) if len(w) > 2}
    return bool(key_words & value_words)


def looks_like_secret(value: str, *, min_length: int = 16, min_entropy: float = 3.0) -> bool:
    """A random-looking token: long enough, several character classes, high Shannon entropy, not a template."""
    if len(value) < min_length or is_placeholder(value):
        return False
    if char_classes(value) < 2:
        return False
    return shannon_entropy(value) >= min_entropy


def is_hash_like(value: str) -> bool:
    """Hex digests (MD5/SHA-1/git SHA/SHA-256/SHA-512), UUIDs and ``sha256:``-style digests."""
    v = value.split(":", 1)[1] if value.lower().startswith(("sha1:", "sha256:", "sha512:", "md5:")) else value
    if _UUID.match(v):
        return True
    return bool(_HEX.match(v)) and len(v) in (7, 8, 10, 12, 32, 40, 56, 64, 96, 128) and v == v.lower()


def is_version(value: str) -> bool:
    """A version string: ``1.26.4``, ``v2.0.0-rc.1``, ``3.11.7+local``."""
    return bool(_VERSION.match(value))


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a string of digits."""
    total = 0
    for index, ch in enumerate(reversed(digits)):
        n = ord(ch) - 48
        if index % 2:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


_CARD_PREFIXES = re.compile(
    r"^(?:4\d{12}(?:\d{3}){0,2}|5[1-5]\d{14}|2(?:2[2-9][1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)\d{12}"
    r"|3[47]\d{13}|6(?:011|5\d\d|4[4-9]\d)\d{12,15}|35(?:2[89]|[3-8]\d)\d{12,15}|3(?:0[0-5]|[68]\d)\d{11,16}"
    r"|62\d{14,17})$"
)


def is_card_number(digits: str) -> bool:
    """A payment card number: a known issuer prefix and length (Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay) and a valid Luhn checksum."""
    return bool(_CARD_PREFIXES.match(digits)) and luhn_valid(digits)


_WELL_KNOWN_PUBLIC = frozenset(
    {"8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112", "208.67.222.222", "208.67.220.220"}
)
_DOCUMENTATION_V6 = ipaddress.ip_network("2001:db8::/32")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


@lru_cache(maxsize=4096)
def is_identifying_ip(value: str) -> bool:
    """True for an address that points at someone's machine or network: a globally routable unicast address
    (not a well-known public resolver), or a private one (RFC 1918, CGNAT, IPv6 unique-local), which maps
    a deployment's internal network.

    Loopback, unspecified, link-local (169.254.169.254 is every cloud's metadata service), documentation
    (TEST-NET-1/2/3, 2001:db8::/32), benchmarking, multicast and reserved addresses are the same for
    everyone and stay.
    """
    if len(value) > 45:  # longer than any textual IP address: do not hand a huge string to the parser
        return False
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return False
    if address.is_multicast or address.is_loopback or address.is_link_local or address.is_unspecified:
        return False
    if address.version == 4 and value.startswith("0."):
        return False  # 0.0.0.0/8: "this network", the same everywhere
    if value in _WELL_KNOWN_PUBLIC:
        return False
    if address.version == 6 and address in _DOCUMENTATION_V6:
        return False
    if address.is_global:
        return True
    if address.version == 4 and address in _CGNAT:
        return True
    return address.is_private and not address.is_reserved and not _is_documentation(address)


_SHARED_V4 = tuple(
    ipaddress.ip_network(net) for net in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "198.18.0.0/15")
)
"""Documentation and benchmarking ranges: private to no one."""


def _is_documentation(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return address.version == 4 and any(address in net for net in _SHARED_V4)
