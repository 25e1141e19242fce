"""The ``internal`` judge: every check at the right line, its scores, and its mechanical fixes."""

from __future__ import annotations

import ast
import subprocess
import textwrap
from pathlib import Path

import pytest

from gateway.api import PROCESS_CHARS, JudgeRequest, JudgeResult, ReviewFile, Sanitizer
from gateway.contracts.judge_contract import DEFECTIVE_PYTHON, JudgeContract
from gateway_plugins.judges.analysis import analyse_files
from gateway_plugins.judges.findings import DELETE, REWRITE, LineEdit, apply_edits, choose
from gateway_plugins.judges.fixes import edits_diff
from gateway_plugins.judges.internal import InternalJudge, InternalJudgeConfig
from gateway_plugins.judges.python_checks import cyclomatic_complexity

pytestmark = pytest.mark.anyio


def judge(scanner: Sanitizer | None = None, **config: object) -> InternalJudge:
    return InternalJudge(InternalJudgeConfig(**config), (lambda: scanner) if scanner is not None else None)


def request(*files: ReviewFile, scope: str = "paths", changed: tuple[str, ...] = ()) -> JudgeRequest:
    return JudgeRequest(task="review", scope=scope, files=files, changed_paths=changed)  # type: ignore[arg-type]


def at(result: JudgeResult, rule: str) -> list[int]:
    return [c.line for c in result.comments if c.rule == rule]


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


class TestInternalContract(JudgeContract):
    deterministic = True

    @pytest.fixture
    def judge(self, patterns: Sanitizer) -> InternalJudge:
        return judge(patterns)


async def test_python_defects_are_found_at_their_lines() -> None:
    result = await judge().review(request(ReviewFile("pkg/loader.py", DEFECTIVE_PYTHON)))
    assert at(result, "unused-import") == [2]
    assert at(result, "bare-except") == [9]
    assert at(result, "undefined-name") == [11]
    by_rule = {c.rule: c for c in result.comments}
    assert by_rule["undefined-name"].severity == "major" and "undefined_default" in by_rule["undefined-name"].message
    assert by_rule["bare-except"].end_line == 10
    assert not result.blocking
    # 100 - 20 (bare except) - 20 (undefined name) - 6 (unused import)
    assert result.score == 54
    assert result.dimensions["correctness"] == 60 and result.dimensions["maintainability"] == 94


async def test_swallowed_broad_exception_is_major_but_specific_pass_is_fine() -> None:
    code = src(
        """
        def a():
            try:
                risky()
            except Exception:
                pass


        def b():
            try:
                risky()
            except (ValueError, BaseException):
                ...


        def c():
            try:
                risky()
            except KeyError:
                pass
        """
    )
    result = await judge().review(request(ReviewFile("m.py", code)))
    assert at(result, "swallowed-exception") == [4, 11]
    assert not at(result, "bare-except")


async def test_parse_error_is_blocking_at_its_line() -> None:
    code = "def ok():\n    return 1\n\ndef broken(:\n    pass\n"
    result = await judge().review(request(ReviewFile("m.py", code)))
    assert at(result, "parse-error") == [4]
    assert result.blocking and result.score is not None and result.score <= 60


async def test_fragment_that_does_not_parse_is_not_a_parse_error() -> None:
    fragment = "\n\n    if x:\n        return compute(x)\n"
    result = await judge().review(
        request(ReviewFile("thought/m.py", fragment, origin="thought", fragment=True, changed_lines=frozenset({4})))
    )
    assert not at(result, "parse-error")
    assert result.notes and "do not parse" in result.notes


async def test_undefined_name_in_a_thought_snippet_is_only_minor() -> None:
    result = await judge().review(request(ReviewFile("thought/block-1.py", "print(helper(1))\n", origin="thought")))
    [comment] = [c for c in result.comments if c.rule == "undefined-name"]
    assert comment.severity == "minor" and "snippet" in comment.message


def complexity_of(code: str) -> int:
    function = ast.parse(src(code)).body[0]
    assert isinstance(function, ast.FunctionDef)
    return cyclomatic_complexity(function)


