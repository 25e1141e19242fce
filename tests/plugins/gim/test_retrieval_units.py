"""Pure parts of retrieval: BM25 index, fusion and ranking, duplicate decision, confidence, categories, texts."""

from __future__ import annotations

import pytest

from gateway_plugins.gim.categories import categorise
from gateway_plugins.gim.confidence import BetaConfidence, VoteTally
from gateway_plugins.gim.dedup import Evidence, decide_baseline, decide_hybrid, gather_evidence
from gateway_plugins.gim.lexical import LexicalHit, LexicalIndex
from gateway_plugins.gim.models import FixBundle
from gateway_plugins.gim.ranking import environment_matches, fuse, rank, shortlist
from gateway_plugins.gim.signatures import normalise_error
from gateway_plugins.gim.texts import baseline_query_text, canonical_title, combined_text, resolution_text


def test_bm25_prefers_rare_terms_and_follows_changes() -> None:
    index = LexicalIndex()
    index.add("a", "m1", ["error", "module", "numpy", "float"], seq=1)
    index.add("b", "m2", ["error", "module", "pandas", "append"], seq=2)
    for i in range(20):
        index.add(f"n{i}", f"x{i}", ["error", "module", f"other{i}"], seq=3 + i)
    hits = index.search(["error", "module", "numpy"], limit=3)
    assert hits[0].item_id == "a" and hits[0].master_id == "m1"
    assert 0.5 < hits[0].score <= 1.5
    assert index.last_seq == 22 and len(index) == 22
    index.add("a", "m1", ["ignored"], seq=23)  # a known id is not indexed twice
    assert len(index) == 22 and index.last_seq == 23
    index.remove("a")
    assert all(h.item_id != "a" for h in index.search(["numpy"], limit=5))
    assert index.search([], limit=5) == [] and "a" not in index


def test_fuse_takes_best_item_per_master_and_rank_weighs_confidence() -> None:
    dense = [("child", "m1", 0.9), ("m1", "m1", 0.5), ("m2", "m2", 0.88)]
    lexical = [LexicalHit("m2", "m2", 2.0), LexicalHit("m3", "m3", 0.1)]
    best = fuse(dense, lexical, lexical_weight=0.5)
    assert best["m1"].item_id == "child" and best["m1"].relevance == pytest.approx(0.45)
    assert best["m2"].relevance == pytest.approx(0.94)  # the lexical score is clipped to 1
    assert best["m3"].relevance == pytest.approx(0.05)
    short, total = shortlist(best, threshold=0.2, is_active=lambda m: True, size=10)
    assert total == 2 and set(short) == {"m1", "m2"}  # m3 is below the threshold on both signals
    assert shortlist(best, threshold=0.2, is_active=lambda m: m != "m2", size=10)[1] == 1
    assert list(shortlist(best, threshold=0.2, is_active=lambda m: True, size=1)[0]) == ["m2"]
    ranked = rank(short, confidence={"m1": 0.9, "m2": 0.5}, boosts={}, boost=0.0, use_confidence=True)
    assert [r.master_id for r in ranked] == ["m2", "m1"]
    by_similarity = rank(short, confidence={"m1": 0.99, "m2": 0.4}, boosts={}, boost=0.0, use_confidence=False)
    assert [r.master_id for r in by_similarity] == ["m2", "m1"]
    confirmed = rank(short, confidence={"m1": 0.99, "m2": 0.4}, boosts={}, boost=0.0, use_confidence=True)
    boosted = rank(short, confidence={"m1": 0.9, "m2": 0.5}, boosts={"m1": 3}, boost=0.5, use_confidence=True)
    assert [r.master_id for r in boosted] == ["m1", "m2"]
    assert [r.master_id for r in confirmed] == ["m1", "m2"]  # 0.9 dense but 0.45 fused: only with confidence


def test_environment_boost_counts_shared_words() -> None:
    seen = {"language": ["Python"], "framework": ["PyTorch / NVIDIA driver"], "os": ["Ubuntu 22.04"]}
    assert environment_matches(seen, {"language": "python", "framework": "pytorch", "os": "macOS"}) == 2
    assert environment_matches(seen, {"language": None, "framework": "", "os": None}) == 0


