"""Refusing nested transactions: a clear error instead of a deadlock.

A task inside ``async with store.transaction()`` that calls ``store.transaction()`` or ``store.execute()`` again
would wait for itself (SQLite's single writer) or for a row lock its own transaction holds (PostgreSQL). The
guard marks the running context (and tasks started from it) as inside a transaction of a given store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ACTIVE: ContextVar[frozenset[int]] = ContextVar("gateway_store_transactions", default=frozenset())


class TransactionGuard:
    def __init__(self, store: object) -> None:
        self._id = id(store)

    def refuse_nesting(self) -> None:
        if self._id in _ACTIVE.get():
            raise RuntimeError(
                "transactions do not nest: inside `async with store.transaction() as tx`, use `tx` for every statement"
            )

    @contextmanager
    def active(self) -> Iterator[None]:
        token = _ACTIVE.set(_ACTIVE.get() | {self._id})
        try:
            yield
        finally:
            _ACTIVE.reset(token)
