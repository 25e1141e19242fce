"""Regressions of issue 15, item 1: secrets and internal identifiers that used to reach storage.

Each reproduction of the issue is checked through the real pipeline the GIM pack stores with (``patterns``
then ``contextual``, then the ``patterns`` re-scan), and each one's class: every reserved character in a URL
password, every scheme, key material of any size, every private range.
"""

from __future__ import annotations

import random
import string

import anyio
import pytest

from gateway.api import FieldKind
from gateway.sanitization import SanitizationPipeline
from gateway_plugins.sanitizers.contextual import ContextualSanitizer
from gateway_plugins.sanitizers.patterns import PatternSanitizer

PATTERNS = PatternSanitizer()
PIPELINE = SanitizationPipeline(
    {FieldKind.ERROR_MESSAGE: [PATTERNS, ContextualSanitizer()]}, query_layers=[PATTERNS], verifier=PATTERNS
)


def stored(text: str) -> str:
    report = anyio.run(PIPELINE.sanitize_fields, {"text": (text, FieldKind.ERROR_MESSAGE)})
    assert not report.refused, report.details
    return report.fields["text"]


# --- key material and cloud secrets outside any label ---------------------------------------------------------

KEY_MATERIAL = (
    "MIIEowwJAiphBxCq17T+ISgKbP9rWwq+E/Zk3Qn8vR2bLcX5yTmH0aJdF7uVsG1eWiO4pKtN6hBzM9xYrC2qLw8jS3fDvE5gA0oI"
    "7nU1tR4yP6kH9cZ2bX8mQ3vW5sJ0dF7gL1aK4eN6hT9pY2rU8iO3cV5bM0zX7wQ1jS4fD6gH9kL2aP5eR8tY0uI3oN6vB9mC1x"
)


def test_key_material_outside_a_pem_block() -> None:
    out = stored(f"ValueError: could not load signing key: key material: {KEY_MATERIAL}")
    assert out == "ValueError: could not load signing key: key material: <SECRET_1>"


@pytest.mark.parametrize("size", [30, 64, 270, 1190])
def test_key_material_of_any_size(size: int) -> None:
    import base64

    rng = random.Random(size)
    der = bytes([0x30, 0x82, size >> 8, size & 0xFF]) + bytes(rng.getrandbits(8) for _ in range(size))
    body = base64.b64encode(der).decode()
    assert body not in stored(f"jwt.exceptions.InvalidKeyError: {body}")


def test_an_aws_secret_quoted_in_an_error_message() -> None:
    out = stored(
        "botocore.exceptions.ClientError: An error occurred (SignatureDoesNotMatch) when calling the PutObject "
        "operation (key: /ovhEZDUQuu2zzltM+bRoDiP0LGz85BeCpRFFTLq)"
    )
    assert out.endswith("operation (key: <SECRET_1>)")


@pytest.mark.parametrize("seed", range(20))
def test_random_tokens_are_caught_wherever_they_appear(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + rng.choice(["+/", "-_", ""])
    while True:
        token = "".join(rng.choice(alphabet) for _ in range(rng.choice([24, 32, 40, 64])))
        if any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token):
            break
    template = rng.choice(["HMAC mismatch: got {t}", "[warn] retrying with {t} after 401", "X-Signature: {t}"])
    assert token not in stored(template.format(t=token))


# --- URL credentials beat the e-mail rule, whatever the password holds ----------------------------------------


def test_the_issue_connection_string() -> None:
    out = stored("postgresql://admin:Tr0ub4dor&3xyz@db01.corp.internal:5432/orders")
    assert out == "postgresql://admin:<PASSWORD_1>@<INTERNAL_HOST_1>:5432/orders"


RESERVED = "&@:/?#%+=!$*;,'()[]~"


