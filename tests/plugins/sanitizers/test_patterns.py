"""Layer 1: every category, the documented non-findings, readable placeholders."""

from __future__ import annotations

import pytest

from gateway.api import PlaceholderMap
from gateway_plugins.sanitizers.patterns import PatternSanitizer

LAYER = PatternSanitizer()


def redact(text: str, placeholders: PlaceholderMap | None = None) -> str:
    return LAYER.sanitize_sync(text, placeholders=placeholders or PlaceholderMap()).text


CATEGORIES = [
    ("aws", "AWS_ACCESS_KEY_ID=AKIAQ3EXAMPL2Z7K4M5N", "AKIAQ3EXAMPL2Z7K4M5N", "<AWS_KEY_1>"),
    (
        "aws_secret",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9Kq3Lm2P",
        "wJalrXUtnFEMI/K7MDENG",
        "<AWS_SECRET_1>",
    ),
    ("gcp", "?key=AIzaSyD3x7Jq0mL9pR2sT4uV6wX8yZ0aB1cD2eF", "AIzaSyD3x7Jq0", "<GCP_KEY_1>"),
    (
        "azure",
        "AccountName=x;AccountKey=" + ("k9Xq2Lm7Vb4Tz8Wc1Nd6Rf3Hs5Jy0Pg" * 3)[:86] + "==;",
        "k9Xq2Lm7",
        "<AZURE_KEY_1>",
    ),
    ("openai", "key sk-proj-Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789abcdEFGH", "sk-proj-", "<OPENAI_KEY_1>"),
    ("anthropic", "sk-ant-api03-" + "aB3" * 31 + "AA", "sk-ant-api03", "<ANTHROPIC_KEY_1>"),
    ("huggingface", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "hf_AbCd", "<HF_TOKEN_1>"),
    ("github", "token ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123", "<GITHUB_TOKEN_1>"),
    ("gitlab", "glpat-Ab3dEf9HiJkLmNoPqRsT", "glpat-Ab3d", "<GITLAB_TOKEN_1>"),
    ("slack", "xoxb-123456789012-123456789012-Ab3dEf9HiJkLmNoPqRsTuVwX", "xoxb-1234", "<SLACK_TOKEN_1>"),
    ("stripe", "stripe.api_key = 'sk_live_Ab3dEf9HiJkLmNoPqRsTuVwX'", "sk_live_Ab3d", "<STRIPE_KEY_1>"),
    ("twilio", "API Key SK0123456789abcdef0123456789abcdef", "SK0123456789", "<TWILIO_KEY_1>"),
    (
        "sendgrid",
        "SG.Ab3dEf9HiJkLmNoPqRsTuV.Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789abcdEFG",
        "SG.Ab3d",
        "<SENDGRID_KEY_1>",
    ),
    ("npm", "npm_Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789", "npm_Ab3d", "<NPM_TOKEN_1>"),
    ("pypi", "pypi-AgEIcHlwaS5vcmc" + "Ab3d_" * 14, "pypi-AgE", "<PYPI_TOKEN_1>"),
    ("dockerhub", "dckr_pat_Ab3dEf9HiJkLmNoPqRsTuVwXyZ0", "dckr_pat_", "<DOCKER_TOKEN_1>"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlc2lnbmF0dXJl", "eyJhbGci", "<JWT_1>"),
    ("bearer", "Authorization: Bearer 1a2B3c4D5e6F7g8H9i0J", "1a2B3c4D", "<TOKEN_1>"),
    (
        "pem",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA",
        "<PRIVATE_KEY_1>",
    ),
    (
        "pem_in_base64",  # kubeconfig's client-key-data: base64 of "-----BEGIN RSA PRIVATE KEY-----\nMIIEow..."
        "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBMFozVlM1SkpjZHMzeGZu",
        "LS0tLS1CRUdJTiBSU0Eg",
        "client-key-data: <PRIVATE_KEY_1>",
    ),
    (
        "authorization_token",  # GitHub's own scheme (any scheme: Bearer and Basic have rules of their own)
        "curl -H 'Authorization: token 7f3a9c2e8b1d4f6a0e5c9b2d7a4f1e8c3b6d9a2f' https://api.github.com",
        "7f3a9c2e8b1d",
        "Authorization: token <TOKEN_1>'",
    ),
    ("password_with_ampersand", "passwd=Tr0ub4dor&3xq", "3xq", "passwd=<PASSWORD_1>"),
    ("password_in_query", "GET /login?password=Hunter2Secret&user=bob", "Hunter2", "?password=<PASSWORD_1>&user=bob"),
    ("ssn", "customer SSN 536-22-8714 rejected", "536-22", "SSN <SSN_1> rejected"),
    ("iban", "transfer to IBAN DE44500105175407324931 refused", "DE4450", "IBAN <IBAN_1> refused"),
    ("iban_grouped", "IBAN DE44 5001 0517 5407 3249 31 USD", "5001 0517", "IBAN <IBAN_1> USD"),
    ("db_url", "postgres://app:S3cr3tPw9@db.example-shop.com:5432/x", "S3cr3tPw9", "<PASSWORD_1>"),
    ("password", 'DB_PASSWORD="Summer2024!"', "Summer2024!", "<PASSWORD_1>"),
    ("api_key", "  api_key: Ab3dEf9HiJkLmNoPqRsT", "Ab3dEf9HiJ", "<SECRET_1>"),
    ("email", "contact alice.smith@acme-corp.io today", "alice.smith@", "<EMAIL_1>"),
    ("home_linux", "/home/alice/proj/x.py", "alice", "<PATH_1>/x.py"),
    ("home_mac", "/Users/carol/dev/app.ts", "carol", "<PATH_1>/app.ts"),
    ("home_windows", "C:\\Users\\John Smith\\AppData\\x.py", "John Smith", "<PATH_1>\\x.py"),
    ("project_path", 'File "/srv/app/agent.py", line 3', "/srv/app", '"<PATH_1>/agent.py"'),
    ("library_path", "/srv/app/.venv/lib/python3.11/site-packages/langchain/tools.py", "/srv/app", "<PATH_1>/lib"),
    ("ipv4", "Failed password from 34.120.5.17 port 22", "34.120.5.17", "<IP_1>"),
    ("private_ipv4", "Connected to 10.0.3.12 and 192.168.1.20", "10.0.3.12", "Connected to <IP_1> and <IP_2>"),
    ("internal_host", "could not resolve db01.internal.acme-corp.com", "acme-corp", "resolve <INTERNAL_HOST_1>"),
    ("random_token", "(key: /ovhEZDUQuu2zzltM+bRoDiP0LGz85BeCpRFFTLq)", "ovhEZDUQuu", "(key: <SECRET_1>)"),
    ("ipv6", "client 2a00:1450:4001:82b::200e blocked", "2a00:1450", "<IP_1>"),
    ("phone", "call +1 (415) 555-0132 now", "555-0132", "<PHONE_1>"),
    ("card", "card 4111 1111 1111 1111 declined", "4111 1111", "<CARD_1>"),
]


@pytest.mark.parametrize(("name", "text", "secret", "expected"), CATEGORIES, ids=[c[0] for c in CATEGORIES])
def test_category_redacted(name: str, text: str, secret: str, expected: str) -> None:
    out = redact(text)
    assert secret not in out
    assert expected in out


NOT_SENSITIVE = [
    "npm ERR! missing script: task-runner; desk-lamp installed",
    "numpy 1.26.4.0 is not supported",
    "created_at=1712345678",
    "Authorization: Bearer undefined",
    "http://localhost:8080/api and 127.0.0.1:5432 and 0.0.0.0:8000 and [::1]:3000",
    "Connected to 127.0.0.1 and 0.0.0.0; doc address 203.0.113.42; metadata 169.254.169.254",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
    "550e8400-e29b-41d4-a716-446655440000",
    'OPENAI_API_KEY=your-api-key-here, token: ${GITHUB_TOKEN}, password: changeme, secret = "xxx", <TOKEN>',
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "password = os.environ['DB_PASSWORD']; api_key=api_key; def f(token: str): ...",
    "Invalid password: must be at least 8 characters",
    "git@github.com:acme/api.git user@example.com /home/runner/.cache/pip /usr/lib/python3.11/asyncio/x.py",
    "pip==24.0.0.1 torch 2.1.0+cu121 v1.2.3.4 Chrome/120.0.6099.109",
    "1234 5678 9012 3456 is not a card (bad checksum); 2024-01-15 10:30:00",
    "specimen SSN 123-45-6789, SSN 900-12-3456 and 666-12-3456; released 2024-01-15; DE00123456789012345678",
    "part number 541-23-7788, order 512-34-5678; the registry's example IBAN GB82 WEST 1234 5698 7654 32",
    "authorization: PermissionDeniedException thrown; authorization = TokenAuthentication.authenticate",
    "x-authorization: application/json; request.headers.authorization: middleware.requireAuth(req)",
    "Authorization: AWS4-HMAC-SHA256 Credential=<AWS_KEY_1>, authorization: src/middleware/authorization.ts",
    "the Authorization header is required for this endpoint; Authorization: <TOKEN>",
    "certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Fo",
]


@pytest.mark.parametrize("text", NOT_SENSITIVE)
def test_lookalikes_unchanged(text: str) -> None:
    assert redact(text) == text


def test_traceback_keeps_what_developers_need() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/bob/app/main.py", line 42, in <module>\n'
        "    import numpy\n"
        "ModuleNotFoundError: No module named 'numpy' (numpy 1.26.4 required, served on localhost:8000)"
    )
    out = redact(text)
    assert "bob" not in out
    for kept in (
        "line 42",
        "main.py",
        "numpy 1.26.4",
        "ModuleNotFoundError",
        "localhost:8000",
        '"<PATH_1>/main.py"',
    ):
        assert kept in out


