"""Fixtures of the auth plugin tests: real stores (SQLite, PostgreSQL), a controllable clock, and real signing keys."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from gateway.api import RelationalStore
from gateway_plugins.stores.postgres import PostgresStore
from gateway_plugins.stores.sqlite import SqliteStore
from tests.plugins.auth.material import Clock, SigningKey


@pytest.fixture
def clock() -> Clock:
    return Clock()


@dataclass(frozen=True)
class StoreTarget:
    """Where the keys live: a SQLite file, or a fresh PostgreSQL database (one per test)."""

    dialect: str
    location: str

    def open(self) -> RelationalStore:
        if self.dialect == "sqlite":
            return SqliteStore(Path(self.location))
        return PostgresStore(self.location, min_size=0, max_size=4)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> StoreTarget:
    if request.param == "sqlite":
        return StoreTarget("sqlite", str(tmp_path / "auth.sqlite3"))
    return StoreTarget("postgres", request.getfixturevalue("postgres_db"))


@pytest.fixture
async def open_store(store_target: StoreTarget) -> AsyncIterator[Callable[[], RelationalStore]]:
    """Opens stores on the test's database (several may be open at once, as after a restart)."""
    opened: list[RelationalStore] = []

    def open_() -> RelationalStore:
        opened.append(store_target.open())
        return opened[-1]

    try:
        yield open_
    finally:
        for store in opened:
            await store.close()


@pytest.fixture
def store(open_store: Callable[[], RelationalStore]) -> RelationalStore:
    """A real relational store, SQLite and (marked ``postgres``) PostgreSQL."""
    return open_store()


@pytest.fixture(scope="session")
def rsa_key() -> SigningKey:
    return SigningKey(rsa.generate_private_key(public_exponent=65537, key_size=2048), kid="rsa-1")


@pytest.fixture(scope="session")
def other_rsa_key() -> SigningKey:
    return SigningKey(rsa.generate_private_key(public_exponent=65537, key_size=2048), kid="rsa-2")


@pytest.fixture(scope="session")
def ec_key() -> SigningKey:
    return SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="ec-1")


@pytest.fixture(scope="session")
def ed_key() -> SigningKey:
    return SigningKey(ed25519.Ed25519PrivateKey.generate(), kid="ed-1")
