"""Transactions used wrongly get a clear error: nested (instead of a deadlock), or after they ended.

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


class TransactionState:
    """What both stores' transaction objects refuse: a statement after the block ended (``finished``), or after an
    integrity error rolled the transaction back (``rolled_back``)."""

    def __init__(self) -> None:
        self.rolled_back = False
        self.finished = False

    def _check(self) -> None:
        if self.finished:
            raise RuntimeError("this transaction is over: use it only inside its `async with` block")
        if self.rolled_back:
            raise RuntimeError("this transaction was rolled back after an integrity error")
