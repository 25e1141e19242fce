"""Layer-1 rules for credentials with a published format (provider keys and tokens, JWTs, PEM keys).

Each pattern is an RE2 expression anchored on the provider's documented prefix and charset; the span must
not touch a word character or ``-`` on either side (checked in Python: RE2 has no look-arounds), so
``task-runner`` or ``desk-lamp`` never look like ``sk-…`` keys. Loose shapes (OpenAI, Hugging Face, bearer
tokens) additionally need the character mix and entropy of a random token, and no rule fires on a template
(``<TOKEN>``, ``${API_KEY}``, ``sk-xxxx``, ``your-api-key-here``).
"""

from __future__ import annotations

import base64
import binascii
import re

from gateway_plugins.sanitizers.engine import Refiner, Rule, Validator, View
from gateway_plugins.sanitizers.heuristics import (
    char_classes,
    classes,
    is_placeholder,
    looks_like_secret,
    shannon_entropy,
)

__all__ = ["SECRET_RULES", "not_placeholder"]


def not_placeholder(view: View) -> bool:
    return not is_placeholder(view.value)


def _random_token(view: View) -> bool:
    value = view.value
    body = value.split("-", 1)[-1] if value.startswith("sk-") else value
    lower, upper, digit, _other = classes(body)
    return lower and upper and digit and not is_placeholder(value) and shannon_entropy(body) >= 3.5


def _mixed_case(view: View) -> bool:
    value = view.value
    lower, upper, _digit, _other = classes(value)
    return lower and upper and not is_placeholder(value)


def _has_digit(view: View) -> bool:
    value = view.value
    return classes(value)[2] and not is_placeholder(value)


