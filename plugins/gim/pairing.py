"""The relational store and the vector store of one issue memory are a pair: this checks, at start-up, that the
vector store configured is the one the database's vectors were written to.

The embedded vector store (Qdrant Edge) lives in each gateway's data dir. Two gateways sharing one PostgreSQL, each
with its own embedded store, would each see only the vectors written through it: duplicates submitted to one would
not be found by the other (two masters for one issue), and each start-up audit would "repair" the other's records.
So the first start on a database pairs it with its vector store: a random token in ``gim_state``, and a marker
collection named after it in the vector store. A later start whose vector store does not carry the database's marker
(another gateway's embedded store, or one that was lost or replaced) is refused, saying what to do. Every gateway
sharing a database must share its vector store too (a Qdrant server); a vector store that was lost or replaced on
purpose is adopted with ``[plugins.gim] adopt_vector_store = true`` for one start: it is paired afresh and the
audit re-embeds what it lacks. The check runs under the dedup lock, so two first starts cannot pair twice.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import structlog

from gateway.api import ConfigError

if TYPE_CHECKING:
    from gateway_plugins.gim.core import GimCore

log = structlog.get_logger(__name__)

__all__ = ["MARKER_PREFIX", "check_pairing"]

MARKER_PREFIX = "gim_pairing_"
_PAIRED = "vector_store_pairing"
_PENDING = "vector_store_pairing_pending"  # a pairing begun: its marker may not be written yet

_UPSERT = (
    "INSERT INTO gim_state (name, value) VALUES (:name, :value) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)


async def check_pairing(core: GimCore, *, adopt: bool) -> None:
    """Refuse (``ConfigError``) a vector store that is not the database's pair, unless ``adopt``; pair a fresh one,
    and finish a first pairing a stopped start left half done."""
    paired, pending = await _state(core, _PAIRED), await _state(core, _PENDING)
    markers = {
        name.removeprefix(MARKER_PREFIX)
        for name in await core.vectors.store.list_collections()
        if name.startswith(MARKER_PREFIX)
    }
    if paired is not None and paired in markers:
        if adopt:
            log.warning(
                "gim.adopt_vector_store_not_needed",
                why="this vector store is the database's pair already: remove [plugins.gim] adopt_vector_store",
            )
        return
    if paired is None and pending is not None and markers <= {pending}:  # a first pairing, interrupted
        await _pair(core, pending, markers)
        return
    if adopt or (paired is None and not markers):
        await _pair(core, None, markers)
        if adopt:
            log.warning("gim.vector_store_adopted", previous_pairing=paired)
        return
    if paired is None:
        problem = "this vector store already holds the issue memory of another database"
    else:
        problem = (
            "this vector store is not the one this database's vectors were written to: another gateway's embedded "
            "store (each gateway keeps its own in its data dir), or one that was lost or replaced"
        )
    raise ConfigError(
        f"gim: {problem}. Every gateway that shares a database must share its vector store too (a Qdrant server: "
        'providers.vector_store = "qdrant"), or duplicates go unseen. If this vector store is the right one (the '
        "old one was lost or replaced on purpose), set [plugins.gim] adopt_vector_store = true for one start: it is "
        "paired with the database and the issues' vectors are embedded into it again"
    )


async def _state(core: GimCore, name: str) -> str | None:
    row = await core.store.fetch_one("SELECT value FROM gim_state WHERE name = :name", {"name": name})
    return None if row is None else f"{int(row['value']):016x}"


async def _pair(core: GimCore, token: str | None, markers: set[str]) -> None:
    """Pair with ``token`` (a pending one), or a new token: recorded as pending, marked in the vector store, then
    confirmed, so a start stopped in between leaves a pairing the next start can finish."""
    if token is None:
        token = f"{secrets.randbits(62):016x}"
        async with core.store.transaction() as tx:
            await tx.execute(_UPSERT, {"name": _PENDING, "value": int(token, 16)})
    await core.vectors.store.ensure_collection(MARKER_PREFIX + token, dimension=1)
    for old in markers - {token}:  # an adopted store's marker of another pairing
        await core.vectors.store.delete_collection(MARKER_PREFIX + old)
    await core.vectors.store.flush()
    async with core.store.transaction() as tx:
        await tx.execute(_UPSERT, {"name": _PAIRED, "value": int(token, 16)})
        await tx.execute("DELETE FROM gim_state WHERE name = :name", {"name": _PENDING})