def test_cyclomatic_complexity_counts_decisions() -> None:
    assert complexity_of("def f():\n    return 1\n") == 1
    assert (
        complexity_of("def f(x):\n    if x:\n        return 1\n    elif x > 2:\n        return 2\n    return 3\n") == 3
    )
    assert complexity_of("def f(a, b, c):\n    return a and b or c\n") == 3
    assert complexity_of("def f(xs):\n    return [x for x in xs if x if x > 1]\n") == 4
    nested = "def f(x):\n    def g(y):\n        if y:\n            return 1\n    return g\n"
    assert complexity_of(nested) == 1


async def test_complex_function_is_flagged_at_its_definition() -> None:
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(12))
    code = "import math\n\n\ndef busy(x):\n" + branches + "    return math.inf\n"
    result = await judge(complexity_threshold=10).review(request(ReviewFile("m.py", code)))
    [comment] = [c for c in result.comments if c.rule == "complexity"]
    assert comment.line == 4 and comment.end_line == code.count("\n") and "13" in comment.message
    assert comment.severity == "minor"
    relaxed = await judge(complexity_threshold=20).review(request(ReviewFile("m.py", code)))
    assert not at(relaxed, "complexity")


async def test_debugger_and_print_left_in() -> None:
    code = src(
        """
        import logging


        def f(x):
            breakpoint()
            print(x)
            return logging.getLogger(x)
        """
    )
    result = await judge().review(request(ReviewFile("pkg/m.py", code)))
    assert at(result, "debugger") == [5]
    assert at(result, "print-statement") == [6]
    in_tests = await judge().review(request(ReviewFile("tests/test_m.py", code)))
    assert not at(in_tests, "print-statement")


async def test_only_changed_lines_are_reviewed_except_breakage() -> None:
    code = "import os\nimport sys\n\n\ndef f():\n    return missing_name\n"
    file = ReviewFile("m.py", code, changed_lines=frozenset({2}))
    result = await judge().review(request(file, scope="diff", changed=("m.py",)))
    assert at(result, "unused-import") == [2]  # os (line 1) is unused too, but line 1 did not change
    assert at(result, "undefined-name") == [6]  # a change can break code it did not touch


async def test_trailing_whitespace_inside_a_string_is_data() -> None:
    code = 'TEXT = """keep   \nthese   \n"""\nvalue = 1   \n'
    result = await judge().review(request(ReviewFile("m.py", code)))
    assert at(result, "trailing-whitespace") == [4]


async def test_reexports_in_init_are_informational() -> None:
    result = await judge().review(request(ReviewFile("pkg/__init__.py", "from pkg.core import run\n")))
    [comment] = [c for c in result.comments if c.rule == "unused-import"]
    assert comment.severity == "info" and "__all__" in comment.message
    assert result.proposed_diff is None


async def test_generic_line_checks() -> None:
    code = (
        "function total(items) {\n"  # 1
        "  // TODO: handle empty lists\n"  # 2
        "  console.log(items);   \n"  # 3
        "  debugger;\n"  # 4
        "\treturn items.reduce((a, b) => a + b, 0);\n"  # 5
        "  const label = '" + "x" * 130 + "';\n"  # 6
        "}\n"
    )
    result = await judge().review(request(ReviewFile("web/total.js", code)))
    assert at(result, "todo") == [2]
    assert at(result, "console-log") == [3]
    assert at(result, "trailing-whitespace") == [3]
    assert at(result, "debugger") == [4]
    assert at(result, "mixed-indentation") == [5]
    assert at(result, "long-line") == [6]


async def test_conflict_markers_are_blocking() -> None:
    code = "a = 1\n<<<<<<< HEAD\nb = 2\n=======\nb = 3\n>>>>>>> topic\n"
    result = await judge().review(request(ReviewFile("notes.txt", code, changed_lines=frozenset({3}))))
    assert at(result, "conflict-marker") == [2, 4, 6]
    assert result.blocking