def _encoded_private_key(view: View) -> bool:
    """A base64 run that decodes to a PEM private key (kubeconfig ``client-key-data``, Helm values, CI variables);
    an encoded certificate, which is public, is left alone. Only the head is decoded: the header is in it."""
    head = "".join(view.value[:200].split())[:96]  # the lines it wraps onto, joined
    head = head[: len(head) // 4 * 4]
    try:
        return b"PRIVATE KEY-----" in base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return False


def _whole_lines(view: View) -> tuple[int, int] | None:
    """The encoded key without a last line the pattern only began (``next_key`` of the YAML line after the key
    would match as ``next``): a wrapped line is base64 to its end."""
    value = view.value
    cut = value.rfind("\n")
    if cut >= 0 and view.after(1) not in ("", "\n", "\r", " ", "\t"):
        value = value[:cut].rstrip("\r")
    return view.start, view.start + len(value)


_HEADER_BEFORE = re.compile(
    r"(?:^|[^\w.-])(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:[a-z][a-z0-9-]{1,30}[ \t]+)?$", re.IGNORECASE
)
_SCHEME_NAME = re.compile(r"[A-Z0-9]+(?:-[A-Z0-9]+)+")  # AWS4-HMAC-SHA256: a scheme, not its credential


def _authorization(view: View) -> bool:
    """A credential in an ``Authorization`` header (or a variable, a key of a headers dict): the header's own
    name before it, not a dotted path (``request.headers.authorization``) or another header (``x-authorization``),
    and a value with digits that is no identifier, path or scheme name."""
    value = view.value
    if not _HEADER_BEFORE.search(view.line_before()) or _SCHEME_NAME.fullmatch(value):
        return False
    if not any(c.isdigit() for c in value) or (("." in value or "/" in value) and len(value) < 32):
        return False
    return looks_like_secret(value, min_length=12, min_entropy=3.0)


def _bearer(view: View) -> bool:
    return looks_like_secret(view.value, min_length=12, min_entropy=3.0)


def _basic_auth(view: View) -> bool:
    value = view.value
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    _user, sep, password = decoded.partition(":")
    return bool(sep) and bool(password) and not is_placeholder(password)


def _long_random(view: View) -> bool:
    value = view.value
    return char_classes(value) >= 2 and shannon_entropy(value) >= 3.0 and not is_placeholder(value)


def _at_most(length: int, validate: Validator = not_placeholder) -> Validator:
    """``validate``, for spans of at most ``length`` characters (a longer run is not the documented token)."""

    def check(view: View) -> bool:
        return view.end - view.start <= length and validate(view)

    return check


def _pem_body(view: View) -> tuple[int, int] | None:
    """The key body: up to ``-----END`` when the block has one, without the white space, ``\\n`` escapes
    and separators around it (the pattern takes every character a body can hold, the END line included)."""
    value = view.value
    end_marker = value.find("-----END")
    lo, hi = 0, end_marker if end_marker >= 0 else len(value)
    while lo < hi:
        if value[lo] in " \t\r\n:,.-":
            lo += 1
        elif value.startswith(("\\n", "\\r"), lo, hi):
            lo += 2
        else:
            break
    while hi > lo:
        if value[hi - 1] in " \t\r\n\\":
            hi -= 1
        elif hi - lo >= 2 and value[hi - 2] == "\\" and value[hi - 1] in "nr":
            hi -= 2
        else:
            break
    return (view.start + lo, view.start + hi) if hi - lo >= 16 else None


def _r(
    kind: str,
    label: str,
    pattern: str,
    validate: Validator | None = not_placeholder,
    *,
    conf: float = 0.95,
    requires: tuple[str, ...] = (),
    lower: bool = False,
    boundary: bool = False,
    left: str | None = None,
    right: str | None = None,
    refine: Refiner | None = None,
) -> Rule:
    return Rule(
        kind,
        "secret",
        label,
        pattern,
        validate,
        conf,
        requires,
        lower,
        boundary=boundary,
        left=left,
        right=right,
        refine=refine,
    )


def _prefixed(kind: str, label: str, prefix: str, rest: str, validate: Validator | None = not_placeholder) -> Rule:
    """A token that starts with its literal ``prefix`` and stands alone (checked on both sides)."""
    return _r(kind, label, prefix + rest, validate, boundary=True, requires=(prefix.replace("\\", ""),))


_GITLAB = r"gl(?:pat|oas|dt|rt|rtr|cbt|ptt|ft|imt|agent|soat|wt)-"

SECRET_RULES: tuple[Rule, ...] = (
    _r(
        "private_key",
        "PRIVATE_KEY",
        # Everything a key body can hold (base64, white space, ``\n`` escapes inside JSON strings, the
        # ``Proc-Type:``/``DEK-Info:`` headers with their single dashes), up to a double dash (``-----END``).
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?P<s>(?:[A-Za-z0-9+/=:,.\s]|\\[nr]|-[A-Za-z0-9+/=:,.\s])*)",
        None,
        conf=0.99,
        requires=("-----BEGIN",),
        refine=_pem_body,
    ),
    _r(
        "encoded_private_key",
        "PRIVATE_KEY",
        # base64 of "-----BEGIN", and the lines it wraps onto (`base64` wraps at 76 columns, YAML `|` indents)
        r"LS0tLS1CRUdJTi[A-Za-z0-9+/]+={0,2}(?:\r?\n[ \t]*[A-Za-z0-9+/]+={0,2})*",
        _encoded_private_key,
        conf=0.99,
        requires=("LS0tLS1CRUdJTi",),
        refine=_whole_lines,
    ),
    _r(
        "aws_access_key_id",
        "AWS_KEY",
        r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)[A-Z0-9]{16}",
        boundary=True,
        requires=tuple(f"A{p}" for p in "KIA SIA BIA CCA GPA IDA ROA IPA NPA NVA PKA".split()),
    ),
    _r(
        "aws_secret_access_key",
        "AWS_SECRET",
        r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key|aws_?secret)[\"']?(?:\s*(?:[:=]|=>)\s*|[ \t]+)[\"']?"
        r"(?P<s>[A-Za-z0-9/+]{40})",
        _long_random,
        requires=("secret",),
        lower=True,
        right=r"[A-Za-z0-9/+=]",
    ),
    _prefixed("gcp_api_key", "GCP_KEY", "AIza", r"[0-9A-Za-z_-]{35}"),
    _prefixed("gcp_oauth_token", "GCP_TOKEN", r"ya29\.", r"[0-9A-Za-z_-]{20,}"),
    _r("gcp_refresh_token", "GCP_TOKEN", r"1//0[0-9A-Za-z_-]{40,}", requires=("1//0",), left=r"[\w/]", right=r"[\w-]"),
    _prefixed("gcp_client_secret", "GCP_SECRET", "GOCSPX-", r"[0-9A-Za-z_-]{28}"),
    _r(
        "azure_storage_key",
        "AZURE_KEY",
        r"(?i:AccountKey|SharedAccessKey|azure_?storage_?(?:account_?)?key|primary_?key|master_?key)"
        r"[\"']?\s*[=:]\s*[\"']?(?P<s>[A-Za-z0-9+/]{40,}={0,2})",
        _long_random,
        requires=("key",),  # every name ends with it
        lower=True,
    ),
    _r(
        "azure_sas_signature",
        "AZURE_SAS",
        r"[?&;](?i:sig)=(?P<s>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})",
        _long_random,
        requires=("sig=",),
        lower=True,
    ),
    _r(
        "azure_client_secret",
        "AZURE_SECRET",
        r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",
        requires=("Q~",),
        left=r"[\w~.-]",
        right=r"[\w~.-]",
    ),
    _prefixed("anthropic_api_key", "ANTHROPIC_KEY", "sk-ant-", r"(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_-]{20,}"),
    _prefixed(
        "openai_api_key", "OPENAI_KEY", "sk-", r"(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_-]{20,}", _random_token
    ),
    _prefixed("huggingface_token", "HF_TOKEN", "hf_", r"[A-Za-z0-9]{30,}", _at_most(43, _mixed_case)),
    _prefixed("huggingface_token", "HF_TOKEN", "api_org_", r"[A-Za-z0-9]{30,}", _at_most(48, _mixed_case)),
    _r(
        "github_token",
        "GITHUB_TOKEN",
        r"gh[pousr]_[A-Za-z0-9]{36,}",
        _at_most(255),
        boundary=True,
        requires=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _prefixed("github_token", "GITHUB_TOKEN", "github_pat_", r"[A-Za-z0-9_]{60,}", _at_most(262)),
    _r(
        "gitlab_token",
        "GITLAB_TOKEN",
        _GITLAB + r"[A-Za-z0-9_-]{20,}",
        boundary=True,
        requires=tuple(f"gl{p}-" for p in "pat oas dt rt rtr cbt ptt ft imt agent soat wt".split()),
    ),
    _prefixed("gitlab_token", "GITLAB_TOKEN", "GR1348941", r"[A-Za-z0-9_-]{20,}"),
    _r("slack_token", "SLACK_TOKEN", r"xox[abposre]-[A-Za-z0-9-]{10,}", _has_digit, boundary=True, requires=("xox",)),
    _prefixed("slack_app_token", "SLACK_TOKEN", "xapp-", r"\d-[A-Z0-9]{8,}-\d{6,}-[A-Za-z0-9]{32,}"),
    _r(
        "slack_webhook",
        "SLACK_WEBHOOK",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{20,})",
        requires=("hooks.slack.com",),
    ),
    _r(
        "stripe_key",
        "STRIPE_KEY",
        r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,}",
        _at_most(255),
        boundary=True,
        requires=("_live_", "_test_", "whsec_"),
    ),
    _prefixed("twilio_api_key", "TWILIO_KEY", "SK", r"[0-9a-f]{32}"),
    _prefixed("sendgrid_api_key", "SENDGRID_KEY", r"SG\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _prefixed("npm_token", "NPM_TOKEN", "npm_", r"[A-Za-z0-9]{36}"),
    _r(
        "npm_auth_token",
        "NPM_TOKEN",
        r"_(?i:authToken|auth)\s*=\s*[\"']?(?P<s>[^\s\"']{8,})",
        requires=("_auth",),
        lower=True,
    ),
    _prefixed("pypi_token", "PYPI_TOKEN", "pypi-AgE", r"[A-Za-z0-9_-]{50,}"),
    _r("dockerhub_token", "DOCKER_TOKEN", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}", boundary=True, requires=("dckr_",)),
    _r(
        "jwt",
        "JWT",
        r"ey[JA][A-Za-z0-9_-]{7,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}",
        conf=0.9,
        boundary=True,
        requires=("eyJ", "eyA"),
    ),
    _r(
        "bearer_token",
        "TOKEN",
        r"(?i:\bbearer)\s+(?P<s>[A-Za-z0-9._~+/-]{12,}=*)",
        _bearer,
        conf=0.85,
        requires=("bearer",),
        lower=True,
        right=r"[\w.~+/-]",
    ),
    _r(
        "basic_auth",
        "BASIC_AUTH",
        r"(?i:\bbasic)\s+(?P<s>[A-Za-z0-9+/]{6,}={0,2})",
        _basic_auth,
        requires=("basic",),
        lower=True,
        right=r"[\w+/=]",
    ),
    _r(
        "authorization_header",  # any scheme: `token` (GitHub), `Digest`, `ApiKey`, `SSWS`... (Bearer/Basic: above)
        "TOKEN",
        r"(?i:\b(?:proxy-)?authorization)[\"']?\s*[:=]\s*[\"']?(?:[A-Za-z][A-Za-z0-9-]{1,30}[ \t]+)?"
        r"(?P<s>[A-Za-z0-9._~+/-]{12,}=*)",
        _authorization,
        conf=0.85,
        requires=("authorization",),
        lower=True,
        right=r"[\w.~+/-]",
    ),
)
"""Provider formats (public facts) in priority order: a later rule loses ties of the same span."""
