# ruff: noqa: E501  (data tables: one sample per line reads better than wrapped strings)
"""Made-up values in public formats, for the sanitizer corpus. Nothing here is a real credential.

Every maker takes a ``random.Random`` so the corpus is reproducible from its seed.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import random
import string

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"

FIRST = ["alice", "bob", "carol", "dmitri", "eve", "farah", "gustavo", "hiroshi", "ines", "jamal", "katarzyna",
         "liam", "mei", "nikolai", "olga", "pedro", "quentin", "rania", "sven", "tamar", "ursula", "viktor",
         "wen", "ximena", "yusuf", "zoe", "anneliese", "bartek", "chioma", "deepak"]  # fmt: skip
LAST = ["smith", "nguyen", "kowalski", "garcia", "okafor", "schmidt", "tanaka", "haddad", "rossi", "johansson",
        "dubois", "silva", "cohen", "ivanova", "patel", "murphy", "novak", "yilmaz", "kim", "mueller"]  # fmt: skip
DOMAINS = ["acme-corp.io", "gmail.com", "outlook.com", "fastmail.fm", "initech.de", "globex.co.uk",
           "proton.me", "hooli.xyz", "yahoo.co.jp", "umbrella-labs.com", "univ-lyon.fr", "stark.industries"]  # fmt: skip


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """Random, but with upper, lower and digits all present (as real generated tokens have)."""
    while True:
        value = rand(rng, alphabet, n)
        if any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value):
            return value


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST), rng.choice(LAST)


def username(rng: random.Random) -> str:
    first, last = person(rng)
    return rng.choice(
        [first, f"{first}.{last}", f"{first[0]}{last}", f"{first}{rng.randint(1, 99)}", f"{last}_{first[0]}"]
    )


def email(rng: random.Random) -> str:
    first, last = person(rng)
    local = rng.choice(
        [f"{first}.{last}", f"{first}", f"{first[0]}{last}", f"{first}+dev", f"{last}{rng.randint(7, 99)}"]
    )
    return f"{local}@{rng.choice(DOMAINS)}"


def public_ipv4(rng: random.Random) -> str:
    while True:
        addr = ipaddress.IPv4Address(rng.getrandbits(32))
        text = str(addr)
        if addr.is_global and not addr.is_multicast and text not in ("8.8.8.8", "1.1.1.1", "8.8.4.4", "1.0.0.1"):
            return text


def public_ipv6(rng: random.Random) -> str:
    prefix = rng.choice(["2a00:1450", "2606:4700", "2001:4860", "2a03:2880", "2604:a880"])
    groups = [format(rng.getrandbits(16), "x") for _ in range(rng.choice([2, 3, 6]))]
    return (
        f"{prefix}:{':'.join(groups)}"
        if len(groups) == 6
        else f"{prefix}:{':'.join(groups)}::{rng.randint(1, 0xFFFF):x}"
    )


def phone(rng: random.Random) -> str:
    a, b, c = rng.randint(201, 989), rng.randint(200, 999), rng.randint(0, 9999)
    return rng.choice([
        f"+1 {a} {b} {c:04d}", f"({a}) {b}-{c:04d}", f"{a}-{b}-{c:04d}", f"+1-{a}-{b}-{c:04d}", f"{a}.{b}.{c:04d}",
        f"+44 20 {rng.randint(7000, 8999)} {rng.randint(1000, 9999)}", f"+49 30 {rng.randint(1000000, 99999999)}",
        f"+33 6 {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)}",
        f"+81 90-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}", f"+91 {rng.randint(70000, 99999)} {rng.randint(10000, 99999)}",
    ])  # fmt: skip


def luhn_complete(prefix_digits: str, length: int, rng: random.Random) -> str:
    body = prefix_digits + "".join(rng.choice(string.digits) for _ in range(length - len(prefix_digits) - 1))
    total = 0
    for index, ch in enumerate(reversed(body)):
        n = int(ch)
        if index % 2 == 0:
            n *= 2
            n = n - 9 if n > 9 else n
        total += n
    return body + str((10 - total % 10) % 10)


def card(rng: random.Random) -> str:
    kind = rng.choice(["visa", "mc", "amex", "discover", "mc2"])
    if kind == "amex":
        digits = luhn_complete(rng.choice(["34", "37"]), 15, rng)
        return rng.choice(
            [digits, f"{digits[:4]} {digits[4:10]} {digits[10:]}", f"{digits[:4]}-{digits[4:10]}-{digits[10:]}"]
        )
    prefix = {"visa": "4", "mc": str(rng.randint(51, 55)), "discover": "6011", "mc2": str(rng.randint(2221, 2720))}[
        kind
    ]
    digits = luhn_complete(prefix, 16, rng)
    sep = rng.choice(["", " ", "-"])
    return sep.join(digits[i : i + 4] for i in range(0, 16, 4)) if sep else digits


def password(rng: random.Random) -> str:
    word = rng.choice(
        ["Summer", "winter", "Dragon", "monkey", "Sunshine", "football", "Lakers", "tiger", "Purple", "coffee"]
    )
    return rng.choice([
        f"{word}{rng.randint(1990, 2025)}!", f"{word.lower()}{rng.randint(10, 999)}", mixed(rng, rng.randint(10, 20)),
        rand(rng, ALNUM + "!#%^*-_", rng.randint(12, 24)), f"{word}_{rand(rng, string.digits, 4)}#",
        f"Tr0ub4dor&{rng.randint(1, 9)}", f"{rand(rng, string.ascii_lowercase, 5)}{rng.randint(100, 999)}{rand(rng, '!@#$%', 1)}",
    ])  # fmt: skip


def url_password(rng: random.Random) -> str:
    return rng.choice(
        [
            mixed(rng, rng.randint(10, 24)),
            f"{mixed(rng, 8)}%40{rand(rng, ALNUM, 4)}",
            password(rng).replace("#", "%23").replace("@", "%40"),
        ]
    )


def jwt(rng: random.Random) -> str:
    header = {"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    first, last = person(rng)
    payload = {
        "sub": str(rng.randint(10**6, 10**9)),
        "name": f"{first} {last}",
        "iat": rng.randint(1_600_000_000, 1_750_000_000),
    }
    if rng.random() < 0.5:
        payload["scope"] = rng.choice(["read:repo", "admin", "user:email"])
    sig = bytes(rng.getrandbits(8) for _ in range(rng.choice([32, 64, 256])))
    return f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}.{b64url(sig)}"


def pem_body(rng: random.Random, lines: int, escaped: bool = False) -> str:
    rows = [rand(rng, B64, 64) for _ in range(lines - 1)] + [rand(rng, B64, rng.randint(8, 60)) + "=="]
    return ("\\n" if escaped else "\n").join(rows)


def harmless_b64(rng: random.Random) -> str:
    data = rng.choice([b'{"page": 2, "size": 50}', b"hello world", b"Lorem ipsum dolor sit amet", b'{"theme":"dark"}',
                       b"The quick brown fox", b"cursor:1700000000:42"])  # fmt: skip
    return base64.b64encode(data).decode()


# --- values added with the larger corpus (issue 15) ------------------------------------------------------------

RESERVED = "&@:/?#%+=!$*;,'()[]~"
"""Characters with a meaning in URLs that passwords hold unencoded (RFC 3986 gen-delims and sub-delims)."""
COMPANIES = ["acme-corp", "initech", "globex", "umbrella-labs", "hooli", "stark-ind", "wayne-ent", "tyrell"]
SERVICES = ["orders", "billing", "payments", "ledger", "inventory", "search", "auth", "notify", "reports"]


def aws_secret(rng: random.Random) -> str:
    return mixed(rng, 40, B64)


def key_material(rng: random.Random, size: int | None = None) -> str:
    """Base64 of a DER-encoded key (``MII…``): what a PEM body is, without its BEGIN/END lines."""
    size = size or rng.choice([64, 121, 270, 600, 1190, 1218])
    header = bytes([0x30, 0x82, size >> 8 & 0xFF, size & 0xFF, 0x02, 0x01, 0x00])
    return base64.b64encode(header + bytes(rng.getrandbits(8) for _ in range(size))).decode()


def openssh_key_body(rng: random.Random) -> str:
    body = b"openssh-key-v1\x00\x00\x00\x00\x04none" + bytes(rng.getrandbits(8) for _ in range(rng.choice([150, 380])))
    return base64.b64encode(body).decode()


def random_token(rng: random.Random) -> str:
    """An opaque credential of a provider without a published prefix."""
    return rng.choice([
        mixed(rng, rng.randint(24, 64)), mixed(rng, 43, URLSAFE), mixed(rng, rng.choice([32, 40, 44, 88]), B64),
        mixed(rng, 32) + "==", f"{mixed(rng, 8)}-{mixed(rng, 16)}-{mixed(rng, 8)}",
    ])  # fmt: skip


def reserved_password(rng: random.Random, ch: str) -> str:
    """A password holding the reserved character ``ch`` (unencoded) somewhere in its middle."""
    left, right = mixed(rng, rng.randint(4, 9)), mixed(rng, rng.randint(3, 8))
    return rng.choice([f"{left}{ch}{right}", f"{left}{ch}{ch}{right}", f"{left}{ch}{right}{ch}{mixed(rng, 3)}"])


def company(rng: random.Random) -> str:
    return rng.choice(COMPANIES)


def internal_host(rng: random.Random) -> str:
    c, s, n = company(rng), rng.choice(SERVICES), rng.randint(1, 40)
    return rng.choice([
        f"db{n:02d}.internal.{c}.com", f"{s}-db.prod.internal", f"pg-primary.{s}.internal", f"git.{c}.corp",
        f"{s}.svc.{c}.corp", "jenkins.build.lan", f"{rng.choice(FIRST)}-macbook-pro.local", "wiki.eng.intranet",
        f"ip-10-0-{rng.randint(0, 255)}-{rng.randint(0, 255)}.ec2.internal", "nas.home.arpa", f"vault.int.{c}.io",
        f"db{n:02d}.{c}.com", f"web-{n:02d}.prod.{c}.io", f"redis-{rng.randint(10000, 99999)}.c1.cloud.redislabs.com",
        f"{s}{n:02d}.dc1.{c}.net", f"kafka-{n:02d}.{c}.private.net",
    ])  # fmt: skip


def private_ipv4(rng: random.Random) -> str:
    return rng.choice([
        f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        f"100.{rng.randint(64, 127)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
    ])  # fmt: skip


def private_ipv6(rng: random.Random) -> str:
    return f"fd{rng.getrandbits(8):02x}:{rng.getrandbits(16):x}:{rng.getrandbits(16):x}::{rng.getrandbits(16):x}"


def internal_email(rng: random.Random) -> str:
    first, last = person(rng)
    local = rng.choice([f"{first}.{last}", first, "test", "user", "admin", f"svc-{rng.choice(SERVICES)}", "ops"])
    domain = rng.choice([f"{company(rng)}.com", f"{company(rng)}.local", f"corp.{company(rng)}.internal",
                         f"mail.{company(rng)}.io", f"{company(rng)}.co.uk"])  # fmt: skip
    return f"{local}@{domain}"
