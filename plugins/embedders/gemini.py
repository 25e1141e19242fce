"""The ``gemini`` embedder: ``gemini-embedding-001`` through the official ``google-genai`` SDK.

Documents are embedded as ``RETRIEVAL_DOCUMENT``, queries as ``RETRIEVAL_QUERY``. Texts go out in batches of at
most 100 (one ``batchEmbedContents`` call each); every call has a hard timeout and is retried with exponential
backoff and jitter on 408/429/5xx and transport errors (honouring the server's ``RetryInfo`` delay when it
sends one, up to the backoff cap), never on other 4xx. Whatever still fails raises
:class:`gateway.api.ProviderUnavailable`, so the embedder chain falls back. Vectors are L2-normalised here:
Gemini's truncated (Matryoshka) dimensions are not unit length.

The SDK's own retries are off (its default): tenacity here owns them, so attempts are counted once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import aiohttp
import anyio
import httpx
import numpy as np
import structlog
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from gateway.api import EmbedTask, ProviderContext, ProviderUnavailable, api_key
from gateway_plugins.embedders.config import NO_KEY, GeminiEmbedderConfig

# Which HTTP library the SDK's async client uses depends on what is installed (aiohttp when present, else httpx2,
# a drop-in httpx fork, else httpx): a connection failure of any of them is the service being unreachable.
_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (httpx.TransportError, aiohttp.ClientConnectionError)
try:
    import httpx2

    _TRANSPORT_ERRORS += (httpx2.TransportError,)
except ImportError:  # pragma: no cover - depends on the environment
    pass

log = structlog.get_logger(__name__)

TASK_TYPES: dict[str, str] = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}
RETRYABLE_4XX = frozenset({408, 429})  # request timeout, quota; every 5xx is retried too
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, genai_errors.APIError):
        return exc.code in RETRYABLE_4XX or exc.code >= 500
    return isinstance(exc, (TimeoutError, *_TRANSPORT_ERRORS))


def _server_retry_delay(exc: BaseException | None) -> float:
    """The ``google.rpc.RetryInfo`` delay a 429/503 carries (``"retryDelay": "13s"``), else 0."""
    body = getattr(exc, "details", None)
    error = body.get("error") if isinstance(body, dict) else None
    for detail in (error or {}).get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return 0.0


def _describe(exc: BaseException) -> str:
    """A short, key-free description of a failure."""
    if isinstance(exc, genai_errors.APIError):
        return f"HTTP {exc.code} {exc.status or ''}: {(exc.message or '')[:200]}".strip()
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


class GeminiEmbedder:
    """Embeds with the Gemini API. Raises :class:`ProviderUnavailable` at construction when no key is set."""

    def __init__(self, config: GeminiEmbedderConfig) -> None:
        key = api_key(config.api_key, "gemini", NO_KEY)
        self._config = config
        self._client = genai.Client(
            api_key=key,
            vertexai=False,
            http_options=types.HttpOptions(base_url=config.base_url, timeout=int(config.timeout_seconds * 1000)),
        )
        self._backoff = wait_exponential_jitter(
            initial=config.retry_initial_backoff_seconds,
            max=config.retry_max_backoff_seconds,
            jitter=config.retry_initial_backoff_seconds,
        )

    @property
    def id(self) -> str:
        return f"gemini/{self._config.model}/{self._config.output_dimensionality}"

    @property
    def dimension(self) -> int:
        return self._config.output_dimensionality

    @property
    def max_batch(self) -> int:
        return self._config.batch_size

    @property
    def max_input_chars(self) -> int:
        return self._config.max_input_chars

    async def embed(self, texts: Sequence[str], *, task: EmbedTask) -> list[list[float]]:
        """Unit vectors for ``texts``, in order, sent in batches of ``batch_size``."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        task_type = TASK_TYPES[task]
        cut, size = self._config.max_input_chars, self._config.batch_size
        vectors: list[list[float]] = []
        for start in range(0, len(texts), size):
            batch = [text[:cut] for text in texts[start : start + size]]
            vectors.extend(await self._embed_batch(batch, task_type))
        return vectors

    async def _embed_batch(self, batch: list[str], task_type: str) -> list[list[float]]:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._config.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            before_sleep=self._log_retry,
            reraise=True,
        )
        config = types.EmbedContentConfig(task_type=task_type, output_dimensionality=self._config.output_dimensionality)
        try:
            async for attempt in retrying:
                with attempt, anyio.fail_after(self._config.timeout_seconds):
                    response = await self._client.aio.models.embed_content(
                        model=self._config.model, contents=batch, config=config
                    )
        except (genai_errors.APIError, TimeoutError, *_TRANSPORT_ERRORS) as exc:
            attempts = retrying.statistics.get("attempt_number", 1)
            raise ProviderUnavailable("gemini", f"{_describe(exc)} (after {attempts} attempt(s))") from exc
        except (genai_errors.UnknownApiResponseError, ValueError) as exc:  # unparseable body
            raise ProviderUnavailable("gemini", f"malformed response: {_describe(exc)}") from exc
        return self._normalised(response, len(batch))

    def _normalised(self, response: types.EmbedContentResponse, expected: int) -> list[list[float]]:
        embeddings = response.embeddings or []
        values = [embedding.values or [] for embedding in embeddings]
        dimension = self._config.output_dimensionality
        if len(values) != expected or any(len(v) != dimension for v in values):
            lengths = sorted({len(v) for v in values})
            raise ProviderUnavailable(
                "gemini",
                f"malformed response: {len(values)} vectors (lengths {lengths}), wanted {expected} of {dimension}",
            )
        matrix = np.asarray(values, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise ProviderUnavailable("gemini", "malformed response: a zero or non-finite vector")
        return (matrix / norms).tolist()

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return min(max(self._backoff(state), _server_retry_delay(exc)), self._config.retry_max_backoff_seconds)

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "embedder.gemini.retry",
            embedder=self.id,
            attempt=state.attempt_number,
            error=_describe(exc) if exc else None,
            wait_seconds=round(state.next_action.sleep, 3) if state.next_action else None,
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP clients."""
        await self._client.aio.aclose()
        self._client.close()


def create_gemini_embedder(context: ProviderContext) -> GeminiEmbedder:
    """Provider factory for ``embedder/gemini`` (``ProviderUnavailable`` when no key is configured)."""
    config = context.config if isinstance(context.config, GeminiEmbedderConfig) else GeminiEmbedderConfig()
    return GeminiEmbedder(config)
