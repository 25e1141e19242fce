"""Layer-1 rule for credential-shaped tokens wherever they appear, with no label or known prefix around them.

Key material outside a PEM block (``key material: MIIEowwJAiph…``) or a cloud secret quoted in an error
message (``(key: /ovhEZDUQuu2zzltM+bRoDiP0LGz85BeCpRFFTLq)``) has nothing to anchor on but its shape: a run of
base64 or base64url characters, 20 or more, drawn at random. A token is taken as random when

* it mixes lower case, upper case and digits, as 20 random characters of those alphabets almost always do;
* its characters are spread (Shannon entropy of at least 3.5 bits per character), and
* it is not made of words: split at case changes, digits and separators, its pieces hold few pairs of
  letters common in English (``Log4j2LoggerContextFactory``, ``test_user_login_Fails`` and
  ``com/google/protobuf/GeneratedMessageV3`` are identifiers).

What looks random but is not a credential stays: hex (hashes, git SHAs, addresses, UUIDs), digests with
their label (``sha512-…``, ``h1:…``, ``Content-MD5: …``), and base64 that decodes to text (cursors,
``eyJwYWdlIjogMn0=``).
"""

from __future__ import annotations

import base64
import binascii
import operator
import re
import string

from gateway_plugins.sanitizers.engine import Rule, View
from gateway_plugins.sanitizers.heuristics import classes, is_placeholder, shannon_entropy

__all__ = ["TOKEN_RULES", "looks_random"]

MIN_LENGTH = 20
_HEX = frozenset("0123456789abcdefABCDEF-")
_NO_LETTERS = str.maketrans(dict.fromkeys(string.ascii_letters))
_PRINTABLE = bytes(range(32, 127)) + b"\t\n\r"
_PIECES = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_COMMON_PAIRS = frozenset(
    """se in re er th el on or te de en le at st he et es me lf is ar al ti nt co ne an no if it nd ro tr li ed ta
    ur ra am as ng ec io na fi to il tu ex ct pe ef ri pa od ot rn ma ce ss fo si ea di la ac ve lo ge ca rt nc
    ns pr im un ad mp ha om ou po ll rr ue op ch ul rs ls va cl ut mo os pt ts ai ic ep be em rg ck of pl us ty
    oc ke ho da lu hi um wi su xt ob lt ap so gs yp ir fr sp do up ry fa ab ni tt ag bu ol bl bj id ig rm ba pp
    ee ru ow ff sh ie""".split()
)
"""The 150 commonest letter pairs inside identifier and word pieces of the Python standard library's sources
(86 % of the pairs there; computed once with the piece pattern below, case folded)."""
_DIGEST_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-", "md5-")
_DIGEST_LABELS = re.compile(
    r"(?i)(?:\b(?:sha\d*|md5|digest|hash|checksum|integrity|etag|crc32c?|h1|fingerprint)|content-md5)[\"']?\s*[:=]?\s*[\"']?\Z"
)


def _wordy(token: str, length: int) -> bool:
    """Made of words: split at case changes, digits and separators, its pieces hold many of the letter pairs
    common in code per letter. Identifiers score 0.4-0.8 (``Log4j2LoggerContextFactory`` 0.67); random
    base64 scores about 0.11 at the median, and above the threshold used here (0.40 for 20-23
    characters, 0.37 up to 31, 0.34 from 32, as its spread narrows with length) about once in 1000
    (measured on 20,000 random tokens of 20-64 characters)."""
    pieces = "|".join(_PIECES.findall(token)).lower()  # '|' keeps pairs from spanning two pieces
    common = sum(map(_COMMON_PAIRS.__contains__, map(operator.add, pieces, pieces[1:])))
    letters = len(token) - len(token.translate(_NO_LETTERS))
    threshold = 0.40 if length < 24 else 0.37 if length < 32 else 0.34
    return common >= threshold * letters


