"""A stdio upstream's stderr: logged line by line, with memory and the log bounded whatever the server writes."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from typing import Any

from structlog.testing import capture_logs

from gateway.upstream_process import MAX_LINE, MAX_LINES_PER_SECOND, StderrPump


def _write_stderr(program: str) -> list[dict[str, Any]]:
    """Run ``program`` (Python) with its stderr on a pump; the log events the pump made."""
    with capture_logs() as logs:
        pump = StderrPump("py", {"env.KEY": "s3cret"})
        try:
            subprocess.run([sys.executable, "-c", program], stderr=pump.writer, timeout=60, check=True)
        finally:
            pump.spawned()
        assert pump.finished(30)
    return logs


def test_a_line_without_end_is_read_in_bounded_pieces() -> None:
    """64 MB and no newline: the pump keeps one piece at a time, and logs the line cut, then the next one."""
    program = "import os\nfor _ in range(64): os.write(2, b'y' * 1_000_000)\nos.write(2, b'\\nafter s3cret\\n')"
    tracemalloc.start()
    try:
        logs = _write_stderr(program)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = [e["line"] for e in logs if e["event"] == "upstream stderr"]
    assert peak < 8_000_000, f"{peak} bytes held at once"
    assert lines == ["y" * MAX_LINE, "after <env.KEY>"]


def test_a_flood_of_lines_is_logged_up_to_the_rate_then_summed_up() -> None:
    logs = _write_stderr("import sys\nfor n in range(20_000): print(f'line {n}', file=sys.stderr)")
    logged = [e for e in logs if e["event"] == "upstream stderr"]
    summaries = [e for e in logs if e["event"] == "upstream stderr suppressed"]
    assert logged[0]["line"] == "line 0"
    assert len(logged) <= 3 * MAX_LINES_PER_SECOND  # the flood may straddle a second or two
    assert summaries and all(e["upstream"] == "py" for e in summaries)
    assert len(logged) + sum(e["lines"] for e in summaries) == 20_000
