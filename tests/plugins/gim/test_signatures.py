"""Error-signature normalisation: what differs between machines goes, what identifies the failure stays."""

from __future__ import annotations

from gateway_plugins.gim.signatures import lexical_tokens, normalise_error, normalise_text


def test_two_machines_one_signature() -> None:
    linux = (
        "Traceback (most recent call last):\n"
        '  File "/home/alice/.venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 289, in _lazy_init\n'
        '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
        "AssertionError: Torch not compiled with CUDA enabled"
    )
    windows = (
        "Traceback (most recent call last):\n"
        '  File "C:\\Users\\Bob\\miniconda3\\envs\\py310\\lib\\site-packages\\torch\\cuda\\__init__.py", line 239, '
        "in _lazy_init\n"
        '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
        "AssertionError: Torch not compiled with CUDA enabled"
    )
    a, b = normalise_error(linux), normalise_error(windows)
    assert a.text == b.text
    assert a.exception_type == "AssertionError"
    assert a.components == ("torch/cuda/__init__.py",)
    assert a.text.startswith("AssertionError: Torch not compiled with CUDA enabled")  # the failure leads
    for noise in ("alice", "Bob", "289", "239", "python3.11", "py310"):
        assert noise not in a.text + b.text


def test_versions_timestamps_addresses_and_placeholders_go() -> None:
    text = (
        "2024-03-01 12:00:01,123 ERROR worker <0x7f3a2b1c9d80> crashed: numpy 1.24.0 has no attribute 'float' "
        "(request 3f2b9c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e, user <EMAIL_1>, path /Users/<PATH_USER_1>/app/main.py:17:5)"
    )
    sig = normalise_error(text)
    for gone in ("2024", "12:00", "0x7f", "1.24.0", "3f2b9c1e", "<EMAIL_1>", "PATH_USER", ":17"):
        assert gone not in sig.text, gone
    assert "has no attribute 'float'" in sig.text and "main.py" in sig.text


def test_typographic_quotes_and_exception_types() -> None:
    sig = normalise_error(
        "Am running numpy and get \u2018AttributeError: module \u2018numpy\u2019 has no attribute\u2019"
    )
    assert "'numpy'" in sig.text and sig.exception_type == "AttributeError"
    assert normalise_error("openai.lib._old_api.APIRemovedInV1:\n\nYou tried to access").exception_type == (
        "APIRemovedInV1"
    )
    assert normalise_error("E   TypeError: Descriptors cannot not be created directly.").exception_type == "TypeError"
    generic = normalise_error("Module not found: Error: Can't resolve 'crypto'")  # a bare Error names no type
    assert generic.exception_type is None and generic.key_lines == ("Module not found: Error: Can't resolve 'crypto'",)
    plain = normalise_error("nvcc fatal : Unsupported gpu architecture 'compute_86'")
    assert plain.exception_type is None and plain.key_lines == (
        "nvcc fatal : Unsupported gpu architecture 'compute_86'",
    )


def test_repeated_lines_and_gutters_are_dropped() -> None:
    notebook = "---> 16 from llama_index.llms import HuggingFaceLLM\n     17 # comment\n\nImportError: cannot import"
    sig = normalise_error(notebook)
    assert sig.text.splitlines()[0] == "ImportError: cannot import"
    assert "from llama_index.llms import HuggingFaceLLM" in sig.text and "16" not in sig.text
    assert normalise_error("x failed\nx failed\nx failed").text == "x failed"


def test_lexical_tokens_split_identifiers() -> None:
    tokens = lexical_tokens("ModuleNotFoundError: No module named 'torch._six' in the PILLOW_VERSION check")
    assert {"modulenotfounderror", "module", "found", "error", "torch", "six", "pillow_version", "pillow"} <= set(
        tokens
    )
    assert "the" not in tokens and "in" not in tokens


def test_normalise_text_for_prose() -> None:
    assert normalise_text("The key <API_KEY_1> was \u201crevoked\u201d  \n") == 'The key was "revoked"'


def test_log_prefixes_go_and_one_failure_reads_alike_from_any_log() -> None:
    """Timestamps, levels, CI markers, build step numbers, source references and grep file names say when and
    where a line was logged, not what failed: the same failure logged by a scheduler, a CI runner, a build and a
    batch job normalises to the same line."""
    plain = normalise_error("Runtime Error: Could not find profile named 'analytics'").text
    for logged in (
        "[2023-09-14, 04:00:12 UTC] {subprocess.py:93} INFO - Runtime Error: Could not find profile named 'analytics'",
        "2023-09-14T03:10:44.9012240Z ##[error]Runtime Error: Could not find profile named 'analytics'",
        "#7 0.613 Runtime Error: Could not find profile named 'analytics'",
        "[2023-09-14 10:14:33 +0000] [7] [ERROR] Runtime Error: Could not find profile named 'analytics'",
        "job-1187.out: ERROR: Runtime Error: Could not find profile named 'analytics'",
        "[rank1]: Runtime Error: Could not find profile named 'analytics'",
    ):
        assert normalise_error(logged).text == plain, logged
    assert "subprocess" not in lexical_tokens(normalise_error("{subprocess.py:93} INFO - x failed").text)


def test_a_named_tag_stays_and_a_line_of_prefix_alone_is_kept() -> None:
    assert normalise_error("[Vue warn]: Failed to mount component").text == "[Vue warn]: Failed to mount component"
    assert (
        normalise_error("[scrapy.core.scraper] ERROR: Spider error").text == "[scrapy.core.scraper] ERROR: Spider error"
    )
    assert normalise_error("[ERROR]").text == "[ERROR]"
    assert normalise_error("Error: writing blob").text == "Error: writing blob"  # a message's own word, not a level
    assert normalise_error("E   ImportError: x").exception_type == "ImportError"


def test_a_loopback_address_is_named_not_stripped() -> None:
    """``::1`` against ``127.0.0.1`` is the whole difference between two causes (Node 17+ resolving localhost to
    IPv6, a database not running); the port goes, as line numbers do."""
    six = normalise_error("Error: connect ECONNREFUSED ::1:5432").key_lines
    four = normalise_error("Error: connect ECONNREFUSED 127.0.0.1:5432").key_lines
    assert six == ("Error: connect ECONNREFUSED ipv6-loopback",)
    assert four == ("Error: connect ECONNREFUSED ipv4-loopback",)
    assert normalise_error("connect to [::1]:6379 failed").key_lines == ("connect to ipv6-loopback failed",)
    assert normalise_error("std::vector<int>::size failed at x.cpp:12:3").key_lines == (
        "std::vector<int>::size failed at x.cpp",
    )
