"""Chunking does linear work on any file: a run of blank lines took seconds per 20 KB, growing with its square.

The import patterns began with ``^\\s*`` under ``re.M``: ``\\s`` crosses line ends, so from every line start of a
run of blank lines the pattern scanned the rest of the run (a Go or Rust file of 20,000 blank lines took 11-13 s;
a 1 MB one would take hours). Every worst-case text goes through chunking at 200,000 characters, where the old
form would outlast the suite's timeout (the hang guard; nothing here is timed).
"""

from __future__ import annotations

import pytest

from gateway_plugins.context.chunking import chunk_file
from tests.adversarial import ADVERSARIAL, CODE_ADVERSARIAL, repeat

SIZE = 100_000
WORST = {
    **ADVERSARIAL,
    **CODE_ADVERSARIAL,
    **{f"run of {unit!r}": lambda n, unit=unit: repeat(unit, n) for unit in ("\n", " \n", "\t\n", "import\n", "\n\t")},
}
FILES = ("a.py", "a.js", "a.ts", "a.go", "a.java", "a.rs")


@pytest.mark.parametrize("name", sorted(WORST))
def test_a_worst_case_file_is_chunked_in_every_language(name: str) -> None:
    text = WORST[name](SIZE)
    assert len(text) == SIZE
    for path in FILES:
        chunked = chunk_file(path, text)
        assert all(chunk.start_line <= chunk.end_line for chunk in chunked.chunks)
        assert all(isinstance(module, str) for module in chunked.imports)


def test_imports_are_found_as_before_after_blank_runs_and_indentation() -> None:
    python = "\n" * 1000 + "    from pkg.sub import (\n        a,\n        b,\n    )\n\timport os\n"
    assert chunk_file("m.py", python).imports == ["pkg.sub", "pkg.sub.a", "pkg.sub.b", "os"]
    go = 'package main\n\nimport (\n\t"fmt"\n\n\n\tstrs "strings"\n)\n'
    assert chunk_file("m.go", go).imports == ["fmt", "strings"]
    rust = "\n\n  pub use crate::store::Store;\n\nmod wire;\n"
    assert chunk_file("m.rs", rust).imports == ["crate::store::Store", "self::wire"]