async def test_markdown_hard_breaks_and_rst_underlines_are_left_alone() -> None:
    markdown = "Title  \nline with hard break  \nreal trailing   \n"
    rst = "Heading\n=======\n"
    result = await judge().review(request(ReviewFile("doc.md", markdown), ReviewFile("doc.rst", rst)))
    assert [(c.path, c.line) for c in result.comments if c.rule == "trailing-whitespace"] == [("doc.md", 3)]
    assert not at(result, "conflict-marker")


async def test_secrets_on_changed_lines_are_blocking_and_not_echoed(patterns: Sanitizer) -> None:
    secret = "AKIAZ7QK3TRW4XN2LP5M"
    code = (
        f'import boto3\n\nKEY = "{secret}"\nOLD = "ghp_8fK2mQ9xLp4Rt7Vw1Yz3Bc6Dn0Hj5Sa2Ge4U"\nboto3.client(KEY, OLD)\n'
    )
    file = ReviewFile("app/aws.py", code, changed_lines=frozenset({1, 2, 3, 5}))
    result = await judge(patterns).review(request(file, scope="diff", changed=("app/aws.py",)))
    [comment] = [c for c in result.comments if c.rule == "secret"]
    assert comment.line == 3 and comment.severity == "blocking" and "aws" in comment.message
    assert secret not in repr(result)
    assert result.dimensions["security"] == 60 and result.blocking


async def test_without_a_secret_scanner_security_is_not_scored() -> None:
    def unavailable() -> Sanitizer:
        raise RuntimeError("no sanitizer configured")

    result = await InternalJudge(InternalJudgeConfig(), unavailable).review(request(ReviewFile("m.py", "x = 1\n")))
    assert "security" not in result.dimensions
    assert result.notes and "secret scan unavailable" in result.notes


@pytest.mark.parametrize(
    ("changed", "coverage"),
    [
        (("src/parser.py",), 0),
        (("src/parser.py", "tests/test_parser.py"), 100),
        (("src/parser.py", "tests/test_other.py"), 50),
        (("README.md",), None),
    ],
)
async def test_test_coverage_of_changed_sources(changed: tuple[str, ...], coverage: int | None) -> None:
    files = tuple(ReviewFile(path, "x = 1\n", changed_lines=frozenset({1})) for path in changed)
    result = await judge().review(request(*files, scope="diff", changed=changed))
    assert result.dimensions.get("test_coverage") == coverage
    untested = [c for c in result.comments if c.rule == "untested-change"]
    assert [c.path for c in untested] == (["src/parser.py"] if coverage in (0, 50) else [])


async def test_rule_caps_keep_style_noise_small() -> None:
    code = "".join(f"value_{i} = {i}   \n" for i in range(30))
    result = await judge().review(request(ReviewFile("m.py", code)))
    assert result.score == 94 and result.dimensions["style"] == 94
    assert len(at(result, "trailing-whitespace")) == 10  # comments per rule and file are capped too