def test_placeholders_are_stable_per_value() -> None:
    placeholders = PlaceholderMap()
    a = redact("from alice@acme-corp.io to bob@acme-corp.io", placeholders)
    b = redact("reply to alice@acme-corp.io", placeholders)
    assert a == "from <EMAIL_1> to <EMAIL_2>"
    assert b == "reply to <EMAIL_1>"


def test_findings_carry_offsets_into_input() -> None:
    text = "mail alice@acme-corp.io"
    result = LAYER.sanitize_sync(text, placeholders=PlaceholderMap())
    (finding,) = result.findings
    assert text[finding.start : finding.end] == "alice@acme-corp.io"
    assert (finding.kind, finding.category, finding.layer, finding.placeholder) == (
        "email",
        "pii",
        "patterns",
        "<EMAIL_1>",
    )


def test_redact_is_sync_and_per_call() -> None:
    assert LAYER.redact("a alice@acme-corp.io") == "a <EMAIL_1>"
    assert LAYER.redact("b bob@acme-corp.io") == "b <EMAIL_1>"


def test_disabled_rules() -> None:
    layer = PatternSanitizer(disabled=frozenset({"phone"}))
    assert layer.redact("call +1 (415) 555-0132") == "call +1 (415) 555-0132"


def test_a_base64_private_key_wrapped_over_lines_is_redacted_whole_and_the_next_key_kept() -> None:
    """``base64 key.pem`` wraps at 76 columns; a Kubernetes Secret indents the lines under ``tls.key: |``."""
    import base64

    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7" + "Ab3dEf9HiJkLmNoP" * 40
    ) + "\n-----END RSA PRIVATE KEY-----\n"
    lines = base64.encodebytes(pem.encode()).decode().splitlines()
    assert len(lines) > 10
    text = "data:\n  tls.key: |\n" + "".join(f"    {line}\n" for line in lines) + "  next_key: value\n"
    out = redact(text)
    assert out == "data:\n  tls.key: |\n    <PRIVATE_KEY_1>\n  next_key: value\n"
