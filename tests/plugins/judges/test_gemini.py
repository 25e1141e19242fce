"""The ``gemini`` judge against the local fake Gemini server, through the real ``google-genai`` SDK."""

from __future__ import annotations

import difflib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.api import JUDGE, JudgeRequest, ProviderContext, ProviderUnavailable, ReviewFile, Sanitizer, rubric_score
from gateway.contracts.judge_contract import DEFECTIVE_PYTHON, JudgeContract, defective_request
from gateway_plugins.judges.gemini import GeminiJudge
from gateway_plugins.judges.gemini_config import GeminiJudgeConfig
from gateway_plugins.judges.plugin import _gemini
from tests.fakes.gemini import FakeGemini, FakeResponse

pytestmark = pytest.mark.anyio

DIMENSIONS = [
    {"name": "correctness", "score": 62},
    {"name": "security", "score": 90},
    {"name": "maintainability", "score": 70},
    {"name": "test_coverage", "score": 40},
    {"name": "style", "score": 88},
]
EXPECTED_SCORE = rubric_score({d["name"]: d["score"] for d in DIMENSIONS})
"""The rubric's weighted mean of the dimensions above (the judge computes it; the model's opinion is not asked)."""


def fix_for_defective_python() -> str:
    fixed = DEFECTIVE_PYTHON.replace("    except:\n", "    except OSError:\n")
    lines = difflib.unified_diff(
        DEFECTIVE_PYTHON.splitlines(True), fixed.splitlines(True), "a/pkg/loader.py", "b/pkg/loader.py"
    )
    return "".join(lines)


def answer(**overrides: Any) -> str:
    body: dict[str, Any] = {
        "summary": "The loader hides I/O errors and returns an undefined name.",
        "dimensions": DIMENSIONS,
        "comments": [
            {"path": "pkg/loader.py", "line": 9, "severity": "major", "dimension": "correctness",
             "comment": "A bare except hides every error; catch OSError."},
            {"path": "pkg/loader.py", "line": 11, "end_line": 11, "severity": "major", "dimension": "correctness",
             "comment": "undefined_default is never defined."},
        ],
        "proposed_diff": fix_for_defective_python(),
    }  # fmt: skip
    body.update(overrides)
    return json.dumps(body)


def make_judge(fake: FakeGemini, redactor: Callable[[], Sanitizer] | None, **config: Any) -> GeminiJudge:
    settings: dict[str, Any] = {"api_key": "test-key", "base_url": fake.base_url, "retries": 0, **config}
    return GeminiJudge(GeminiJudgeConfig(**settings), redactor)


@pytest.fixture
async def gemini(fake_gemini: FakeGemini, patterns: Sanitizer) -> AsyncIterator[GeminiJudge]:
    judge = make_judge(fake_gemini, lambda: patterns, timeout_seconds=5)
    yield judge
    await judge.aclose()


class TestGeminiContract(JudgeContract):
    @pytest.fixture
    async def judge(self, gemini: GeminiJudge, fake_gemini: FakeGemini) -> GeminiJudge:
        fake_gemini.generate_text = lambda request: answer()
        return gemini


async def test_a_valid_answer_becomes_a_scored_review(gemini: GeminiJudge, fake_gemini: FakeGemini) -> None:
    fake_gemini.generate_text = lambda request: answer()
    result = await gemini.review(defective_request())
    assert result.judge == "gemini/gemini-2.5-flash"
    assert result.score == EXPECTED_SCORE == 70
    assert result.dimensions["test_coverage"] == 40
    assert [(c.path, c.line, c.severity) for c in result.comments] == [
        ("pkg/loader.py", 9, "major"),
        ("pkg/loader.py", 11, "major"),
    ]
    assert result.proposed_diff == fix_for_defective_python() and result.notes is None
    [sent] = fake_gemini.requests_for("generateContent")
    assert sent.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert sent.json["generationConfig"]["responseMimeType"] == "application/json"
    assert "rubric" in json.dumps(sent.json["systemInstruction"]).lower()
    prompt = sent.json["contents"][-1]["parts"][0]["text"]
    assert "    9|     except:" in prompt and "Task: Review the loader change" in prompt


async def test_comments_outside_the_reviewed_code_are_dropped(gemini: GeminiJudge, fake_gemini: FakeGemini) -> None:
    comments = [
        {"path": "pkg/loader.py", "line": 2, "comment": "sys is unused"},
        {"path": "pkg/loader.py", "line": 400, "comment": "hallucinated line"},
        {"path": "pkg/other.py", "line": 1, "comment": "a file that was not reviewed"},
    ]
    fake_gemini.generate_text = lambda request: answer(comments=comments, proposed_diff="just rewrite it")
    result = await gemini.review(defective_request())
    assert [(c.path, c.line) for c in result.comments] == [("pkg/loader.py", 2)]
    assert result.notes is not None
    assert "dropped 2 comment(s)" in result.notes and "not a unified diff" in result.notes
    assert result.proposed_diff is None


