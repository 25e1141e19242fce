"""Layer 2, ``gemini``: an LLM rewrite that removes what only context reveals (per the system design).

The model receives text that layer 1 has usually redacted already (so known secrets never leave the host),
and answers strict JSON, enforced with a response schema and validated with pydantic::

    {"sanitized_text": "... [[REDACTED_1]] ...", "redactions": [{"original", "kind", "category"}, ...]}

The host, not the model, then puts the submission's stable placeholders in place of the ``[[REDACTED_n]]``
markers, so placeholders stay consistent across fields and layers.

It FAILS CLOSED: an API error, a timeout, an answer that is not the schema, a marker without a redaction, a
redacted value still present, a rewrite that reintroduces a layer-1 finding or drops most of the text, all
raise :class:`gateway.api.SanitizationFailed`. It never returns the text it was given unreviewed.
"""

from __future__ import annotations

import re
from typing import Literal

import anyio
import httpx
import structlog
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.api import FieldKind, Finding, PlaceholderMap, ProviderUnavailable, SanitizationFailed, SanitizedText
from gateway_plugins.sanitizers.patterns import PatternSanitizer

__all__ = ["GeminiAnswer", "GeminiRedaction", "GeminiSanitizer"]

log = structlog.get_logger(__name__)

_MARKER = re.compile(r"\[\[REDACTED_(\d{1,4})\]\]")
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")

SYSTEM_PROMPT = """You sanitize developer content before it is stored in a shared, public knowledge base.
Find every secret (passwords, API keys, tokens, private keys, connection-string credentials), every piece of
personal data (names of people, e-mail addresses, phone numbers, user names, postal addresses, personal IPs)
and every internal name (internal host names, private service or project code names, internal URLs).
Rewrite the text replacing each such value by a marker [[REDACTED_n]], where n is the 1-based index of the
value in the "redactions" list; the same value always gets the same marker. Keep everything else exactly
as it is, character for character: exception types, messages, package names, versions, file names, line
numbers, localhost and 127.0.0.1 ports, public domain names, and existing placeholders such as <EMAIL_1>.
Answer only with JSON matching the schema. "original" is the exact substring of the input you replaced."""


class GeminiRedaction(BaseModel):
    """One value the model removed."""

    model_config = ConfigDict(extra="forbid")
    original: str = Field(min_length=1)
    kind: str = Field(min_length=1, max_length=64)
    category: Literal["secret", "pii", "internal"]


class GeminiAnswer(BaseModel):
    """The JSON the model must answer."""

    model_config = ConfigDict(extra="forbid")
    sanitized_text: str
    redactions: list[GeminiRedaction]


_LABELS = {"secret": "SECRET", "pii": "PII", "internal": "INTERNAL"}


