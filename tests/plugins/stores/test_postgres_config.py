"""The postgres store's settings, checked before any connection is made."""

from __future__ import annotations

import pytest

from gateway.api import ConfigError
from gateway_plugins.stores.postgres import PostgresStore


def test_a_malformed_dsn_is_a_config_error_that_never_quotes_the_password():
    with pytest.raises(ConfigError, match="'dsn' is not a valid PostgreSQL connection string") as caught:
        PostgresStore("postgresql://gw:Hunter2%zzTopSecret@127.0.0.1/gw")
    assert "Hunter2" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
