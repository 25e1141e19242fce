"""The ``local`` embedder: the real all-MiniLM-L6-v2 on onnxruntime, checked against sentence-transformers."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import anyio
import numpy as np
import onnx
import pytest
from structlog.testing import capture_logs
from tokenizers import Tokenizer

from gateway.api import Embedder, ProviderUnavailable
from gateway.contracts.embedder_contract import EmbedderContract
from gateway_plugins.embedders import local as local_module
from gateway_plugins.embedders.config import Precision
from gateway_plugins.embedders.local import LocalEmbedder, LocalEmbedderConfig
from gateway_plugins.embedders.model_files import find_model_dir

REFERENCE = Path(__file__).with_name("data") / "minilm_reference.json"


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared by the modules of a session, so the graph is built once."""
    return tmp_path_factory.getbasetemp() / "local-embedder-cache"


@pytest.fixture(scope="module")
def local_embedder(graph_cache: Path) -> LocalEmbedder:
    """The default: int8 weights."""
    return LocalEmbedder.load(LocalEmbedderConfig(), cache_dir=graph_cache)


@pytest.fixture(scope="module")
def fp32_embedder(graph_cache: Path) -> LocalEmbedder:
    return LocalEmbedder.load(LocalEmbedderConfig(precision="fp32"), cache_dir=graph_cache)


class TestLocalEmbedderContract(EmbedderContract):
    @pytest.fixture
    def embedder(self, local_embedder: LocalEmbedder) -> Embedder:
        return local_embedder


class TestFp32LocalEmbedderContract(EmbedderContract):
    @pytest.fixture
    def embedder(self, fp32_embedder: LocalEmbedder) -> Embedder:
        return fp32_embedder


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def reference_items() -> tuple[list[str], np.ndarray]:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))["items"]
    return [item["text"] for item in reference], np.asarray([item["vector"] for item in reference], np.float32)


def test_fp32_matches_sentence_transformers(fp32_embedder: LocalEmbedder) -> None:
    """Vectors equal the reference implementation's (tokenisation, truncation at 256, mean pooling, L2)."""
    texts, expected = reference_items()
    got = fp32_embedder.embed_sync(texts)
    assert np.abs(got - expected).max() < 1e-5
    one_by_one = np.concatenate([fp32_embedder.embed_sync([text]) for text in texts])
    assert np.abs(one_by_one - expected).max() < 1e-5


def test_int8_stays_close_to_sentence_transformers(local_embedder: LocalEmbedder) -> None:
    """Per-channel int8 weights keep each reference vector close to the exact one (measured: cosine 0.980-0.996
    here, 0.988-0.999 over the evaluation set's error reports), and similarities between texts move little."""
    texts, expected = reference_items()
    got = local_embedder.embed_sync(texts)
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() >= 0.97 and cosines.mean() >= 0.985
    assert np.abs(expected @ expected.T - got @ got.T).max() < 0.05


def test_int8_vectors_do_not_depend_on_what_a_text_is_embedded_with(local_embedder: LocalEmbedder) -> None:
    """Activation scales are per pass, so each text gets a pass of its own: alone, in a batch, in another order,
    the vector is bit for bit the same."""
    texts, _ = reference_items()
    together = local_embedder.embed_sync(texts)
    one_by_one = np.concatenate([local_embedder.embed_sync([text]) for text in texts])
    reversed_order = local_embedder.embed_sync(texts[::-1])[::-1]
    assert np.array_equal(together, one_by_one)
    assert np.array_equal(together, reversed_order)


