"""Layer-1 rules for credentials with a published format (provider keys and tokens, JWTs, PEM keys, URLs).

Each pattern is anchored on the provider's documented prefix and charset and bounded on both sides
(``(?<![\\w-])`` … ``(?![\\w-])``), so ``task-runner`` or ``desk-lamp`` never look like ``sk-…`` keys; loose
shapes (OpenAI, Hugging Face, bearer tokens) additionally need the character mix and entropy of a random
token, and no rule fires on a template (``<TOKEN>``, ``${API_KEY}``, ``sk-xxxx``, ``your-api-key-here``).
"""

from __future__ import annotations

import base64
import binascii
import re

from gateway_plugins.sanitizers.engine import Locator, Rule, Validator
from gateway_plugins.sanitizers.heuristics import (
    char_classes,
    classes,
    is_placeholder,
    looks_like_secret,
    shannon_entropy,
)

__all__ = ["SECRET_RULES", "span_value"]


def span_value(match: re.Match[str]) -> str:
    """The sensitive value of a match: its first participating ``s``/``s_*`` group, else the whole match."""
    for name in match.re.groupindex:
        if (name == "s" or name.startswith("s_")) and match.start(name) >= 0:
            return match.group(name)
    return match.group(0)


def _not_placeholder(match: re.Match[str], _text: str) -> bool:
    return not is_placeholder(span_value(match))


