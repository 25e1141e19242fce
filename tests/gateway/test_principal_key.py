"""``Principal.key``: one string per identity and one identity per string (rate limits, votes, histories and MCP
sessions key on it), and the keys of ordinary names unchanged."""

from __future__ import annotations

import itertools

import pytest

from gateway.api import Principal

IDENTITIES = [
    (None, "acme:key:aa4b03a5dea14940"),
    ("acme", "key:aa4b03a5dea14940"),
    ("acme:key", "aa4b03a5dea14940"),
    ("a%3Ab", "c"),
    ("a:b", "c"),
    (None, "a%3Ab:c"),
    (None, "a:b:c"),
    ("a", "b:c"),
]


def test_identities_that_read_alike_never_share_a_key() -> None:
    keys = [Principal(subject=subject, tenant=tenant).key for tenant, subject in IDENTITIES]
    for (one, key_one), (other, key_other) in itertools.combinations(zip(IDENTITIES, keys, strict=True), 2):
        assert key_one != key_other, (one, other)


@pytest.mark.parametrize(
    ("tenant", "subject", "key"),
    [
        (None, "alice@acme-corp.io", "alice@acme-corp.io"),
        ("acme", "key:1f2e", "acme:key:1f2e"),
        ("acme", "bob", "acme:bob"),
    ],
)
def test_ordinary_names_keep_the_keys_they_had(tenant: str | None, subject: str, key: str) -> None:
    assert Principal(subject=subject, tenant=tenant).key == key