def test_hybrid_decision_needs_error_and_resolution_evidence() -> None:
    evidence = gather_evidence(
        error_hits=[("m1", 0.95), ("m2", 0.5), ("gone", 0.99)],
        lexical_hits=[("m2", 0.9)],
        resolution_hits=[("m1", 0.6), ("m2", 0.85), ("m3", 0.99)],
        is_active={"m1", "m2", "m3"}.__contains__,
        exception_types={"m1": ["TypeError"], "m2": ["SyntaxError"]},
    )
    assert set(evidence) == {"m1", "m2"}  # unknown to the store ("gone") or never a candidate (m3): dropped
    chosen = decide_hybrid(evidence, exception_type="TypeError", error_threshold=0.6, resolution_threshold=0.78)
    assert chosen is not None and chosen.master_id == "m2"  # m1's error matches but its cause does not
    strict = decide_hybrid(
        evidence,
        exception_type="TypeError",
        error_threshold=0.6,
        resolution_threshold=0.78,
        require_same_exception_type=True,
    )
    assert strict is None
    assert Evidence("m", exception_types=frozenset({"RuntimeError"})).compatible("UserWarning")


def test_baseline_decision() -> None:
    assert decide_baseline(("m1", 0.86), threshold=0.85) == "m1"
    assert decide_baseline(("m1", 0.84), threshold=0.85) is None and decide_baseline(None, threshold=0.85) is None


def test_beta_confidence() -> None:
    model = BetaConfidence(2.0, 1.0)
    assert model.prior == pytest.approx(2 / 3)
    assert model.score(VoteTally(1, 0)) == 0.75 and model.score(VoteTally(0, 1)) == 0.5
    assert model.score(VoteTally(98, 0)) > 0.99 and model.score(VoteTally(0, 100)) < 0.03
    with pytest.raises(ValueError):
        BetaConfidence(0, 1)


FIX = FixBundle.model_validate(
    {
        "env_actions": [{"order": 1, "type": "upgrade", "command": "pip install -U x", "explanation": "new x"}],
        "verification": [{"order": 1, "command": "x --version", "expected_output": "2"}],
        "code_fix": "import x\nx.run()",
    }
)


def test_texts_and_titles() -> None:
    assert resolution_text("Old x.", FIX) == "Old x.\nFix: upgrade pip install -U x: new x\nimport x\nx.run()"
    assert combined_text("E: boom", "Old x.", FIX) == "Error: E: boom\nRoot cause: Old x.\nFix: new x import x"
    assert baseline_query_text("E: boom") == "Error: E: boom\nRoot cause: \nFix: "
    error = 'File "/home/u/a.py", line 3\nValueError: bad value 42'
    sig = normalise_error(error)
    assert canonical_title("ValueError: bad value 42", error, sig) == "ValueError: bad value 42"
    for failure, title in [  # the failure line, free of paths and versions, its numbers kept
        (
            "PermissionError: [Errno 13] Permission denied: '/home/u/x.txt'",
            "PermissionError: [Errno 13] Permission denied: 'x.txt'",
        ),
        (
            "requests.exceptions.HTTPError: 404 Client Error for url: https://api.x.com/v2/items",
            "requests.exceptions.HTTPError: 404 Client Error for url: api.x.com",
        ),
        ("ImportError: numpy 1.26.4 is required", "ImportError: numpy is required"),
    ]:
        assert canonical_title(failure, failure, normalise_error(failure)) == title
    assert canonical_title("Parser rejects negative ids", error, sig) == "Parser rejects negative ids"
    assert len(canonical_title("word " * 100, None, sig)) <= 120


@pytest.mark.parametrize(
    ("cause", "category"),
    [
        ("The installed PyTorch wheel needs a newer NVIDIA driver", "Hardware/Driver - GPU and CUDA"),
        ("pandas 2.0 removed DataFrame.append", "API/Integration - Removed or Deprecated API"),
        ("The container lacks libGL.so.1", "System - Missing Native Library"),
        ("Something odd", "Other - Uncategorised"),
    ],
)
def test_categories(cause: str, category: str) -> None:
    assert categorise(cause) == category
