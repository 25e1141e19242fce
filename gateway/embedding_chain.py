"""The embedder chain: the host's :class:`gateway.api.EmbeddingService` over the configured embedders.

``[providers] embedder = ["gemini", "local"]`` names the chain in order; the last link is the always-on
fallback. Documents are embedded by every available link (concurrently), so the fallback's index is always
complete and a failed link is reported in ``missing`` to be filled in later; the fallback must succeed or the
call fails with :class:`ServiceUnavailable`. A query is embedded by the first link that answers.

A short circuit breaker keeps an outage from costing a timeout on every call: after a link fails it is skipped
for ``retry_after_seconds``, then tried again. The fallback is never skipped (there is nothing after it), but it
has a deadline of its own (``fallback_deadline_seconds``, per task): one that hangs fails the call, not hangs it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import anyio
import structlog

from gateway.api import (
    ConfigError,
    DocumentEmbeddings,
    Embedder,
    EmbedTask,
    ProviderUnavailable,
    QueryEmbedding,
    ServiceUnavailable,
    checked_vectors,
)

log = structlog.get_logger(__name__)

DEFAULT_RETRY_AFTER_SECONDS = 30.0
DEFAULT_FALLBACK_DEADLINES: Mapping[EmbedTask, float | None] = {"query": 30.0, "document": 300.0}

ChainEntry = tuple[str, Embedder | ProviderUnavailable]
"""A configured link: its provider name and the built embedder, or why its factory could not build it."""


@dataclass
class _Link:
    name: str
    embedder: Embedder
    open_until: float = float("-inf")
    """While the clock is before this, the breaker is open and the link is skipped."""


def storage_key(embedder_id: str) -> str:
    """What stays of an embedder id in the names packs give its storage: letters (lower-cased) and digits."""
    return re.sub(r"[^a-z0-9]+", "-", embedder_id.lower()).strip("-")


class _Skipped(Exception):
    """Internal: a link did not produce vectors (reason given)."""


class EmbedderChain:
    """An ordered chain of embedders with fallback and a per-link circuit breaker.

    ``entries`` come in chain order as ``(provider name, embedder or ProviderUnavailable)`` — the host passes
    the exception a factory raised, so a link without a key is simply left out (the host logs why). The chain
    does not own the embedders: the host closes them with the other providers.

    Raises :class:`ConfigError` for an empty chain or a repeated name or id, and :class:`ServiceUnavailable`
    when the last link (the fallback) could not be built.
    """

    def __init__(
        self,
        entries: Sequence[ChainEntry],
        *,
        retry_after_seconds: float = DEFAULT_RETRY_AFTER_SECONDS,
        query_deadline_seconds: float | None = 5.0,
        document_grace_seconds: float | None = 10.0,
        fallback_deadline_seconds: Mapping[EmbedTask, float | None] = DEFAULT_FALLBACK_DEADLINES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not entries:
            raise ConfigError("[providers] embedder: the embedder chain is empty")
        if retry_after_seconds < 0:
            raise ConfigError("retry_after_seconds must not be negative")
        names = [name for name, _ in entries]
        if len(set(names)) != len(names):
            raise ConfigError(f"[providers] embedder: a name appears twice in {names}")
        fallback_name, fallback = entries[-1]
        if isinstance(fallback, ProviderUnavailable):
            raise ServiceUnavailable(
                f"the fallback embedder {fallback_name!r} is unavailable: {fallback.reason}",
                details={"embedder": fallback_name},
            )
        self._links: list[_Link] = []
        for name, entry in entries:
            if isinstance(entry, ProviderUnavailable):
                log.debug("embedder.unavailable", embedder=name, reason=entry.reason)
                continue
            self._links.append(_Link(name, entry))
        ids = [link.embedder.id for link in self._links]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"[providers] embedder: two links produce the same vectors ({ids})")
        by_key: dict[str, str] = {}
        for embedder_id in ids:
            other = by_key.setdefault(storage_key(embedder_id), embedder_id)
            if other != embedder_id:
                raise ConfigError(
                    f"[providers] embedder: the ids {other!r} and {embedder_id!r} differ only in case or punctuation; "
                    "packs name their vector collections after the id, so the two would share one: give one another id"
                )
        self._cooldown = retry_after_seconds
        self._query_deadline = query_deadline_seconds
        self._document_grace = document_grace_seconds
        self._fallback_deadline = dict(fallback_deadline_seconds)
        self._clock = clock

    @property
    def embedders(self) -> Sequence[Embedder]:
        """The available embedders, in chain order (the fallback last)."""
        return tuple(link.embedder for link in self._links)

    async def embed_documents(self, texts: Sequence[str]) -> DocumentEmbeddings:
        """Vectors from every available embedder; ``missing`` lists the ids that failed or were skipped."""
        texts = list(texts)
        results: dict[str, list[list[float]]] = {}
        missing: dict[str, str] = {}
        errors: list[Exception] = []
        fallback = self._links[-1]

        async def run(link: _Link) -> None:
            try:
                results[link.embedder.id] = await self._embed(link, texts, "document")
            except _Skipped as skipped:
                missing[link.embedder.id] = str(skipped)
            except Exception as exc:  # only the fallback lets errors through; re-raised unwrapped below
                errors.append(exc)

        async def run_within(link: _Link, scope: anyio.CancelScope) -> None:
            with scope:
                await run(link)
            if scope.cancelled_caught:  # the fallback had its vectors and the grace ran out: filled in later
                reason = f"no answer within {self._document_grace:g}s after the fallback's"
                self._trip(link, "document", reason, is_fallback=False)
                missing[link.embedder.id] = reason

        scopes = [anyio.CancelScope() for _ in self._links[:-1]]
        async with anyio.create_task_group() as group:
            for link, scope in zip(self._links[:-1], scopes, strict=True):
                group.start_soon(run_within, link, scope)
            await run(fallback)
            if self._document_grace is not None:  # the others get this much longer, then go without
                for scope in scopes:
                    scope.deadline = anyio.current_time() + self._document_grace
        if errors:
            raise errors[0]
        if fallback.embedder.id in missing:
            raise ServiceUnavailable(
                f"no embedder could embed the documents: {missing[fallback.embedder.id]}",
                details={"embedder": fallback.embedder.id},
            )
        ordered_missing = tuple(link.embedder.id for link in self._links if link.embedder.id in missing)
        vectors = {link.embedder.id: results[link.embedder.id] for link in self._links if link.embedder.id in results}
        (log.info if ordered_missing else log.debug)(
            "embedding.documents", count=len(texts), served=list(vectors), missing=list(ordered_missing)
        )
        return DocumentEmbeddings(vectors=vectors, missing=ordered_missing)

    async def embed_query(self, text: str, *, skip: Collection[str] = ()) -> QueryEmbedding:
        """The query vector of the first embedder that answers, passing over ``skip`` (never the fallback);
        ``skipped`` lists those that did not serve it."""
        skipped: list[str] = []
        reason = ""
        for link in self._links:
            if link.embedder.id in skip and link is not self._links[-1]:
                skipped.append(link.embedder.id)
                continue
            try:
                (vector,) = await self._embed(link, [text], "query")
            except _Skipped as failure:
                skipped.append(link.embedder.id)
                reason = str(failure)
                continue
            (log.info if skipped else log.debug)("embedding.query", served_by=link.embedder.id, skipped=skipped)
            return QueryEmbedding(embedder_id=link.embedder.id, vector=vector, skipped=tuple(skipped))
        raise ServiceUnavailable(
            f"no embedder could embed the query: {reason}", details={"embedder": self._links[-1].embedder.id}
        )

    async def _embed(self, link: _Link, texts: list[str], task: EmbedTask) -> list[list[float]]:
        """One link's vectors, or :class:`_Skipped` (breaker open, provider failure, or a broken answer)."""
        embedder = link.embedder
        is_fallback = link is self._links[-1]
        now = self._clock()
        if not is_fallback and now < link.open_until:
            reason = f"circuit open for {link.open_until - now:.1f}s more after a failure"
            log.info("embedder.skipped", embedder=embedder.id, task=task, reason=reason)
            raise _Skipped(reason)
        # A query waits for an earlier link at most this long (its own retries included), then falls back (documents
        # give the other links a grace period once the fallback has its vectors: see embed_documents). The fallback
        # has a deadline of its own: past it the call fails rather than hang.
        if is_fallback:
            deadline = self._fallback_deadline.get(task)
        else:
            deadline = self._query_deadline if task == "query" else None
        try:
            with anyio.fail_after(deadline):
                vectors = await embedder.embed(texts, task=task)
            vectors = checked_vectors(embedder, texts, vectors)
        except TimeoutError:
            reason = f"no answer within the {task} deadline of {deadline:g}s"
            self._trip(link, task, reason, is_fallback)
            raise _Skipped(reason) from None
        except ProviderUnavailable as exc:
            self._trip(link, task, exc.reason, is_fallback)
            raise _Skipped(exc.reason) from exc
        except Exception as exc:
            if is_fallback:
                raise  # a bug in the last resort is not an outage: let it surface with its traceback
            log.exception("embedder.failed", embedder=embedder.id, task=task)
            self._trip(link, task, f"{type(exc).__name__}: {exc}", is_fallback)
            raise _Skipped(f"{type(exc).__name__}: {exc}") from exc
        link.open_until = float("-inf")
        return vectors

    def _trip(self, link: _Link, task: EmbedTask, reason: str, is_fallback: bool) -> None:
        if not is_fallback:
            link.open_until = self._clock() + self._cooldown
        log.warning(
            "embedder.skipped",
            embedder=link.embedder.id,
            task=task,
            reason=reason,
            retry_in_seconds=None if is_fallback else self._cooldown,
        )