def test_int8_sessions_keep_residual_add_and_layer_norm_apart(
    tmp_path: Path, graph_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime would fuse them into its skip + layer norm kernel, the slower choice here (``UNFUSED``)."""
    optimized = tmp_path / "optimized.onnx"
    plain_options = local_module._session_options

    def recording_options() -> object:
        options = plain_options()
        options.optimized_model_filepath = str(optimized)
        return options

    monkeypatch.setattr(local_module, "_session_options", recording_options)
    LocalEmbedder.load(LocalEmbedderConfig(precision="int8"), cache_dir=graph_cache)
    operators = {node.op_type for node in onnx.load(str(optimized), load_external_data=False).graph.node}
    assert "SkipLayerNormalization" not in operators
    assert {"LayerNormalization", "DynamicQuantizeMatMul"} <= operators  # the int8 graph, optimized


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_parallel_passes_give_the_same_vectors_as_one_worker(graph_cache: Path, precision: Precision) -> None:
    texts, _ = reference_items()
    texts = texts * 3  # more texts than workers and than one pass holds
    serial = LocalEmbedder.load(LocalEmbedderConfig(threads=1, batch_size=4, precision=precision), graph_cache)
    parallel = LocalEmbedder.load(LocalEmbedderConfig(threads=3, batch_size=4, precision=precision), graph_cache)
    expected = serial.embed_sync(texts)
    same = np.array_equal if precision == "int8" else lambda a, b: np.abs(a - b).max() < 1e-6
    assert same(parallel.embed_sync(texts), expected)

    async def from_many_tasks() -> list[list[list[float]]]:
        results: list[list[list[float]]] = [[] for _ in range(6)]

        async def one(n: int) -> None:
            results[n] = await parallel.embed(texts[n::6], task="document")

        async with anyio.create_task_group() as group:
            for n in range(6):
                group.start_soon(one, n)
        return results

    try:
        for n, vectors in enumerate(anyio.run(from_many_tasks)):
            assert same(np.asarray(vectors, dtype=np.float32), expected[n::6])
    finally:
        anyio.run(parallel.aclose)
        anyio.run(serial.aclose)


class PassRecorder:
    """Stands in for the onnxruntime session: records how many passes run at once and can fail one of them.
    With ``rendezvous``, each pass waits until that many passes are running, so a test that passes proves they
    ran side by side (a serial embedder would break the barrier)."""

    def __init__(self, *, rendezvous: int = 0, fail_pass: int = 0, seconds: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._barrier = threading.Barrier(rendezvous) if rendezvous else None
        self._fail_pass = fail_pass
        self._seconds = seconds
        self.running = self.most = self.passes = 0

    def get_outputs(self) -> list[SimpleNamespace]:
        return [SimpleNamespace(shape=["batch", 4])]

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self._lock:
            self.running += 1
            self.passes += 1
            number, self.most = self.passes, max(self.most, self.running)
        try:
            if self._barrier is not None:
                self._barrier.wait(timeout=10)
            if number == self._fail_pass:
                raise RuntimeError("this pass fails")
            time.sleep(self._seconds)
            return [np.full((feeds["input_ids"].shape[0], 4), 0.5, dtype=np.float32)]
        finally:
            with self._lock:
                self.running -= 1


def recorded(session: PassRecorder, threads: int) -> LocalEmbedder:
    tokenizer = Tokenizer.from_file(str(find_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    return LocalEmbedder(session, tokenizer, LocalEmbedderConfig(threads=threads))  # type: ignore[arg-type]


def test_a_call_runs_its_passes_side_by_side() -> None:
    session = PassRecorder(rendezvous=3)
    embedder = recorded(session, threads=3)
    try:
        assert embedder.embed_sync([f"error {n}" for n in range(9)]).shape == (9, 4)
    finally:
        anyio.run(embedder.aclose)
    assert (session.passes, session.most) == (9, 3), "int8: one pass per text, three at a time"


def test_passes_of_concurrent_calls_never_exceed_threads() -> None:
    session = PassRecorder()
    embedder = recorded(session, threads=2)

    async def one_call() -> None:
        await embedder.embed([f"error {n}" for n in range(6)], task="document")

    async def four_calls() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(one_call)

    try:
        anyio.run(four_calls)
    finally:
        anyio.run(embedder.aclose)
    assert session.passes == 24 and session.most <= 2


def test_a_failed_pass_fails_its_call_only() -> None:
    session = PassRecorder(fail_pass=2)
    embedder = recorded(session, threads=2)
    try:
        with pytest.raises(RuntimeError, match="this pass fails"):
            embedder.embed_sync([f"error {n}" for n in range(5)])
        assert embedder.embed_sync(["the next call"]).shape == (1, 4)
    finally:
        anyio.run(embedder.aclose)


def test_a_cancelled_call_returns_at_once_and_runs_no_more_passes() -> None:
    """The embedder chain's deadlines cancel a slow call; it must not hold the caller, nor the embedding threads,
    for the rest of its passes (40 of 0.1 s each here)."""
    session = PassRecorder(seconds=0.1)
    embedder = recorded(session, threads=1)

    async def cut_short() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError), anyio.fail_after(0.3):
            await embedder.embed([f"error {n}" for n in range(40)], task="document")
        return time.monotonic() - started

    try:
        took = anyio.run(cut_short)
        time.sleep(0.5)  # a pass under way when the call was cancelled ends; no other starts
        passes = session.passes
        time.sleep(0.5)
        assert session.passes == passes
        assert embedder.embed_sync(["the next call"]).shape == (1, 4)
    finally:
        anyio.run(embedder.aclose)
    assert took < 2 and passes < 15, (took, passes)


def test_a_closed_embedder_refuses_calls() -> None:
    embedder = recorded(PassRecorder(), threads=2)
    anyio.run(embedder.aclose)
    with pytest.raises(ProviderUnavailable, match="closed"):
        embedder.embed_sync(["too late"])


def test_related_sentences_are_closer_than_unrelated_ones(local_embedder: LocalEmbedder) -> None:
    query, related, unrelated = local_embedder.embed_sync(
        ["How do I reset my password", "password reset steps", "The tide comes in twice a day at the harbour"]
    )
    assert cosine(query, related) > 0.6
    assert cosine(query, related) > cosine(query, unrelated) + 0.4


def test_same_error_in_other_words_ranks_first(local_embedder: LocalEmbedder) -> None:
    corpus = [
        "ModuleNotFoundError: No module named 'numpy'",
        "psycopg.OperationalError: connection refused on port 5432",
        "KeyError: 'user_id' in handler",
        "SSL: CERTIFICATE_VERIFY_FAILED certificate verify failed: unable to get local issuer certificate",
    ]
    queries = [
        "ImportError no module called numpy",
        "cannot connect to postgres server, connection refused",
        "python dict raises KeyError for missing key user_id",
        "ssl certificate verification failed",
    ]
    documents = local_embedder.embed_sync(corpus)
    asked = local_embedder.embed_sync(queries)
    assert (np.argmax(asked @ documents.T, axis=1) == np.arange(len(queries))).all()


def test_async_embed_matches_sync(local_embedder: LocalEmbedder) -> None:
    texts = ["first error", "second, longer error message with more words"]
    got = anyio.run(lambda: local_embedder.embed(texts, task="query"))
    assert np.abs(np.asarray(got) - local_embedder.embed_sync(texts)).max() < 1e-6


def test_a_single_string_is_refused(local_embedder: LocalEmbedder) -> None:
    with pytest.raises(TypeError):
        anyio.run(lambda: local_embedder.embed("one string", task="document"))  # type: ignore[arg-type]


def test_declares_its_identity(local_embedder: LocalEmbedder, fp32_embedder: LocalEmbedder) -> None:
    assert local_embedder.id == "local/all-MiniLM-L6-v2-int8/384"
    assert fp32_embedder.id == "local/all-MiniLM-L6-v2/384", "int8 and fp32 vectors never share a collection"
    assert local_embedder.dimension == fp32_embedder.dimension == 384
    assert local_embedder.max_batch == 32


def test_max_length_truncates_tokens(graph_cache: Path) -> None:
    """With 16 tokens, [CLS] + 14 words + [SEP] is all the model sees: more words change nothing."""
    short = LocalEmbedder.load(LocalEmbedderConfig(max_length=16, batch_size=4), cache_dir=graph_cache)
    fourteen, many, fewer = short.embed_sync(["error " * 14, "error " * 14 + "timeout " * 50, "error " * 13])
    assert np.abs(fourteen - many).max() < 1e-6
    assert np.abs(fourteen - fewer).max() > 1e-4
    assert short.max_batch == 4


def test_graph_is_built_once_then_reused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = cache / "all-MiniLM-L6-v2-int8.0123456789abcdef.onnx"
    stale.write_bytes(b"a build of older weights")
    first = LocalEmbedder.load(cache_dir=cache)
    (cached,) = cache.iterdir()
    assert cached != stale and cached.suffix == ".onnx", "stale builds and temporary files are cleaned up"
    LocalEmbedder.load(LocalEmbedderConfig(precision="fp32"), cache_dir=cache)
    assert len(list(cache.iterdir())) == 2 and cached.exists(), "the other precision's graph is not stale"
    stamp = cached.stat().st_mtime_ns
    second = LocalEmbedder.load(cache_dir=cache)
    assert cached.stat().st_mtime_ns == stamp, "a warm load must not rebuild the graph"
    texts = ["cache check"]
    assert np.abs(first.embed_sync(texts) - second.embed_sync(texts)).max() < 1e-6


def test_corrupt_cache_is_rebuilt(tmp_path: Path, graph_cache: Path, local_embedder: LocalEmbedder) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (good,) = graph_cache.glob("*-int8.*.onnx")
    corrupt = cache / good.name
    corrupt.write_bytes(b"not an onnx graph")
    rebuilt = LocalEmbedder.load(cache_dir=cache)
    assert corrupt.stat().st_size == good.stat().st_size
    texts = ["rebuilt after corruption"]
    assert np.abs(rebuilt.embed_sync(texts) - local_embedder.embed_sync(texts)).max() < 1e-6


def test_unwritable_cache_still_loads(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    with capture_logs() as logs:
        embedder = LocalEmbedder.load(cache_dir=blocker / "cache")
    assert any(entry["event"] == "embedder.local.cache_unwritable" for entry in logs)
    texts = ["served from memory"]
    assert np.abs(embedder.embed_sync(texts) - local_embedder.embed_sync(texts)).max() < 1e-6


def test_loads_without_a_cache_dir(local_embedder: LocalEmbedder) -> None:
    uncached = LocalEmbedder.load(LocalEmbedderConfig(threads=1))
    texts = ["no cache directory"]
    assert np.abs(uncached.embed_sync(texts) - local_embedder.embed_sync(texts)).max() < 1e-6