def _random_token(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    body = value.split("-", 1)[-1] if value.startswith("sk-") else value
    lower, upper, digit, _other = classes(body)
    return lower and upper and digit and not is_placeholder(value) and shannon_entropy(body) >= 3.5


def _mixed_case(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    lower, upper, _digit, _other = classes(value)
    return lower and upper and not is_placeholder(value)


def _has_digit(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    return classes(value)[2] and not is_placeholder(value)


def _bearer(match: re.Match[str], _text: str) -> bool:
    return looks_like_secret(span_value(match), min_length=12, min_entropy=3.0)


def _basic_auth(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    _user, sep, password = decoded.partition(":")
    return bool(sep) and bool(password) and not is_placeholder(password)


def _url_password(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    return not is_placeholder(value) and value not in ("x-oauth-basic", "x-access-token")


def _long_random(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    return char_classes(value) >= 2 and shannon_entropy(value) >= 3.0 and not is_placeholder(value)


def _r(
    kind: str,
    label: str,
    pattern: str,
    validate: Validator | None = _not_placeholder,
    *,
    conf: float = 0.95,
    anchors: tuple[str, ...] = (),
    lower: bool = False,
    window: tuple[int, int] = (0, 0),
    boundary: bool = False,
    requires: tuple[str, ...] = (),
    anchored: bool = False,
    locate: Locator | None = None,
) -> Rule:
    return Rule(
        kind,
        "secret",
        label,
        re.compile(pattern),
        validate,
        conf,
        anchors,
        lower,
        window,
        boundary,
        requires,
        anchored=anchored,
        locate=locate,
    )


def _prefixed(kind: str, label: str, pattern: str, validate: Validator | None = _not_placeholder) -> Rule:
    """A token that starts with its literal prefix and stands alone (checked both sides)."""
    prefix = re.match(r"[\w-]+", pattern)
    requires = (prefix.group(0),) if prefix else ()
    return _r(kind, label, pattern, validate, boundary=True, requires=requires)


_GITLAB = r"gl(?:pat|oas|dt|rt|rtr|cbt|ptt|ft|imt|agent|soat|wt)-"
_URL_SCHEME = (
    r"(?i:\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle|"
    r"cockroachdb|clickhouse|cassandra|neo4j|couchdb|https?|ftps?|sftp|smtps?|ldaps?|ssh|git|svn|"
    r"jdbc:[a-z]+)(?:\+[a-z0-9]+)?)"
)
_URL_REST = r"://[^\s:/@'\"<>]*:(?P<s>[^\s/'\"<>]+)@(?=[\w.\[-])"
_URL_REST_RE = re.compile(_URL_REST)
_URL_SCHEME_END = re.compile(_URL_SCHEME + r"\Z")


def _url_start(text: str, hit: int, lo: int, hi: int) -> int:
    """A URL password match runs through one ``://``: it starts at the leftmost scheme ending there."""
    if _URL_REST_RE.match(text, hit, hi) is None:  # most URLs carry no ``user:password@``
        return -1
    scheme = _URL_SCHEME_END.search(text, lo, hit)
    return scheme.start() if scheme else -1


_PEM_CHARS = r"A-Za-z0-9+/=\s:,.\-"
_TOKEN_WINDOW = (0, 4096)

SECRET_RULES: tuple[Rule, ...] = (
    _r(
        "private_key",
        "PRIVATE_KEY",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nr])*"
        # The key body, up to the last character before -----END or anything else that ends it. The lazy
        # loop only stops where the body can end (at white space, a backslash, a dash): runs of other body
        # characters are taken whole (possessively), so the end test does not run at every character.
        rf"(?P<s>[A-Za-z0-9+/=](?:[A-Za-z0-9+/=:,.]++|[\s\\-])*?)(?:\s|\\[nr])*"
        rf"(?=-----END|[^{_PEM_CHARS}\\]|\\[^nr]|\Z)",
        lambda m, _t: len(span_value(m)) >= 16,
        conf=0.99,
        requires=("-----BEGIN",),
    ),
    _prefixed("aws_access_key_id", "AWS_KEY", r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)[A-Z0-9]{16}"),
    _r(
        "aws_secret_access_key",
        "AWS_SECRET",
        r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key|aws_?secret)[\"']?(?:\s*(?:[:=]|=>)\s*|[ \t]+)[\"']?"
        r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        _long_random,
        anchors=("secret",),
        lower=True,
        window=(12, 120),
    ),
    _prefixed("gcp_api_key", "GCP_KEY", r"AIza[0-9A-Za-z_-]{35}"),
    _prefixed("gcp_oauth_token", "GCP_TOKEN", r"ya29\.[0-9A-Za-z_-]{20,}"),
    _r("gcp_refresh_token", "GCP_TOKEN", r"1//0(?<![\w/]1//0)[0-9A-Za-z_-]{40,}(?![\w-])", requires=("1//0",)),
    _prefixed("gcp_client_secret", "GCP_SECRET", r"GOCSPX-[0-9A-Za-z_-]{28}"),
    _r(
        "azure_storage_key",
        "AZURE_KEY",
        r"(?i:AccountKey|SharedAccessKey|azure_?storage_?(?:account_?)?key|primary_?key|master_?key)"
        r"[\"']?\s*[=:]\s*[\"']?(?P<s>[A-Za-z0-9+/]{40,}={0,2})",
        _long_random,
        anchors=("accountkey", "sharedaccesskey", "storage", "primary", "master"),
        lower=True,
        window=(24, 300),
        requires=("key",),  # every name ends with it
    ),
    _r(
        "azure_sas_signature",
        "AZURE_SAS",
        r"[?&;](?i:sig)=(?P<s>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})",
        _long_random,
        anchors=("sig=",),
        lower=True,
        window=(1, 300),
        anchored=True,
    ),
    _r(
        "azure_client_secret",
        "AZURE_SECRET",
        r"(?<![\w~.-])(?P<s>[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?![\w~.-])",
        anchors=("Q~",),
        window=(4, 40),
    ),
    _prefixed("anthropic_api_key", "ANTHROPIC_KEY", r"sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_-]{20,}"),
    _prefixed("openai_api_key", "OPENAI_KEY", r"sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_-]{20,}", _random_token),
    _prefixed("huggingface_token", "HF_TOKEN", r"hf_[A-Za-z0-9]{30,40}", _mixed_case),
    _prefixed("huggingface_token", "HF_TOKEN", r"api_org_[A-Za-z0-9]{30,40}", _mixed_case),
    _prefixed("github_token", "GITHUB_TOKEN", r"gh[pousr]_[A-Za-z0-9]{36,251}"),
    _prefixed("github_token", "GITHUB_TOKEN", r"github_pat_[A-Za-z0-9_]{60,251}"),
    _prefixed("gitlab_token", "GITLAB_TOKEN", _GITLAB + r"[A-Za-z0-9_-]{20,}"),
    _prefixed("gitlab_token", "GITLAB_TOKEN", r"GR1348941[A-Za-z0-9_-]{20,}"),
    _prefixed("slack_token", "SLACK_TOKEN", r"xox[abposre]-[A-Za-z0-9-]{10,}", _has_digit),
    _prefixed("slack_app_token", "SLACK_TOKEN", r"xapp-\d-[A-Z0-9]{8,}-\d{6,}-[A-Za-z0-9]{32,}"),
    _r(
        "slack_webhook",
        "SLACK_WEBHOOK",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{20,})",
        requires=("hooks.slack.com",),
    ),
    _r(
        "stripe_key",
        "STRIPE_KEY",
        r"(?<![\w-])(?P<s>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}|whsec_[A-Za-z0-9+/=]{24,})(?![\w-])",
        anchors=("_live_", "_test_", "whsec_"),
        window=(2, 260),
    ),
    _prefixed("twilio_api_key", "TWILIO_KEY", r"SK[0-9a-f]{32}"),
    _prefixed("sendgrid_api_key", "SENDGRID_KEY", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _prefixed("npm_token", "NPM_TOKEN", r"npm_[A-Za-z0-9]{36}"),
    _r(
        "npm_auth_token",
        "NPM_TOKEN",
        r"_(?i:authToken|auth)\s*=\s*[\"']?(?P<s>[^\s\"']{8,})",
        anchors=("_auth",),
        lower=True,
        window=(0, 600),
        anchored=True,
    ),
    _prefixed("pypi_token", "PYPI_TOKEN", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    _prefixed("dockerhub_token", "DOCKER_TOKEN", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}"),
    _r(
        "jwt",
        "JWT",
        # the left boundary is checked after the literal ``ey``, so the window is scanned for ``ey`` first
        r"(?P<s>ey(?<![\w-]ey)[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2})(?![\w-])",
        conf=0.9,
        anchors=("eyJ", "eyA"),
        window=(0, 16384),
    ),
    _r(
        "bearer_token",
        "TOKEN",
        r"(?i:\bbearer)\s+(?P<s>[A-Za-z0-9\-._~+/]{12,}=*)(?![\w\-.~+/])",
        _bearer,
        conf=0.85,
        anchors=("bearer",),
        lower=True,
        window=_TOKEN_WINDOW,
        anchored=True,
    ),
    _r(
        "basic_auth",
        "BASIC_AUTH",
        r"(?i:\bbasic)\s+(?P<s>[A-Za-z0-9+/]{6,}={0,2})(?![\w+/=])",
        _basic_auth,
        anchors=("basic",),
        lower=True,
        window=_TOKEN_WINDOW,
        anchored=True,
    ),
    _r(
        "url_password",
        "PASSWORD",
        _URL_SCHEME + _URL_REST,
        _url_password,
        anchors=("://",),
        window=(24, 600),
        anchored=True,
        locate=_url_start,
    ),
)
"""Provider formats (public facts) in priority order: a later rule loses ties of the same span."""