@pytest.mark.parametrize("char", list(RESERVED), ids=[f"U+{ord(c):04X}" for c in RESERVED])
@pytest.mark.parametrize("scheme", ["postgresql", "mysql+pymysql", "mongodb+srv", "redis", "amqp", "https", "x+y"])
def test_a_reserved_character_never_splits_a_url_password(char: str, scheme: str) -> None:
    password = f"Tr0ub4{char}dor{char}3xyz"
    out = stored(f"could not connect: {scheme}://admin:{password}@db.example-shop.com:5432/orders failed")
    assert (
        out
        == f"could not connect: {scheme}://admin:<PASSWORD_1>@"
        + (
            "<INTERNAL_HOST_1>"
            if scheme.split("+")[0] in ("postgresql", "mysql", "mongodb", "redis", "amqp")
            else "db.example-shop.com"
        )
        + ":5432/orders failed"
    )
    for piece in ("Tr0ub4", "dor", "3xyz"):
        assert piece not in out


def test_a_port_and_a_path_are_not_a_password() -> None:
    text = "GET https://registry.example-shop.com:443/@scope%2fpkg failed"
    assert stored(text) == text


# --- internal identifiers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["db01.internal.acme-corp.com", "pg-primary.orders.internal", "git.acme.corp", "db07.acme-corp.com"]
)
def test_internal_host_names(host: str) -> None:
    assert stored(f"could not translate host name {host} to address") == (
        "could not translate host name <INTERNAL_HOST_1> to address"
    )


@pytest.mark.parametrize("ip", ["10.1.2.3", "192.168.77.12", "172.20.0.5", "100.72.3.4", "fd12:3456:789a::1"])
def test_private_addresses(ip: str) -> None:
    assert stored(f"connect to {ip} port 5432 failed") == "connect to <IP_1> port 5432 failed"


@pytest.mark.parametrize("ip", ["127.0.0.1", "0.0.0.0", "169.254.169.254", "192.0.2.15", "::1"])
def test_addresses_that_are_the_same_everywhere_stay(ip: str) -> None:
    text = f"connect to {ip} port 5432 failed"
    assert stored(text) == text


@pytest.mark.parametrize(
    "email", ["alice@acme.local", "ops@corp.acme.internal", "test@acme-corp.com", "svc-billing@initech.de"]
)
def test_emails_at_any_domain(email: str) -> None:
    assert stored(f"permission denied for {email}") == "permission denied for <EMAIL_1>"


def test_project_paths_keep_the_file_and_the_library() -> None:
    out = stored(
        'File "/srv/app/agent.py", line 12, in run\n'
        'File "/srv/app/.venv/lib/python3.11/site-packages/langchain/tools.py", line 400, in invoke\n'
        "at Layer.handle (/srv/app/node_modules/express/lib/router/index.js:284:7)\n"
        'File "/srv/app/utils.py", line 3'
    )
    assert out == (
        'File "<PATH_1>/agent.py", line 12, in run\n'
        'File "<PATH_2>/lib/python3.11/site-packages/langchain/tools.py", line 400, in invoke\n'
        "at Layer.handle (<PATH_1>/node_modules/express/lib/router/index.js:284:7)\n"
        'File "<PATH_1>/utils.py", line 3'
    )


@pytest.mark.parametrize(
    "path",
    [
        "/usr/lib/python3.11/asyncio/base_events.py",
        "/usr/local/lib/node_modules/express/lib/router/index.js",
        "node_modules/express/lib/router/index.js",
        "/rustc/90c541806f23a127002de5b4038be731ba1458ca/library/core/src/panicking.rs",
        "/home/runner/.cache/pip/wheels",
    ],
)
def test_paths_every_machine_shares_stay(path: str) -> None:
    text = f"  at {path}:72:14"
    assert stored(text) == text


def test_a_stack_trace_full_of_noise_stays_readable() -> None:
    text = (
        "goroutine 1 [running]:\n"
        "main.(*Server).handle(0xc000123456, {0x7f8e2c, 0xc0001a2b40})\n"
        "\t/usr/local/go/src/net/http/server.go:3137 +0x1d\n"
        "request 3f2b9c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e at commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3, "
        "numpy 1.26.4, Log4j2LoggerContextFactory, sha512-Q2BzaGFyZWRBcnJheUJ1ZmZlcg=="
    )
    assert stored(text) == text