async def test_a_fenced_json_answer_is_accepted(gemini: GeminiJudge, fake_gemini: FakeGemini) -> None:
    fake_gemini.generate_text = lambda request: "```json\n" + answer(comments=[]) + "\n```"
    result = await gemini.review(defective_request())
    assert result.score == EXPECTED_SCORE


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("The code looks fine to me!", "not JSON"),
        (answer(dimensions=[]), "dimensions"),
        (answer(dimensions=[{"name": "correctness", "score": 150}]), "dimensions.0.score"),
        (answer(dimensions=[{"name": "vibes", "score": 90}]), "dimensions.0.name"),
        (answer(dimensions=[DIMENSIONS[0], DIMENSIONS[0]]), "scored twice"),
        (answer(verdict="pass"), "verdict"),
        (json.dumps({"dimensions": DIMENSIONS}), "summary"),
        (answer(comments=[{"path": "pkg/loader.py", "line": 0, "comment": "x"}]), "comments.0.line"),
        ("", "empty"),
    ],
)
async def test_a_malformed_answer_abstains(
    gemini: GeminiJudge, fake_gemini: FakeGemini, reply: str, reason: str
) -> None:
    fake_gemini.generate_text = lambda request: reply
    result = await gemini.review(defective_request())
    assert result.score is None and not result.dimensions and not result.comments
    assert result.notes is not None and result.notes.startswith("malformed answer") and reason in result.notes


@pytest.mark.parametrize("status", [500, 429, 403])
async def test_http_errors_abstain(gemini: GeminiJudge, fake_gemini: FakeGemini, status: int) -> None:
    fake_gemini.enqueue(FakeResponse(status=status))
    result = await gemini.review(defective_request())
    assert result.score is None and result.notes is not None and f"API error {status}" in result.notes


async def test_a_broken_response_body_abstains(gemini: GeminiJudge, fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(FakeResponse(raw_body="{not json"))
    result = await gemini.review(defective_request())
    assert result.score is None and result.notes


async def test_retries_then_succeeds(fake_gemini: FakeGemini, patterns: Sanitizer) -> None:
    judge = make_judge(fake_gemini, lambda: patterns, retries=1, timeout_seconds=10)
    fake_gemini.enqueue(FakeResponse(status=503))
    fake_gemini.generate_text = lambda request: answer()
    try:
        result = await judge.review(defective_request())
    finally:
        await judge.aclose()
    assert result.score == EXPECTED_SCORE and len(fake_gemini.requests_for("generateContent")) == 2


async def test_a_slow_model_times_out(fake_gemini: FakeGemini, patterns: Sanitizer) -> None:
    judge = make_judge(fake_gemini, lambda: patterns, timeout_seconds=0.5)
    fake_gemini.enqueue(FakeResponse(delay=5))
    try:
        result = await judge.review(defective_request())
    finally:
        await judge.aclose()
    assert result.score is None and result.notes == "no answer within 0.5s"


async def test_secrets_are_redacted_before_the_code_leaves(gemini: GeminiJudge, fake_gemini: FakeGemini) -> None:
    secret = "AKIAZ7QK3TRW4XN2LP5M"
    code = f'import boto3\n\nKEY = "{secret}"\nboto3.client(KEY)\n'
    fake_gemini.generate_text = lambda request: answer(comments=[], proposed_diff=None)
    request = JudgeRequest(
        task="t", scope="diff", files=(ReviewFile("aws.py", code),), diff=f'+KEY = "{secret}"\n', changed_paths=()
    )
    result = await gemini.review(request)
    assert result.score == EXPECTED_SCORE
    [sent] = fake_gemini.requests_for("generateContent")
    body = json.dumps(sent.json)
    assert secret not in body and "<AWS_KEY_1>" in body and '    3| KEY = \\"<AWS_KEY_1>\\"' in body


async def test_no_redaction_no_request(fake_gemini: FakeGemini) -> None:
    def broken() -> Sanitizer:
        raise RuntimeError("sanitizer down")

    judge = make_judge(fake_gemini, broken)
    try:
        result = await judge.review(defective_request())
    finally:
        await judge.aclose()
    assert result.score is None and result.notes is not None and "not sent" in result.notes
    assert fake_gemini.requests == []


async def test_nothing_to_review_sends_nothing(gemini: GeminiJudge, fake_gemini: FakeGemini) -> None:
    result = await gemini.review(JudgeRequest(task="t", scope="diff", files=()))
    assert result.score is None and fake_gemini.requests == []


def provider_context(tmp_path: Path, config: GeminiJudgeConfig) -> ProviderContext:
    def lookup(kind: str, name: str | None = None) -> Any:
        raise ProviderUnavailable(f"{kind}/{name}", "not in this test")

    return ProviderContext(kind=JUDGE, name="gemini", config=config, data_dir=tmp_path, provider=lookup)


async def test_factory_needs_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ProviderUnavailable, match="GEMINI_API_KEY"):
        _gemini(provider_context(tmp_path, GeminiJudgeConfig()))
    monkeypatch.setenv("GEMINI_API_KEY", "from-env")
    config = GeminiJudgeConfig.model_validate({"api_key": {"env": "GEMINI_API_KEY"}, "model": "gemini-2.5-pro"})
    judge = _gemini(provider_context(tmp_path, config))
    try:
        assert judge.name == "gemini/gemini-2.5-pro"
    finally:
        await judge.aclose()
