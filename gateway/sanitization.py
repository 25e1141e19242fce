"""The sanitization pipeline the host builds from ``[sanitize]``.

:class:`SanitizationPipeline` implements :class:`gateway.api.SanitizationService`. For each field it runs the
layers configured for the field's kind, in order, each on the previous layer's output, with one
:class:`~gateway.api.PlaceholderMap` shared by every field of the submission (the same e-mail is
``<EMAIL_1>`` everywhere). Then, as defence in depth, it re-scans every final text with the verifier (layer
1, ``patterns``). It fails closed: a layer that raises, a finding a layer could not redact
(``placeholder=None``) or anything the re-scan still finds refuses the whole submission, and no text is
returned.

Long texts leave the event loop (:func:`gateway.api.sanitize_off_loop`): a layer that offers a synchronous
``sanitize_sync(text, *, placeholders)`` (the offline layers, whose work is CPU-bound: a few milliseconds per 10
kB) runs it in a worker thread for texts of :data:`gateway.api.OFF_LOOP_CHARS` or more; shorter texts, and layers
without it (the LLM layer waits on the network), are awaited on the loop, which gets a turn between them whenever
:data:`SLICE_SECONDS` have passed.

This module imports only :mod:`gateway.api` and libraries: layers are providers the host looks up by name.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import anyio.lowlevel
import structlog

from gateway.api import (
    ConfigError,
    FieldKind,
    Finding,
    PlaceholderMap,
    ProviderUnavailable,
    SanitizationFailed,
    SanitizationReport,
    Sanitizer,
    sanitize_off_loop,
)

__all__ = ["PipelineReport", "SanitizationPipeline", "sweep_known_values"]

log = structlog.get_logger(__name__)

REFUSAL_REASON = "sanitization_failed"

SLICE_SECONDS = 0.005
"""Inline work after which the pipeline lets other tasks run before the next layer or field."""


class _Turns:
    """Gives the event loop a turn once :data:`SLICE_SECONDS` of work have run since the last one."""

    def __init__(self) -> None:
        self._since = time.perf_counter()

    async def maybe_yield(self) -> None:
        if time.perf_counter() - self._since >= SLICE_SECONDS:
            await anyio.lowlevel.checkpoint()
            self._since = time.perf_counter()


@dataclass
class PipelineReport(SanitizationReport):
    """A :class:`~gateway.api.SanitizationReport` with what a refusal needs to explain itself.

    On success ``confidence`` is 1.0 (every layer ran and the re-scan found nothing). On refusal ``fields``
    is empty and ``confidence`` is how sure the pipeline is that the submission holds sensitive data (the
    spec's ``confidence_score``): the highest confidence among unresolved findings, 1.0 for a layer failure.
    """

    unresolved: list[Finding] = field(default_factory=list)
    """Findings that made the pipeline refuse: not redactable, or still present after all layers."""
    findings_by_field: dict[str, list[Finding]] = field(default_factory=dict)


SWEEP_MIN_CHARS = 6
"""Shorter redacted values are not swept across fields: too many of them are also ordinary words."""


def sweep_known_values(outputs: dict[str, str], placeholders: PlaceholderMap) -> dict[str, str]:
    """Replace, in every field, the values a layer redacted in any field of the submission.

    A layer recognises a secret by its context (``DB_PASSWORD = "..."`` in a code snippet); the same value in another
    field (the root cause quoting it) has no such context and would pass. As a whole word (not inside a longer run of
    letters and digits), each value of :data:`SWEEP_MIN_CHARS` or more becomes its placeholder everywhere: a secret
    whatever it looks like, anything else (an e-mail, a phone number, a host) unless it is a plain word. A user name
    found in a home path (``/home/ubuntu``) is not swept: "ubuntu" is also the system in the environment, and
    "runner" a word of the prose."""
    pairs = [
        (value, token)
        for value, token, category in placeholders.replaced()
        if len(value) >= SWEEP_MIN_CHARS and (category == "secret" or not value.isalpha())
    ]
    if not pairs:
        return outputs
    tokens = dict(pairs)
    pattern = re.compile(
        r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(value) for value, _ in pairs) + r")(?![A-Za-z0-9])"
    )
    return {name: pattern.sub(lambda m: tokens[m.group(0)], text) for name, text in outputs.items()}


class SanitizationPipeline:
    """Layers per field kind, query layers, and a verifier for the final re-scan.

    ``layers`` maps each :class:`~gateway.api.FieldKind` (or its string value) to its ordered layers; a kind
    that is not configured runs only the verifier. ``query_layers`` serve :meth:`sanitize_query`.
    """

    def __init__(
        self,
        layers: Mapping[FieldKind | str, Sequence[Sanitizer]],
        *,
        query_layers: Sequence[Sanitizer],
        verifier: Sanitizer,
    ) -> None:
        normalized: dict[FieldKind, tuple[Sanitizer, ...]] = {}
        for key, chain in layers.items():
            try:
                kind = FieldKind(key)
            except ValueError as exc:
                kinds = ", ".join(k.value for k in FieldKind)
                raise ConfigError(f"[sanitize]: unknown field kind {key!r} (expected one of {kinds}, query)") from exc
            normalized[kind] = tuple(chain)
        for kind in FieldKind:
            normalized.setdefault(kind, (verifier,))
        self._layers = normalized
        self._query_layers = tuple(query_layers)
        self._verifier = verifier

    @classmethod
    def from_config(
        cls,
        table: Mapping[str, Sequence[str]],
        lookup: Callable[[str], Sanitizer],
        *,
        verifier: str = "patterns",
    ) -> SanitizationPipeline:
        """Build from the ``[sanitize]`` table; ``lookup(name)`` returns the ``sanitizer`` provider ``name``
        (the host passes ``lambda name: provider("sanitizer", name)``). ``query`` defaults to the verifier."""
        instances: dict[str, Sanitizer] = {}

        def get(name: str) -> Sanitizer:
            if name not in instances:
                instances[name] = lookup(name)
            return instances[name]

        layers = {kind: [get(n) for n in names] for kind, names in table.items() if kind != "query"}
        query = [get(n) for n in table.get("query", [verifier])]
        return cls(layers, query_layers=query, verifier=get(verifier))

    def layers_for(self, kind: FieldKind) -> tuple[Sanitizer, ...]:
        return self._layers[kind]

    async def sanitize_fields(self, fields: Mapping[str, tuple[str, FieldKind]]) -> PipelineReport:
        """Sanitize every field of one submission; refuse (fail closed) on any doubt."""
        placeholders = PlaceholderMap()
        outputs: dict[str, str] = {}
        by_field: dict[str, list[Finding]] = {}
        unresolved: list[Finding] = []
        turns = _Turns()
        for name, (text, kind) in fields.items():
            current = text
            found: list[Finding] = []
            for layer in self._layers[FieldKind(kind)]:
                if not current:
                    break
                await turns.maybe_yield()
                try:
                    result = await sanitize_off_loop(layer, current, kind=FieldKind(kind), placeholders=placeholders)
                except ProviderUnavailable:  # the layer's service is down: nothing passes, and the caller may retry
                    raise
                except Exception as exc:  # SanitizationFailed or a bug: either way nothing passes through
                    return self._layer_failure(name, layer, exc)
                found.extend(result.findings)
                unresolved.extend(f for f in result.findings if f.placeholder is None)
                current = result.text
            if current:
                await turns.maybe_yield()
                try:
                    rescan = await sanitize_off_loop(
                        self._verifier, current, kind=FieldKind(kind), placeholders=PlaceholderMap()
                    )
                except ProviderUnavailable:
                    raise
                except Exception as exc:
                    return self._layer_failure(name, self._verifier, exc)
                unresolved.extend(rescan.findings)
            outputs[name] = current
            by_field[name] = found
        outputs = sweep_known_values(outputs, placeholders)
        findings = [f for name in by_field for f in by_field[name]]
        if unresolved:
            details = (
                f"Detected {len(unresolved)} potential secrets in submission. "
                "Please remove sensitive data and resubmit."
            )
            log.info("sanitization_refused", unresolved=len(unresolved), kinds=sorted({f.kind for f in unresolved}))
            return PipelineReport(
                fields={},
                findings=findings,
                refused=True,
                reason=REFUSAL_REASON,
                confidence=max(f.confidence for f in unresolved),
                details=details,
                unresolved=unresolved,
                findings_by_field=by_field,
            )
        return PipelineReport(fields=outputs, findings=findings, confidence=1.0, findings_by_field=by_field)

    def _layer_failure(self, field_name: str, layer: Sanitizer, exc: BaseException) -> PipelineReport:
        layer_name = getattr(layer, "name", type(layer).__name__)
        if isinstance(exc, SanitizationFailed):
            log.warning("sanitization_layer_refused", layer=layer_name, field=field_name, reason=exc.details)
        else:
            log.error("sanitization_layer_error", layer=layer_name, field=field_name, error_type=type(exc).__name__)
        return PipelineReport(
            fields={},
            refused=True,
            reason=REFUSAL_REASON,
            confidence=1.0,
            details=f"Sanitization layer '{layer_name}' could not verify field '{field_name}'. "
            "The submission was not stored; please remove sensitive data and resubmit.",
        )

    async def sanitize_query(self, text: str) -> str:
        """Run the query layers (layer 1 by default, for speed). Raises :class:`SanitizationFailed` when a
        layer fails or leaves a finding it could not redact."""
        placeholders = PlaceholderMap()
        current = text
        turns = _Turns()
        for layer in self._query_layers:
            await turns.maybe_yield()
            try:
                result = await sanitize_off_loop(
                    layer, current, kind=FieldKind.ERROR_MESSAGE, placeholders=placeholders
                )
            except (SanitizationFailed, ProviderUnavailable):
                raise
            except Exception as exc:
                raise SanitizationFailed("The search query could not be sanitized.") from exc
            if any(f.placeholder is None for f in result.findings):
                raise SanitizationFailed("The search query contains sensitive data that could not be redacted.")
            current = result.text
        return current
