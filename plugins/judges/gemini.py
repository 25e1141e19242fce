"""The ``gemini`` judge: an LLM reviewer through the ``google-genai`` SDK, held to a rubric and a strict answer.

Code leaves the machine only after the sanitizer layer named by ``redact_with`` replaced secrets by
placeholders (fail closed: no redaction, no request). Any failure — an HTTP error, a timeout, an answer that is
not the JSON the rubric asks for — makes the judge abstain with the reason on its card; it never guesses a score.
Comments that cite files or lines outside the review are dropped (and counted in the notes).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import structlog
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import ValidationError

from gateway.api import (
    FieldKind,
    JudgeRequest,
    JudgeResult,
    PlaceholderMap,
    ReviewComment,
    Sanitizer,
    rubric_score,
    source_lines,
)
from gateway_plugins.judges.gemini_config import GeminiJudgeConfig
from gateway_plugins.judges.gemini_prompt import SYSTEM_INSTRUCTION, Answer, build_prompt, numbered

log = structlog.get_logger(__name__)


class GeminiJudge:
    """See the module docstring."""

    def __init__(self, config: GeminiJudgeConfig, redactor: Callable[[], Sanitizer] | None = None) -> None:
        if config.api_key is None:
            raise ValueError("the Gemini judge needs an API key")
        self._config = config
        self._redactor = redactor
        retry = types.HttpRetryOptions(attempts=config.retries + 1, initial_delay=0.5, max_delay=4.0)
        options = types.HttpOptions(
            base_url=config.base_url, timeout=int(config.timeout_seconds * 1000), retry_options=retry
        )
        self._client = genai.Client(api_key=config.api_key.get_secret_value(), http_options=options)

    @property
    def name(self) -> str:
        return f"gemini/{self._config.model}"

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    async def review(self, request: JudgeRequest) -> JudgeResult:
        if not request.files and not request.diff:
            return JudgeResult.abstain(self.name, "nothing to review")
        try:
            prompt = await self._prompt(request)
        except Exception as error:  # fail closed: no redaction, no request
            log.warning("judge.gemini.redaction_failed", error=repr(error))
            return JudgeResult.abstain(self.name, f"not sent: secrets could not be redacted ({error})")
        try:
            with anyio.fail_after(self._config.timeout_seconds):
                response = await self._client.aio.models.generate_content(
                    model=self._config.model,
                    contents=prompt,
                    config=types.GenerateContentConfig(
                        system_instruction=SYSTEM_INSTRUCTION,
                        temperature=self._config.temperature,
                        response_mime_type="application/json",
                    ),
                )
        except TimeoutError:
            return JudgeResult.abstain(self.name, f"no answer within {self._config.timeout_seconds:g}s")
        except genai_errors.APIError as error:
            return JudgeResult.abstain(self.name, f"API error {error.code} {error.status or ''}".rstrip())
        except Exception as error:  # network and SDK failures: the judge abstains, the audit goes on
            log.warning("judge.gemini.request_failed", error=repr(error))
            return JudgeResult.abstain(self.name, f"request failed ({type(error).__name__})")
        return self._result(request, response)

    async def _prompt(self, request: JudgeRequest) -> str:
        files = [(file.path, numbered(file.content), file.truncated) for file in request.files]
        diff = request.diff
        if self._config.redact_with is not None:
            if self._redactor is None:
                raise RuntimeError(f"sanitizer {self._config.redact_with!r} is not available")
            scanner = self._redactor()
            placeholders = PlaceholderMap()

            async def redact(text: str) -> str:
                cleaned = await scanner.sanitize(text, kind=FieldKind.CODE, placeholders=placeholders)
                if any(finding.placeholder is None for finding in cleaned.findings):
                    raise RuntimeError("a sensitive value could not be replaced")
                return cleaned.text

            files = [(path, await redact(text), truncated) for path, text, truncated in files]
            diff = await redact(diff) if diff else diff
        return build_prompt(request, files, diff, self._config.max_prompt_chars)

    def _result(self, request: JudgeRequest, response: types.GenerateContentResponse) -> JudgeResult:
        text = (response.text or "").strip()
        if not text:
            return JudgeResult.abstain(self.name, "malformed answer: empty")
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        try:
            answer = Answer.model_validate(json.loads(text))
        except ValueError as error:  # JSONDecodeError and pydantic's ValidationError are both ValueErrors
            return JudgeResult.abstain(self.name, f"malformed answer: {_reason(error)}")
        sizes = {file.path: len(source_lines(file.content)) for file in request.files}
        comments: list[ReviewComment] = []
        dropped = 0
        for item in answer.comments:
            size = sizes.get(item.path)
            if size is None or item.line > size:
                dropped += 1
                continue
            end = item.end_line if item.end_line and item.line < item.end_line <= size else None
            comments.append(ReviewComment(item.path, item.line, item.comment, item.severity, item.dimension, "", end))
        dimensions = {item.name: round(item.score) for item in answer.dimensions}
        notes: list[str] = []
        if dropped:
            notes.append(f"dropped {dropped} comment(s) citing lines outside the reviewed files")
        diff = answer.proposed_diff
        if diff is not None and not ("--- " in diff and "+++ " in diff and "@@" in diff):
            notes.append("ignored a proposed_diff that is not a unified diff")
            diff = None
        return JudgeResult(
            judge=self.name,
            score=rubric_score(dimensions),
            dimensions=dimensions,
            summary=answer.summary,
            comments=tuple(comments),
            proposed_diff=diff or None,
            notes="; ".join(notes) or None,
        )


def _reason(error: ValueError) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "answer"
        return f"{where}: {first['msg']} ({error.error_count()} error(s))"
    return f"not JSON ({error})"
