"""The rubric prompt of the Gemini judge and the strict model of its answer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.api import RUBRIC, JudgeRequest, source_lines

DimensionName = Literal["correctness", "security", "maintainability", "test_coverage", "style"]

SYSTEM_INSTRUCTION = """You are a meticulous senior code reviewer acting as the judge of an automated audit.
Score the code under review on each rubric dimension from 0 (unacceptable) to 100 (exemplary):
- correctness: does it do what the task asks, without bugs, crashes or unhandled edge cases?
- security: injection, unsafe deserialisation, secrets in code, missing validation, unsafe file or shell use.
- maintainability: clarity, structure, naming, complexity, dead code, error handling.
- test_coverage: are the changed behaviours tested? Omit this dimension when no change is under review.
- style: formatting and idioms of the language.
Scores of 85 and above mean ready to merge; below 55 means the change should be rejected.
Comment only on concrete problems, each at the exact line of the numbered new file (the number before "|").
Use severity "blocking" only for defects that must never ship (broken syntax, leaked credentials).
If a fix is mechanical, give it in "proposed_diff" as a git unified diff (a/ and b/ prefixes, paths as shown).
Answer with one JSON object and nothing else:
{"summary": str, "dimensions": [{"name": str, "score": number}], "comments": [{"path": str, "line": int,
"end_line": int|null, "severity": "info"|"minor"|"major"|"blocking", "dimension": str, "comment": str}],
"proposed_diff": str|null}"""


class AnswerDimension(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: DimensionName
    score: float = Field(ge=0, le=100)


class AnswerComment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=1000)
    line: int = Field(ge=1)
    end_line: int | None = Field(default=None, ge=1)
    severity: Literal["info", "minor", "major", "blocking"] = "minor"
    dimension: DimensionName = "correctness"
    comment: str = Field(min_length=1, max_length=4000)


class Answer(BaseModel):
    """What the model must answer. Anything else (missing fields, unknown keys, scores out of range, a dimension
    twice) is a malformed answer and the judge abstains."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, max_length=8000)
    dimensions: list[AnswerDimension] = Field(min_length=1, max_length=len(RUBRIC))
    comments: list[AnswerComment] = Field(default_factory=list, max_length=200)
    proposed_diff: str | None = Field(default=None, max_length=200_000)

    @field_validator("dimensions")
    @classmethod
    def _distinct(cls, value: list[AnswerDimension]) -> list[AnswerDimension]:
        names = [item.name for item in value]
        if len(set(names)) != len(names):
            raise ValueError("a dimension is scored twice")
        return value


def numbered(content: str, start: int = 1) -> str:
    """``content`` with each line prefixed by its number, as the rubric asks the model to cite."""
    return "".join(f"{number:>5}| {line}\n" for number, line in enumerate(source_lines(content), start=start))


def build_prompt(request: JudgeRequest, files: list[tuple[str, str, bool]], diff: str, budget: int) -> str:
    """The user turn: task, scope, the diff, and each file numbered (``files``: path, numbered text, truncated).

    Files are added in order until ``budget`` characters are used; the rest are listed as omitted.
    """
    parts = [f"Task: {request.task}", f"Scope: {request.scope}"]
    if request.thought:
        parts.append(f"The author's current reasoning step:\n{request.thought[:4000]}")
    if request.overview:
        parts.append(f"Repository overview:\n{request.overview[:8000]}")
    if diff:
        parts.append(f"The change under review (unified diff):\n{diff[: budget // 3]}")
    used = sum(len(part) for part in parts)
    omitted: list[str] = []
    for path, text, truncated in files:
        block = f"New file {path}{' (truncated)' if truncated else ''}:\n{text}"
        if used + len(block) > budget:
            omitted.append(path)
            continue
        parts.append(block)
        used += len(block)
    if omitted:
        parts.append("Not shown (size limit): " + ", ".join(omitted))
    return "\n\n".join(parts)