def git_apply(tmp_path: Path, files: dict[str, str], diff: str) -> dict[str, str]:
    for path, content in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(content)
    done = subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=diff.encode(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return {path: (tmp_path / path).read_text() for path in files}


async def test_mechanical_fixes_apply_and_remove_the_findings(tmp_path: Path) -> None:
    code = src(
        """
        import os
        import sys, json
        from collections import OrderedDict, deque  # containers


        def f(path):
            try:
                breakpoint()
                return os.path.exists(path), deque()<SPACES>
            except:
                return None
        """
    ).replace("<SPACES>", "   ")
    result = await judge().review(request(ReviewFile("pkg/m.py", code)))
    assert result.proposed_diff is not None
    fixed = git_apply(tmp_path, {"pkg/m.py": code}, result.proposed_diff)["pkg/m.py"]
    assert fixed == src(
        """
        import os
        from collections import deque  # containers


        def f(path):
            try:
                return os.path.exists(path), deque()
            except Exception:
                return None
        """
    )
    again = await judge().review(request(ReviewFile("pkg/m.py", fixed)))
    assert not {"unused-import", "bare-except", "trailing-whitespace", "debugger"} & {c.rule for c in again.comments}
    assert again.score is not None and result.score is not None and again.score > result.score


async def test_removing_the_only_statement_of_a_block_leaves_pass(tmp_path: Path) -> None:
    code = "def g():\n    import json\n\n\ndef f():\n    breakpoint()\n"
    result = await judge().review(request(ReviewFile("m.py", code)))
    assert result.proposed_diff is not None
    fixed = git_apply(tmp_path, {"m.py": code}, result.proposed_diff)["m.py"]
    assert fixed == "def g():\n    pass\n\n\ndef f():\n    pass\n"
    ast.parse(fixed)


async def test_fixes_keep_files_without_a_final_newline(tmp_path: Path) -> None:
    code = "import os\nimport sys\nprint(os.sep)   "
    result = await judge().review(request(ReviewFile("tool/__main__.py", code)))
    assert result.proposed_diff is not None and "\\ No newline at end of file" in result.proposed_diff
    fixed = git_apply(tmp_path, {"tool/__main__.py": code}, result.proposed_diff)["tool/__main__.py"]
    assert fixed == "import os\nprint(os.sep)"


async def test_no_fix_for_thought_code_fragments_or_truncated_files() -> None:
    code = "import os\nx = 1   \n"
    files = (
        ReviewFile("thought/block-1.py", code, origin="thought"),
        ReviewFile("big.py", code, truncated=True),
        ReviewFile("frag.py", code, fragment=True),
    )
    result = await judge().review(request(*files))
    assert at(result, "trailing-whitespace") and result.proposed_diff is None


async def test_nothing_to_review_abstains() -> None:
    result = await judge().review(request())
    assert result.score is None and result.notes == "nothing to review"


@pytest.mark.parametrize("name", ["pkg/plain.py", 'odd "name"\twith\\escapes.py'])
@pytest.mark.parametrize("final_newline", [True, False])
def test_edit_diffs_apply_with_git(tmp_path: Path, name: str, final_newline: bool) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 31))
    content = content if final_newline else content.rstrip("\n")
    edits = [
        LineEdit(1, None, DELETE, "a"),
        LineEdit(2, "changed two", REWRITE, "b"),
        LineEdit(15, "changed fifteen", REWRITE, "c"),
        LineEdit(18, None, DELETE, "d"),
        LineEdit(30, "last", REWRITE, "e"),
    ]
    chosen = choose(edits)
    applied = git_apply(tmp_path, {name: content}, edits_diff(name, content, chosen))[name]
    assert applied == apply_edits(content, chosen)
    assert applied.endswith("last\n" if final_newline else "last")


async def test_a_long_module_is_analysed_in_a_worker_process_with_the_same_result() -> None:
    """From PROCESS_CHARS on, ``ast.parse`` would keep the GIL (and so the event loop) for tens of milliseconds."""
    body = "".join(f"def handler_{n}(event):\n    return event.get('x') + {n} \n\n\n" for n in range(900))
    module = ReviewFile("pkg/handlers.py", "import os\n\n\n" + body)
    assert len(module.content) >= PROCESS_CHARS
    result = await judge().review(request(module))
    analysis = analyse_files((module,), complexity_threshold=10, max_line_length=120)
    assert [c.line for c in result.comments if c.rule == "unused-import"] == [1]
    assert result.proposed_diff == "".join(analysis.diffs) and "-import os" in (result.proposed_diff or "")
    assert len(at(result, "trailing-whitespace")) == 10  # the per-rule cap; all 900 counted in the score


async def test_code_nested_too_deeply_to_parse_is_a_parse_error() -> None:
    deep = ReviewFile("pkg/deep.py", "def f():\n    return " + "a+" * 40_000 + "a\n")
    result = await judge().review(request(deep))
    assert at(result, "parse-error") == [1] and result.score is not None


async def test_python_with_lone_carriage_returns_is_noted_not_misnumbered() -> None:
    source = "import os\rtry:\r    x = 1\rexcept:\r    pass\r"  # Python numbers 5 lines here, git and patches 1
    result = await judge().review(request(ReviewFile("mac.py", source)))
    assert not at(result, "bare-except") and not at(result, "unused-import")
    assert result.notes is not None and "lone carriage returns" in result.notes
