"""The second merge path of the duplicate decision (:class:`gateway_plugins.gim.dedup.SecondPath`): weaker error
and resolution evidence merge only with a strong overlap of the explanations, and every veto still applies."""

from __future__ import annotations

from gateway_plugins.gim.agreement import Conflict
from gateway_plugins.gim.config import GimConfig
from gateway_plugins.gim.dedup import SecondPath, decide_hybrid, gather_evidence
from gateway_plugins.gim.mechanism import best_overlap, overlap
from tests.plugins.gim.test_dedup_mechanism import APPLE, CPU_WHEEL, NO_CUDA, pointer, terms, vocabulary

PATH = SecondPath(error_threshold=0.20, resolution_threshold=0.70, min_overlap=0.70)
LAYERS = (  # one cause seen from another layer: the wrapper's message, not torch's traceback
    "RuntimeError: Found no NVIDIA driver on your system... (accelerate launch, device_map='auto')"
)


def evidence(error: float, resolution: float, found_overlap: float) -> dict:
    found = gather_evidence(
        error_hits=[("m1", error, "m1")], lexical_hits=[], resolution_hits=[("m1", resolution)], is_active=bool
    )
    found["m1"].overlap = found_overlap
    return found


def decide(found: dict, second_path: SecondPath | None = PATH):
    return decide_hybrid(
        found, exception_type=None, error_threshold=0.35, resolution_threshold=0.74, second_path=second_path
    )


def test_a_weaker_error_with_strongly_agreeing_explanations_merges_by_the_second_path() -> None:
    assert decide(evidence(0.28, 0.72, 0.80)) is not None
    assert decide(evidence(0.28, 0.72, 0.80), second_path=None) is None  # rules 1-2 alone keep it apart


def test_the_second_path_needs_the_strong_overlap_and_its_own_thresholds() -> None:
    assert decide(evidence(0.28, 0.72, 0.60)) is None  # explanations agree, but not strongly
    assert decide(evidence(0.15, 0.90, 0.95)) is None  # not the same failure even by the weaker measure
    assert decide(evidence(0.90, 0.65, 0.95)) is None  # the causes read too differently


def test_every_veto_still_applies_on_the_second_path() -> None:
    found = evidence(0.28, 0.72, 0.90)
    found["m1"].conflicts = (Conflict("direction", "torch: up vs down"),)
    assert decide(found) is None


def test_rules_one_and_two_do_not_need_the_overlap() -> None:
    assert decide(evidence(0.80, 0.80, 0.0)) is not None


def test_best_overlap_is_the_best_item_and_a_reworded_cause_beats_a_look_alike() -> None:
    vocab = vocabulary()
    master = terms(NO_CUDA, CPU_WHEEL, pointer(CPU_WHEEL))
    reworded = terms(
        LAYERS,
        "A plain pip install torch resolved to the CPU-only wheel (+cpu); reinstall torch from the CUDA index URL.",
        pointer("reinstall the CUDA wheel of torch"),
    )
    look_alike = terms(NO_CUDA, APPLE, pointer(APPLE))
    assert best_overlap(reworded, [look_alike, master], vocab) == overlap(reworded, master, vocab)[0]
    assert best_overlap(reworded, [master], vocab) > best_overlap(look_alike, [master], vocab)
    assert best_overlap(reworded, [], vocab) == 0.0


def test_the_configured_second_path_is_stricter_than_the_mechanism_check() -> None:
    config = GimConfig()
    assert config.dedup_second_path
    assert config.dedup_second_path_error < config.dedup_error_threshold
    assert config.dedup_second_path_resolution < config.dedup_resolution_threshold
    assert config.dedup_second_path_overlap > config.dedup_mechanism_overlap
