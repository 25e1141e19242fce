"""Both offline layers pass the sanitizer contract (the Gemini layer's contract runs against the fake)."""

from __future__ import annotations

from gateway.api import Sanitizer
from gateway.contracts.sanitizer_contract import SanitizerContract
from gateway_plugins.sanitizers.contextual import ContextualSanitizer
from gateway_plugins.sanitizers.patterns import PatternSanitizer


class TestPatternsContract(SanitizerContract):
    def make_sanitizer(self) -> Sanitizer:
        return PatternSanitizer()


class TestContextualContract(SanitizerContract):
    def make_sanitizer(self) -> Sanitizer:
        return ContextualSanitizer()

    def test_huge_input(self) -> None:
        # Alone, the contextual layer knows neither e-mails nor URL credentials (layer 1's); it must still
        # find the key assigned in the call.
        from gateway.contracts.sanitizer_contract import SECRETFUL, run

        text = (SECRETFUL + "\n" + "x" * 1000 + "\n") * 300
        result = run(self.make_sanitizer(), text)
        self.check_result(text, result)
        assert "sk-proj-Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789abcdEFGH" not in result.text
