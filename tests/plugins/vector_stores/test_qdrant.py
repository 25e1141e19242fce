"""What is particular to the ``qdrant`` store: its config, what it asks a server for, and how it fails when the
server is unreachable, silent or broken (always a clear :class:`ProviderUnavailable` within the timeout)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from qdrant_client import models

from gateway.api import ProviderContext, ProviderUnavailable, VectorPoint
from gateway_plugins.vector_stores.common import decode_name, encode_name
from gateway_plugins.vector_stores.qdrant import QdrantStore, create_qdrant_store
from gateway_plugins.vector_stores.qdrant_config import QdrantConfig, collection_settings, search_params

pytestmark = [
    pytest.mark.filterwarnings("ignore:Payload indexes have no effect in the local Qdrant:UserWarning"),
    pytest.mark.filterwarnings("ignore:Local mode performs exact:UserWarning"),
]


def _context(config: QdrantConfig, data_dir: Path) -> ProviderContext:
    def no_provider(kind: str, name: str | None = None) -> object:
        raise AssertionError(f"unexpected provider lookup {kind}/{name}")

    return ProviderContext("vector_store", "qdrant", config, data_dir, no_provider)


# -- loopback endpoints that fail in different ways ----------------------------------------------------------------


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        server.close()


@pytest.fixture
def broken_port() -> Iterator[int]:
    """A loopback port whose server answers every request with an HTTP 503 and an HTML body."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()
    body = b"<html>upstream down</html>"
    response = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(response)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        server.close()


def _remote(port: int, **extra: object) -> QdrantStore:
    config = QdrantConfig(url=f"http://127.0.0.1:{port}", timeout=1, check_compatibility=False, **extra)
    return QdrantStore(config)


@pytest.mark.anyio
@pytest.mark.parametrize("prefer_grpc", [False, True], ids=["rest", "grpc"])
async def test_an_unreachable_server_is_a_clear_error_at_once(closed_port: int, prefer_grpc: bool) -> None:
    store = _remote(closed_port, prefer_grpc=prefer_grpc, grpc_port=closed_port)
    try:
        started = time.monotonic()
        with pytest.raises(ProviderUnavailable) as caught:
            await store.ensure_collection("c", dimension=4)
        assert time.monotonic() - started < 3.5  # refused: no waiting beyond the 1 s timeout (+ slack)
        message = str(caught.value)
        assert message.startswith("vector_store/qdrant: cannot use the Qdrant server at http://127.0.0.1:")
        assert str(closed_port) in message
    finally:
        await store.close()


@pytest.mark.anyio
@pytest.mark.parametrize("prefer_grpc", [False, True], ids=["rest", "grpc"])
async def test_a_silent_server_times_out_instead_of_hanging(silent_port: int, prefer_grpc: bool) -> None:
    store = _remote(silent_port, prefer_grpc=prefer_grpc, grpc_port=silent_port)
    try:
        for call in (store.list_collections(), store.query("c", [1.0, 0.0])):
            started = time.monotonic()
            with pytest.raises(ProviderUnavailable, match="cannot use the Qdrant server at"):
                await call
            assert time.monotonic() - started < 4.5  # timeout = 1 s; the backstop is 3 s
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_broken_server_answer_is_reported_with_its_status(broken_port: int) -> None:
    store = _remote(broken_port)
    try:
        with pytest.raises(ProviderUnavailable, match="HTTP 503"):
            await store.count("c")
    finally:
        await store.close()


def test_config_from_toml_shape_keeps_the_key_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_QDRANT_KEY", "s3cret-key")
    config = QdrantConfig.model_validate(
        {"url": "https://qdrant.example:6333", "api_key": {"env": "TEST_QDRANT_KEY"}, "timeout": 5, "hnsw_m": 32}
    )
    assert config.api_key is not None and config.api_key.get_secret_value() == "s3cret-key"
    assert "s3cret-key" not in repr(config)
    assert config.target() == "the Qdrant server at https://qdrant.example:6333"
    monkeypatch.delenv("TEST_QDRANT_KEY")
    assert QdrantConfig.model_validate({"api_key": {"env": "TEST_QDRANT_KEY"}}).api_key is None


@pytest.mark.parametrize(
    "table",
    [
        {"url": "http://x", "path": "/tmp/q"},
        {"location": ":memory:", "url": "http://x"},
        {"location": "/some/where"},
        {"unknown": 1},
        {"timeout": 0},
        {"oversampling": 0.5},
        {"collection_prefix": "bad/prefix"},
    ],
    ids=repr,
)
def test_bad_config_is_refused(table: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        QdrantConfig.model_validate(table)


def test_collections_are_created_with_hnsw_int8_quantization_and_cosine() -> None:
    config = QdrantConfig(hnsw_m=24, hnsw_ef_construct=200, vectors_on_disk=True, replication_factor=2)
    settings = collection_settings(config, 384)
    assert settings["vectors_config"] == models.VectorParams(size=384, distance=models.Distance.COSINE, on_disk=True)
    assert settings["hnsw_config"].m == 24 and settings["hnsw_config"].ef_construct == 200
    scalar = settings["quantization_config"].scalar
    assert scalar.type == models.ScalarType.INT8 and scalar.quantile == 0.99 and scalar.always_ram is True
    assert settings["on_disk_payload"] is True and settings["replication_factor"] == 2
    params = search_params(config)
    assert params.quantization == models.QuantizationSearchParams(rescore=True, oversampling=2.0)
    assert "quantization_config" not in collection_settings(QdrantConfig(quantization=False), 384)
    assert search_params(QdrantConfig(quantization=False)).quantization is None


@pytest.mark.parametrize("name", ["gim__local-all-minilm-l6-v2-384", "a/b", "ünï", "x--00", ".dot", "sp ace", "A.b_c"])
def test_collection_names_encode_reversibly_into_server_safe_names(name: str) -> None:
    encoded = encode_name(name)
    assert decode_name(encoded) == name
    assert not set(encoded) & set('<>:"/\\|?* ') and not encoded.startswith(".")
    with pytest.raises(ValueError):
        encode_name("é" * 200)


@pytest.mark.anyio
async def test_a_relative_local_path_lives_in_the_provider_data_dir(fast_tmp_path: Path) -> None:
    store = create_qdrant_store(_context(QdrantConfig(path=Path("local")), fast_tmp_path))
    try:
        await store.ensure_collection("c", dimension=2)
        await store.upsert("c", [VectorPoint("6f1c1e4e-3b8a-4f5e-9d2a-0c1b2a3d4e5f", [1.0, 0.0])])
        assert (fast_tmp_path / "local").is_dir()
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_local_folder_in_use_fails_at_creation(fast_tmp_path: Path) -> None:
    first = QdrantStore(QdrantConfig(path=fast_tmp_path))
    try:
        with pytest.raises(ProviderUnavailable, match="is in use by another process"):
            QdrantStore(QdrantConfig(path=fast_tmp_path))
    finally:
        await first.close()
    second = QdrantStore(QdrantConfig(path=fast_tmp_path))  # released by close
    await second.close()
