"""What the authenticators read from a request costs one bounded pass, whatever the caller sends.

A credential header longer than ``MAX_CREDENTIAL_LENGTH`` is refused before it is parsed; a shorter one is checked
by anchored patterns (``fullmatch``) whose quantified parts cannot take what the next one takes, and an API key or
refresh token by a fixed-width pattern. Fed the worst-case texts of ``tests/adversarial.py`` (the suite's timeout
is the hang guard; nothing here is timed).
"""

from __future__ import annotations

from functools import partial

import pytest

from gateway.api import Unauthenticated
from gateway_plugins.auth.headers import MAX_CREDENTIAL_LENGTH, bearer_token
from gateway_plugins.auth.keys import parse_key
from tests.adversarial import ADVERSARIAL, repeat

WORST = {**ADVERSARIAL, **{f"run of {unit!r}": partial(repeat, unit) for unit in ("a", "a=", "=", "a ", "-", "+/")}}


@pytest.mark.parametrize("name", sorted(WORST))
def test_a_worst_case_bearer_header_is_decided_in_one_pass(name: str) -> None:
    for size in (MAX_CREDENTIAL_LENGTH - len("Bearer "), 10 * MAX_CREDENTIAL_LENGTH):
        value = "Bearer " + WORST[name](size)
        try:
            assert bearer_token({"Authorization": value}) == value.removeprefix("Bearer ").strip(" ")
        except Unauthenticated as refused:
            assert refused.details["reason"] in ("malformed", "missing")


@pytest.mark.parametrize("name", sorted(WORST))
def test_a_worst_case_api_key_is_refused_in_one_pass(name: str) -> None:
    assert parse_key("gk_" + WORST[name](1_000_000)) is None
