"""The example authenticator passes the authenticator contract."""

from __future__ import annotations

import pytest

from example_providers.authenticator import TeamTokenAuthenticator
from gateway.contracts.auth_contract import AuthenticatorContract, Credential

TOKEN = "tt_9f8e7d6c5b4a39281706f5e4d3c2b1a0"


class TestTeamTokenAuthenticatorContract(AuthenticatorContract):
    @pytest.fixture
    def authenticator(self) -> TeamTokenAuthenticator:
        return TeamTokenAuthenticator(TOKEN, "platform-team", tenant="acme", scopes=frozenset({"gim:read"}))

    @pytest.fixture
    def credential(self) -> Credential:
        return Credential(
            headers={"X-Team-Token": TOKEN},
            secret=TOKEN,
            subject="platform-team",
            tenant="acme",
            scopes=frozenset({"gim:read"}),
            method="team_token",
        )
