"""The shared ``qdrant-edge`` store within one process: hand-over, where the socket lives and who may use it, what a
client refuses to send, and a server that meets a confused peer."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import uuid
from pathlib import Path

import anyio
import numpy as np
import pytest

from gateway.api import VectorPoint
from gateway.contracts.vector_store_contract import COLLECTION, DIM, make_points
from gateway_plugins.vector_stores import edge_wire, local_socket
from gateway_plugins.vector_stores.common import StoreClosed
from gateway_plugins.vector_stores.edge import QdrantEdgeConfig
from gateway_plugins.vector_stores.edge_shared import SharedEdgeStore
from gateway_plugins.vector_stores.edge_wire import OwnerUnavailable

pytestmark = pytest.mark.anyio


async def test_closing_the_owner_hands_the_store_to_its_client(fast_tmp_path: Path) -> None:
    owner = SharedEdgeStore(fast_tmp_path)
    client = SharedEdgeStore(fast_tmp_path)
    try:
        assert owner.is_owner and not client.is_owner and client.owner_pid == os.getpid()
        await client.ensure_collection(COLLECTION, dimension=DIM)
        await client.upsert(COLLECTION, make_points(5))
        await owner.close()
        assert await client.count(COLLECTION) == 5  # the call that met the closed socket took the store over
        assert client.is_owner
        with pytest.raises(StoreClosed):
            await owner.count(COLLECTION)
    finally:
        await client.close()
        await owner.close()


async def test_a_long_directory_gets_its_socket_in_a_private_temporary_directory(fast_tmp_path: Path) -> None:
    directory = fast_tmp_path / ("deep-" * 12) / "providers" / "vector_store" / "qdrant-edge"
    owner = SharedEdgeStore(directory)
    try:
        path = owner.socket
        assert not path.is_relative_to(directory) and len(os.fsencode(path)) <= local_socket.MAX_PATH_BYTES
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        client = SharedEdgeStore(directory)
        try:
            assert client.socket == path and not client.is_owner
            await client.ensure_collection("c", dimension=2)
            assert await owner.list_collections() == ["c"]
        finally:
            await client.close()
    finally:
        await owner.close()
    assert not path.exists()


async def test_a_socket_directory_other_users_may_enter_is_refused(fast_tmp_path: Path) -> None:
    owner = SharedEdgeStore(fast_tmp_path)
    try:
        os.chmod(fast_tmp_path / "run", 0o755)
        with pytest.raises(OwnerUnavailable, match="may be entered by other users"):
            SharedEdgeStore(fast_tmp_path)
    finally:
        await owner.close()


async def test_what_json_cannot_hold_is_refused_before_it_is_sent(fast_tmp_path: Path) -> None:
    owner = SharedEdgeStore(fast_tmp_path)
    client = SharedEdgeStore(fast_tmp_path)
    try:
        await client.ensure_collection("c", dimension=2)
        point_id = str(uuid.uuid4())
        with pytest.raises(ValueError, match="cannot be encoded"):
            await client.upsert("c", [VectorPoint(point_id, [1.0, 0.0], {"big": 2**70})])
        with pytest.raises(ValueError, match="NaN"):
            await client.query("c", [float("nan"), 1.0])
        with pytest.raises(ValueError, match="limit and offset"):
            await client.query("c", [1.0, 0.0], limit=-1)
        await client.upsert("c", [VectorPoint(point_id, np.array([1.0, 0.0], dtype=np.float32)[::1], {"n": 1})])
        strided = np.array([[0.0, 1.0], [0.0, 0.0]])[:, 1]  # not contiguous: still a valid vector
        assert (await client.query("c", strided[::-1]))[0].id == point_id
        assert await client.count("c") == 1
    finally:
        await client.close()
        await owner.close()


async def test_index_builds_and_collection_info_go_through_the_owner(fast_tmp_path: Path) -> None:
    config = QdrantEdgeConfig(optimize_threshold_kb=0, indexing_threshold_kb=1)
    owner = SharedEdgeStore(fast_tmp_path, config)
    client = SharedEdgeStore(fast_tmp_path, config)
    try:
        await client.ensure_collection("c", dimension=DIM, indexed_fields={"lang": "keyword"})
        await client.upsert("c", make_points(200))
        assert (await client.info("c")).indexed_vectors == 0
        assert await client.optimize("c") is True
        info = await client.info("c")
        assert info.points == 200 and info.indexed_vectors == 200 and info.payload_indexes == {"lang": "keyword"}
    finally:
        await client.close()
        await owner.close()


def test_a_client_works_from_one_event_loop_after_another(fast_tmp_path: Path) -> None:
    owner = SharedEdgeStore(fast_tmp_path)
    client = SharedEdgeStore(fast_tmp_path)
    try:

        async def first() -> None:
            await client.ensure_collection("c", dimension=DIM)
            await client.upsert("c", make_points(3))

        async def second() -> int:
            return await client.count("c")

        anyio.run(first)
        assert anyio.run(second) == 3  # a new connection for the new loop
    finally:
        anyio.run(client.close)
        anyio.run(owner.close)
    with pytest.raises(StoreClosed):
        anyio.run(client.count, "c")


async def test_the_server_answers_a_confused_peer_and_keeps_serving_the_others(fast_tmp_path: Path) -> None:
    owner = SharedEdgeStore(fast_tmp_path)
    client = SharedEdgeStore(fast_tmp_path)
    try:
        await client.ensure_collection("c", dimension=DIM)
        reader, writer = await asyncio.open_unix_connection(str(owner.socket))
        hello = await local_socket.read_frame(reader)
        assert edge_wire.check_hello(hello, fast_tmp_path) == os.getpid()
        writer.write(local_socket.encode_frame({"id": 7, "op": "drop_everything", "args": {}}))
        writer.write(local_socket.encode_frame({"id": 8, "op": "count", "args": {"name": "c"}}))  # no filter
        answers = {a["id"]: a for a in [await local_socket.read_frame(reader) for _ in range(2)]}
        assert answers[7]["error"] == {"kind": "value", "message": "unknown vector store operation 'drop_everything'"}
        assert answers[8]["error"] == {"kind": "value", "message": "a count request lacks filter"}
        writer.write(b"\xff\xff\xff\xff garbage")  # a frame length past the limit: the connection is dropped
        assert await reader.read() == b""
        writer.close()
        assert await client.count("c") == 0  # the other connection never noticed
    finally:
        await client.close()
        await owner.close()


def test_an_owner_of_another_protocol_or_directory_is_refused(tmp_path: Path) -> None:
    hello = edge_wire.hello(tmp_path)
    assert edge_wire.check_hello(hello, tmp_path) == os.getpid()
    with pytest.raises(edge_wire.IncompatibleOwner, match="protocol"):
        edge_wire.check_hello({**hello, "protocol": edge_wire.PROTOCOL + 1}, tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(edge_wire.IncompatibleOwner, match="another directory"):
        edge_wire.check_hello(hello, other)


def test_the_peer_is_this_user(tmp_path: Path) -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert local_socket.peer_uid(left) in (None, os.getuid())
        local_socket.check_peer(left)


async def test_a_frame_past_the_limit_is_refused_unread() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data((local_socket.MAX_FRAME_BYTES + 1).to_bytes(4, "big"))
    with pytest.raises(local_socket.FrameError, match="exceeds the limit"):
        await local_socket.read_frame(reader)
    reader = asyncio.StreamReader()
    reader.feed_data(b"\x00\x00\x00\x03abc")
    with pytest.raises(local_socket.FrameError, match="not JSON"):
        await local_socket.read_frame(reader)