def _decodes_to_text(token: str) -> bool:
    """Valid base64 (standard or URL-safe) of mostly printable ASCII: encoded data, not key material."""
    body = token.rstrip("=")
    if len(body) % 4 == 1:
        return False
    padded = body + "=" * (-len(body) % 4)
    altchars = b"-_" if ("-" in body or "_" in body) else None
    try:
        raw = base64.b64decode(padded, altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return False
    if not raw:
        return False
    unprintable = len(raw.translate(None, _PRINTABLE))
    return unprintable <= 0.05 * len(raw) and raw.lower() != raw.upper()


def looks_random(token: str) -> bool:
    """Whether ``token`` (a run of base64/base64url characters) reads as a random credential."""
    body = token.rstrip("=")
    if len(body) < MIN_LENGTH or _HEX.issuperset(body):
        return False
    lower, upper, digit, _other = classes(body)
    if not (lower and upper and digit) or len(body.translate(_NO_LETTERS)) * 2 > len(body):
        return False  # random base64 is four-fifths letters; dates and counters are mostly digits
    if body.startswith("_Z") or _wordy(body, len(body)) or shannon_entropy(body) < 3.5 or is_placeholder(body):
        return False
    return not _decodes_to_text(token)


def _token_span(view: View) -> tuple[int, int] | None:
    """The random part of the run. A run with slashes is read part by part (a URL path such as
    ``hooks/catch/123/<token>`` keeps its words): the span goes from the first random part to the last,
    taking in the parts around them that are not words (``/`` and short pieces of a key with slashes). A
    run with no random part is taken whole when it reads as random as a whole (base64 with slashes)."""
    if view.before(1) == "\\" and view.value[:1] in ("n", "r", "t"):
        view = view.at(view.start + 1, view.end)  # ``\nMIIE…`` in a JSON string: the n is the escape's
    token = view.value
    span = _random_span(token)
    if span is None or token.lower().startswith(_DIGEST_PREFIXES) or _DIGEST_LABELS.search(view.before(40)):
        return None
    return (view.start + span[0], view.start + span[1])


def _random_span(token: str) -> tuple[int, int] | None:
    if "/" not in token:
        return (0, len(token)) if looks_random(token) else None
    parts = token.split("/")
    randoms = [index for index, part in enumerate(parts) if looks_random(part)]
    if not randoms:
        if any(_is_path_word(part) for part in parts):
            return None  # a path (usr/lib/X11, com/python/cpython/blob/<sha>/Lib): no part of it is random
        return (0, len(token)) if looks_random(token) else None
    first, last = randoms[0], randoms[-1]
    while first > 0 and not _is_path_word(parts[first - 1]):
        first -= 1
    while last + 1 < len(parts) and parts[last + 1] and not _is_path_word(parts[last + 1]):
        last += 1
    start = len("/".join(parts[:first])) + (1 if first else 0)
    return (start, len("/".join(parts[: last + 1])))


def _is_path_word(part: str) -> bool:
    """A directory or file name written as words are (``usr``, ``Lib``, ``platform``, ``cpython``): letters
    in one case style, at least half of their pairs common in code. A part of a random key seldom is."""
    if len(part) < 3 or not part.isalpha():
        return False
    if not (part.islower() or part.istitle() or (part.isupper() and len(part) <= 5)):
        return False
    lower = part.lower()
    common = sum(lower[index : index + 2] in _COMMON_PAIRS for index in range(len(lower) - 1))
    return common * 2 >= len(lower) - 1


TOKEN_RULES: tuple[Rule, ...] = (
    Rule(
        "random_token",
        "secret",
        "SECRET",
        r"[A-Za-z0-9+/_-]{20,}=*",
        None,
        0.8,
        probe=r"[A-Za-z0-9+/_-]{20}",
        left=r"\w",
        right=r"\w",
        refine=_token_span,
    ),
)
"""The rule for random-looking tokens (after every rule that knows a format, so those name the finding)."""
