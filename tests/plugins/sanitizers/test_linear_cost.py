"""Each layer's work grows linearly with its input, on the inputs that used to make it quadratic.

Not timed (the machine is shared; ``bench/sanitizers.py`` prints the timings): the work is counted. Every
regex of a rule is RE2 (linear by construction, see ``test_engine``), so what remains to count is what
Python does per match and per hit: the matches handed to validators and the characters they may read (the
match plus at most ``CONTEXT`` on each side), and the hits the custom rules examine (each within a bounded
window). Ten times the input must cost at most about ten times the work.
"""

from __future__ import annotations

import pytest

from gateway.api import PlaceholderMap
from gateway_plugins.sanitizers import contextual, engine, rules_assign
from gateway_plugins.sanitizers.contextual import ContextualSanitizer
from gateway_plugins.sanitizers.patterns import PatternSanitizer

ADVERSARIAL = {
    "letters": lambda n: ("aZbYcXdWeV" * n)[:n],
    "digits": lambda n: ("4111234567" * n)[:n],
    "base64": lambda n: ("Ab3+/Xy9Qz" * n)[:n],
    "a@a@": lambda n: ("a@" * n)[:n],
    "emails": lambda n: ("a@a.bc " * n)[:n],
    "/a/a": lambda n: ("/a" * n)[:n],
    "colons": lambda n: ":" * n,
    "dots": lambda n: "." * n,
    "dashes": lambda n: "-" * n,
    "key=key=": lambda n: ("key=" * n)[:n],
    "api_key=": lambda n: ("api_key=" * n)[:n],
    "pass-pass-": lambda n: ("pass-" * n)[:n] + "=x",
    "token token": lambda n: ("token " * n)[:n],
    "password: x": lambda n: ("password: x " * n)[:n],
    "urls": lambda n: ("a://b:c@" * n)[:n],
    "home": lambda n: ("/home/a" * n)[:n],
    "quads": lambda n: ("1." * n)[:n],
    "cards": lambda n: ("4111 " * n)[:n],
    "pem": lambda n: ("-----BEGIN PRIVATE KEY-----" + "\\n" * n)[:n],
}


class Work:
    """Counts what Python is handed: matches, the characters validators may read, custom-rule hits."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.views = self.chars = self.hits = 0
        view_init = engine.View.__init__
        value = rules_assign.AssignmentRule._value
        after = contextual.ProximityRule._after
        work = self

        def counting_view(view, text, match, start, end):  # type: ignore[no-untyped-def]
            work.views += 1
            work.chars += end - start + 2 * engine.CONTEXT
            view_init(view, text, match, start, end)

        def counting_value(rule, *args):  # type: ignore[no-untyped-def]
            work.hits += 1
            return value(rule, *args)

        def counting_after(rule, *args, **kwargs):  # type: ignore[no-untyped-def]
            work.hits += 1
            return after(rule, *args, **kwargs)

        monkeypatch.setattr(engine.View, "__init__", counting_view)
        monkeypatch.setattr(rules_assign.AssignmentRule, "_value", counting_value)
        monkeypatch.setattr(contextual.ProximityRule, "_after", counting_after)

    def of(self, layer, text: str) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
        self.views = self.chars = self.hits = 0
        layer.sanitize_sync(text, placeholders=PlaceholderMap())
        return self.views, self.chars, self.hits


@pytest.mark.parametrize("layer", [PatternSanitizer(), ContextualSanitizer()], ids=["patterns", "contextual"])
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_work_grows_linearly(layer, name: str, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    work = Work(monkeypatch)
    small = work.of(layer, ADVERSARIAL[name](15_000))
    big = work.of(layer, ADVERSARIAL[name](150_000))
    for little, large in zip(small, big, strict=True):
        assert large <= 10.5 * little + 2 * engine.CONTEXT + 10, (small, big)