class GeminiSanitizer:
    """Gemini-backed contextual layer (``google-genai``, any ``base_url``)."""

    name = "gemini"

    def __init__(
        self,
        client: genai.Client,
        *,
        model: str = "gemini-2.5-flash",
        timeout_seconds: float = 20.0,
        max_input_chars: int = 32_000,
        min_kept_ratio: float = 0.5,
        verifier: PatternSanitizer | None = None,
    ) -> None:
        self._client = client
        self._model = model
        self._timeout = timeout_seconds
        self._max_input_chars = max_input_chars
        self._min_kept_ratio = min_kept_ratio
        self._verifier = verifier or PatternSanitizer()

    @classmethod
    def from_settings(
        cls,
        *,
        api_key: str,
        model: str = "gemini-2.5-flash",
        base_url: str | None = None,
        timeout_seconds: float = 20.0,
        max_attempts: int = 1,
        **options: float | int,
    ) -> GeminiSanitizer:
        """Build the SDK client: ``base_url`` points it elsewhere (a proxy, or the test fake)."""
        http_options = types.HttpOptions(
            base_url=base_url,
            timeout=int(timeout_seconds * 1000),
            retry_options=types.HttpRetryOptions(attempts=max_attempts),
        )
        client = genai.Client(api_key=api_key, http_options=http_options)
        return cls(client, model=model, timeout_seconds=timeout_seconds, **options)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    async def sanitize(self, text: str, *, kind: FieldKind, placeholders: PlaceholderMap) -> SanitizedText:
        """Ask the model for a rewrite and verify it; raises :class:`SanitizationFailed` on any doubt."""
        if not text.strip():
            return SanitizedText(text, [])
        if len(text) > self._max_input_chars:
            raise _failed(f"text of {len(text)} characters exceeds the LLM layer's limit of {self._max_input_chars}")
        answer = await self._ask(text, kind)
        return self._apply(text, answer, placeholders)

    async def _ask(self, text: str, kind: FieldKind) -> GeminiAnswer:
        config = types.GenerateContentConfig(
            system_instruction=SYSTEM_PROMPT,
            response_mime_type="application/json",
            response_schema=GeminiAnswer,
            temperature=0.0,
        )
        contents = f"Field kind: {kind.value}\n----- BEGIN TEXT -----\n{text}\n----- END TEXT -----"
        try:
            with anyio.fail_after(self._timeout):
                response = await self._client.aio.models.generate_content(
                    model=self._model, contents=contents, config=config
                )
        except TimeoutError as exc:  # an outage, not a doubt about the text: the caller may retry
            raise ProviderUnavailable("sanitizer:gemini", f"no answer within {self._timeout:g}s") from exc
        except Exception as exc:  # the SDK raises APIError, httpx errors, ValueError...: all fail closed
            log.warning("gemini_sanitizer_error", error_type=type(exc).__name__)
            if _is_outage(exc):
                raise ProviderUnavailable("sanitizer:gemini", f"the model call failed ({type(exc).__name__})") from exc
            raise _failed(f"the model call failed ({type(exc).__name__})") from exc
        try:
            raw = response.text
        except Exception as exc:
            raise _failed("the model's answer has no text") from exc
        if not raw:
            raise _failed("the model's answer is empty")
        try:
            return GeminiAnswer.model_validate_json(raw)
        except ValidationError as exc:
            raise _failed(f"the model's answer is not the expected JSON ({exc.error_count()} errors)") from exc

    def _apply(self, text: str, answer: GeminiAnswer, placeholders: PlaceholderMap) -> SanitizedText:
        redactions = answer.redactions
        for item in redactions:
            if item.original not in text:
                raise _failed("the model redacted a value that is not in the text")

        def substitute(match: re.Match[str]) -> str:
            index = int(match.group(1)) - 1
            if not 0 <= index < len(redactions):
                raise _failed("the model's rewrite uses a marker without a redaction")
            item = redactions[index]
            return placeholders.placeholder(_label(item), item.original, category=item.category)

        result = _MARKER.sub(substitute, answer.sanitized_text)
        if "[[REDACTED" in result:
            raise _failed("the model's rewrite has a malformed marker")
        self._verify(text, result, redactions)
        findings = [
            Finding(item.kind, item.category, match.start(), match.end(), 0.8, self.name,
                    placeholders.placeholder(_label(item), item.original, category=item.category))
            for item in redactions
            for match in re.finditer(re.escape(item.original), text)
        ]  # fmt: skip
        findings.sort(key=lambda f: f.start)
        return SanitizedText(result, findings)

    def _verify(self, text: str, result: str, redactions: list[GeminiRedaction]) -> None:
        for item in redactions:
            if item.original in result and not _PLACEHOLDER.fullmatch(item.original):
                raise _failed("a value the model redacted is still in its rewrite")
        missing = set(_PLACEHOLDER.findall(text)) - set(_PLACEHOLDER.findall(result))
        if missing:
            raise _failed(f"the model's rewrite dropped {len(missing)} existing placeholders")
        rescan = self._verifier.sanitize_sync(result, placeholders=PlaceholderMap())
        reintroduced = [f for f in rescan.findings if result[f.start : f.end] not in text]
        if reintroduced:
            raise _failed(f"the model's rewrite introduced {len(reintroduced)} layer-1 findings")
        base = text
        for item in redactions:
            base = base.replace(item.original, "")
        kept = _PLACEHOLDER.sub("", result)
        if len(base.strip()) >= 40 and len(kept.strip()) < self._min_kept_ratio * len(base.strip()):
            raise _failed("the model's rewrite dropped most of the text")


def _label(item: GeminiRedaction) -> str:
    kind = re.sub(r"[^A-Z0-9]+", "_", item.kind.upper()).strip("_")
    return kind[:24] if kind else _LABELS[item.category]


def _is_outage(exc: Exception) -> bool:
    """A server error, a rate limit or a failed connection: the service is down, the text is not in doubt."""
    if isinstance(exc, genai_errors.ServerError | httpx.TransportError):
        return True
    return isinstance(exc, genai_errors.APIError) and exc.code == 429


def _failed(reason: str) -> SanitizationFailed:
    return SanitizationFailed(
        "Sanitization failed: the LLM layer could not confirm the content is safe.",
        details={"layer": "gemini", "reason": reason},
    )
