"""The Python checks hold other threads' parses back while pyflakes runs: it parses each string annotation with
``ast.parse`` itself, which CPython 3.11 cannot do in two threads at once (see tests/parsing_threads.py)."""

from __future__ import annotations

from pyflakes.checker import Checker

from gateway.api import ReviewFile, parse_python
from gateway_plugins.judges.python_checks import analyse_python, undefined_names
from tests.parsing_threads import waits_for_the_first

ANNOTATED = "\n".join(f"def f{i}(a: 'dict[str, list[int]]') -> 'tuple[int, ...]':\n    return a\n" for i in range(50))


def _parse_small() -> None:
    parse_python("x = 1")


def test_a_review_holds_other_parses_back_while_pyflakes_parses_annotations() -> None:
    file = ReviewFile(path="typed.py", content=ANNOTATED)
    annotations = Checker.handleStringAnnotation.__code__
    report = []

    def review() -> None:
        report.append(analyse_python(file, complexity_threshold=10, is_test=False))

    assert waits_for_the_first(review, annotations, _parse_small)
    assert report[0].parsed


def test_the_fix_check_holds_other_parses_back_too() -> None:
    annotations = Checker.handleStringAnnotation.__code__
    found: list[set[str] | None] = []
    assert waits_for_the_first(lambda: found.append(undefined_names(ANNOTATED)), annotations, _parse_small)
    assert found == [set()]
