"""Evidence extraction for the duplicate decision (:mod:`gateway_plugins.gim.evidence`) on realistic reports."""

from __future__ import annotations

from typing import Any

from gateway_plugins.gim.evidence import canonical_package, extract_facts, identifier_tokens
from gateway_plugins.gim.models import FixBundle


def fix(*actions: tuple[str, str, str], code: str | None = None, versions: dict[str, str] | None = None) -> FixBundle:
    data: dict[str, Any] = {
        "env_actions": [
            {"order": i, "type": kind, "command": command, "explanation": why}
            for i, (kind, command, why) in enumerate(actions, start=1)
        ],
        "verification": [],
        "constraints": {"working_versions": versions or {}},
        "code_fix": code,
    }
    return FixBundle.model_validate(data)


FLASK_TRACE = (
    '  File "/usr/local/lib/python3.9/site-packages/flask/app.py", line 28, in <module>\n'
    "    from werkzeug.urls import url_quote\n"
    "ImportError: cannot import name 'url_quote' from 'werkzeug.urls' "
    "(/usr/local/lib/python3.9/site-packages/werkzeug/urls.py)"
)


def test_failure_line_template_and_slot_values_are_machine_independent() -> None:
    linux = extract_facts(FLASK_TRACE, "", None)
    windows = extract_facts(
        "ImportError: cannot import name 'url_quote' from 'werkzeug.urls' "
        "(C:\\Users\\k\\env\\Lib\\site-packages\\werkzeug\\urls.py)",
        "",
        None,
    )
    assert linux.failure_lines == windows.failure_lines
    (line,) = linux.failure_lines
    assert line.template == "importerror cannot import name <> from <> <>"
    assert line.values == ("url_quote", "werkzeug.urls", "werkzeug/urls.py")


def test_a_line_without_quoted_or_path_values_has_no_slots_to_compare() -> None:
    facts = extract_facts("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB", "", None)
    assert facts.failure_lines == ()


def test_traced_libraries_come_from_library_frames_only() -> None:
    pandas_trace = (
        '  File "/venv/lib/python3.10/site-packages/pandas/io/sql.py", line 1405, in execute\n'
        '  File "/home/ana/report.py", line 9, in main\n'
        "sqlalchemy.exc.ObjectNotExecutableError: Not an executable object: 'SELECT * FROM orders'"
    )
    assert extract_facts(pandas_trace, "", None).components == {"pandas"}
    own_code = '  File "/home/ana/report.py", line 9, in main\nAttributeError: x'
    assert extract_facts(own_code, "", None).components == frozenset()


def test_install_commands_give_packages_and_directions() -> None:
    facts = extract_facts(
        "",
        "",
        fix(
            ("downgrade", 'pip install "numpy<1.24"', "keep the aliases"),
            ("upgrade", "pip install -U torch torchvision --index-url https://download.pytorch.org/whl/cu121", "new"),
            ("install", "pip install -r requirements.txt pydantic-settings", "settings moved"),
            ("command", "npm install chalk@latest", "ESM build"),
        ),
    )
    assert facts.subjects == {"numpy", "torch", "torchvision", "pydantic-settings", "chalk"}
    assert facts.directions == {
        "numpy": {"down"},
        "torch": {"up"},
        "torchvision": {"up"},
        "chalk": {"up"},
    }


def test_the_action_type_gives_the_direction_of_a_pinned_version() -> None:
    facts = extract_facts("", "", fix(("downgrade", "npm install node-fetch@2", "CommonJS build")))
    assert facts.directions == {"node-fetch": {"down"}}
    neutral = extract_facts("", "", fix(("install", "npm install node-fetch@2", "CommonJS build")))
    assert neutral.subjects == {"node-fetch"} and neutral.directions == {}


def test_working_versions_give_subjects_and_directions() -> None:
    facts = extract_facts("", "", fix(versions={"Werkzeug": "<3.0 with Flask 2.2", "Flask": ">=2.3", "python": "3.12"}))
    assert facts.subjects == {"werkzeug", "flask", "python"}
    assert facts.directions == {"werkzeug": {"down"}, "flask": {"up"}}


def test_prose_names_versioned_packages_but_not_quantities() -> None:
    facts = extract_facts(
        "",
        "PyTorch 2.0 removed torch._six; Pillow 10 dropped ANTIALIAS. The stale kernel holds 17 GiB on GPU 0.",
        None,
    )
    assert facts.subjects == {"torch", "pil"}


def test_prose_states_a_direction_only_where_the_fix_does_not() -> None:
    anthropic = extract_facts(
        "", "The SDK is too new: count_tokens() was removed in anthropic 0.39.0. Fix: pin anthropic<0.39.", None
    )
    assert anthropic.directions == {"anthropic": {"down"}}
    kepler = extract_facts(
        "",
        "The K80 is too old for current torch builds; upgrading torch makes it worse.",
        fix(("downgrade", "pip install torch==1.12.1+cu113", "last build with sm_37")),
    )
    assert kepler.directions == {"torch": {"down"}}  # the command's direction wins over descriptive prose


def test_explained_tokens_come_from_cause_and_fix_mentioned_from_everything() -> None:
    facts = extract_facts(
        "AttributeError: 'Anthropic' object has no attribute 'count_tokens'",
        "client.count_tokens() was removed in anthropic 0.39.0",
        None,
    )
    assert "count_tokens" in facts.explained and "anthropic" in facts.explained
    assert "attributeerror" in facts.mentioned and "attributeerror" not in facts.explained


def test_package_names_have_one_spelling() -> None:
    assert canonical_package("PyTorch") == "torch"
    assert canonical_package("opencv-python-headless") == "cv2"
    assert canonical_package("scikit-learn") == "sklearn"
    assert canonical_package("psycopg2-binary") == "psycopg2"
    assert canonical_package("langchain_community") == canonical_package("langchain-community")
    assert canonical_package("@rollup/rollup-linux-x64-gnu") == "@rollup/rollup-linux-x64-gnu"
    assert canonical_package("line") is None and canonical_package("2024") is None


def test_identifier_tokens_split_dotted_and_underscored_names() -> None:
    assert {"torch", "six"} <= identifier_tokens("torch._six")
    assert "langchain_community" in identifier_tokens("langchain-community")
    assert "the" not in identifier_tokens("the module") and "np" not in identifier_tokens("np.float")


def test_pathological_input_is_read_in_bounded_work() -> None:
    """A 200 kB token of dots and dashes (quadratic for the error normaliser) and a 100 000-argument command: only
    the error's first part is normalised, and every other pattern is anchored, so this finishes promptly."""
    blob = "a.b-" * 50_000
    big = fix(("upgrade", "pip install " + "six " * 100_000, blob))
    facts = extract_facts(blob, blob + " is too old", big)
    assert facts.failure_lines == () and facts.components == frozenset()
    assert facts.subjects == {"six"} and facts.directions == {"six": {"up"}}
