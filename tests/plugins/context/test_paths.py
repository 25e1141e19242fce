"""Path classification: tests, examples, docs and type declarations (ranking priors, what gets embedded)."""

from __future__ import annotations

from gateway_plugins.context.paths import is_declaration, is_doc, is_example, is_secondary, is_test


def test_declaration_files_are_documentation() -> None:
    assert is_declaration("typings/index.d.ts") and is_declaration("pkg/module.pyi") and is_declaration("x.d.mts")
    assert not is_declaration("lib/command.js") and not is_declaration("src/app.ts")
    assert is_doc("typings/index.d.ts") and is_secondary("pkg/module.pyi") and not is_doc("src/app.ts")


def test_tests_examples_and_prose() -> None:
    assert is_test("tests/test_app.py") and is_test("src/app.spec.js") and not is_test("src/click/testing.py")
    assert is_example("examples/tutorial/app.py") and not is_example("src/flask/app.py")
    assert is_doc("docs/index.rst") and is_doc("README.md") and not is_doc("src/flask/app.py")
