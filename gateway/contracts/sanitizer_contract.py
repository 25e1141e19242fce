"""The contract every :class:`gateway.api.Sanitizer` layer honours. Reusable by third-party plugins::

    from gateway.contracts.sanitizer_contract import SanitizerContract

    class TestMyLayer(SanitizerContract):
        def make_sanitizer(self):
            return MyLayer()

A layer never raises on arbitrary (unicode, huge) input, reports finding spans inside the text it received,
puts each finding's placeholder in its output, leaves secret-free text alone, and its output is clean for
layer 1 (sanitizing the output again finds nothing new).
"""

from __future__ import annotations

import functools
import tempfile

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.api import FieldKind, PlaceholderMap, SanitizedText, Sanitizer
from gateway.app import prepare
from gateway.providers import ProviderHub

SECRETFUL = (
    "Traceback (most recent call last):\n"
    '  File "/home/alice/app/main.py", line 42, in <module>\n'
    "    client = OpenAI(api_key='sk-proj-Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789abcdEFGH')\n"
    "openai.AuthenticationError: contact alice.smith@acme-corp.io, db postgres://app:S3cr3tPw9@db.prod.internal/x"
)
_FRAGMENTS = [
    "password=", "sk-", "AKIA", "@", "/home/", "C:\\Users\\", "Bearer ", "eyJ", "://", ":", ".", "-----BEGIN ",
    "PRIVATE KEY-----", "token: ", "+1 ", "4111", "\n", "\\n", "<EMAIL_1>", "${X}", "ghp_", "xoxb-", ".internal",
]  # fmt: skip
texts = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(_FRAGMENTS)), max_size=30).map("".join)


def run(layer: Sanitizer, text: str, kind: FieldKind = FieldKind.ERROR_MESSAGE) -> SanitizedText:
    return anyio.run(lambda: layer.sanitize(text, kind=kind, placeholders=PlaceholderMap()))


@functools.cache
def layer_one() -> Sanitizer:
    """Layer 1 as a deployment has it: the installed ``patterns`` sanitizer, found through its entry point."""
    loaded, plugins = prepare({"gateway": {"data_dir": _LAYER_ONE_HOME.name}})
    return ProviderHub(loaded, plugins.registry).get("sanitizer", "patterns")


_LAYER_ONE_HOME = tempfile.TemporaryDirectory(prefix="layer-one-")  # removed when the process ends


class SanitizerContract:
    """Subclass and implement :meth:`make_sanitizer`."""

    def make_sanitizer(self) -> Sanitizer:
        raise NotImplementedError

    def check_result(self, text: str, result: SanitizedText) -> None:
        assert isinstance(result.text, str)
        for finding in result.findings:
            assert 0 <= finding.start < finding.end <= len(text), finding
            assert finding.category in ("secret", "pii", "internal")
            assert 0.0 <= finding.confidence <= 1.0
            if finding.placeholder is not None:
                assert finding.placeholder in result.text
        if not result.findings:
            assert result.text == text

    def test_is_a_sanitizer(self) -> None:
        layer = self.make_sanitizer()
        assert isinstance(layer, Sanitizer)
        assert isinstance(layer.name, str) and layer.name

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.differing_executors])
    @given(text=texts)
    def test_arbitrary_text_never_raises_and_spans_are_valid(self, text: str) -> None:
        layer = self.make_sanitizer()
        self.check_result(text, run(layer, text))

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.differing_executors])
    @given(text=texts)
    def test_output_is_clean_for_layer_one(self, text: str) -> None:
        layer = self.make_sanitizer()
        once = run(layer, text)
        again = run(layer_one(), once.text)
        new = [f for f in again.findings if once.text[f.start : f.end] not in text]
        assert not new, (once.text, new)

    def test_redacts_obvious_secrets_and_is_idempotent(self) -> None:
        layer = self.make_sanitizer()
        first = run(layer, SECRETFUL)
        self.check_result(SECRETFUL, first)
        assert first.findings
        second = run(layer, first.text)
        assert second.findings == [] and second.text == first.text

    def test_huge_input(self) -> None:
        """What the layer redacts in a small text it still redacts when the text is large (no cut-off, no
        timeout): it need not redact everything layer one does, only its own findings."""
        small = run(self.make_sanitizer(), SECRETFUL)
        redacted = {SECRETFUL[f.start : f.end] for f in small.findings if f.placeholder is not None}
        text = (SECRETFUL + "\n" + "x" * 1000 + "\n") * 300  # ~ 0.6 MB
        result = run(self.make_sanitizer(), text)
        self.check_result(text, result)
        assert not {value for value in redacted if value in result.text}

    def test_clean_text_unchanged(self) -> None:
        text = "ModuleNotFoundError: No module named 'numpy' (numpy 1.26.4, python 3.11.7) at 127.0.0.1:8000"
        assert run(self.make_sanitizer(), text).text == text

    def test_empty_text(self) -> None:
        result = run(self.make_sanitizer(), "")
        assert result.text == "" and result.findings == []
