"""The README's REST session with ``curl`` runs as written: its config and its shell block, taken from the README,
against a real ``gateway serve --transport http`` with the gateway issuing its own tokens, and every output the
README shows (the ``# ...`` lines, ``...`` standing for what varies) is what the commands print."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugins.context.support import sample_repo

ROOT = Path(__file__).resolve().parents[3]
FENCE = re.compile(r"^```(toml|sh)\n(.*?)^```$", re.MULTILINE | re.DOTALL)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="the session uses curl and jq"),
]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("\n### REST API\n")
    return text[start : text.index("\n## ", start)]


def _blocks() -> tuple[str, str]:
    blocks = dict((kind, body) for kind, body in FENCE.findall(_section()))
    return blocks["toml"], blocks["sh"]


def _expected(script: str) -> list[re.Pattern[str]]:
    """The outputs the README shows: each ``# `` line under a command, ``...`` matching anything."""
    lines = [line[2:] for line in script.splitlines() if line.startswith("# ")]
    return [re.compile(".*".join(map(re.escape, line.split("..."))) + r"\Z") for line in lines]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_readme_session_runs_as_written(tmp_path: Path, embed_data_dir: Path) -> None:
    config, script = _blocks()
    assert "gateway tokens issue" in script and "/search" in script and "/index/start" in script
    repo = sample_repo(tmp_path / "backend")
    config = config.replace("/srv/repos", tmp_path.as_posix())
    (tmp_path / "context.toml").write_text(f'{config}\n[gateway]\ndata_dir = "{embed_data_dir.as_posix()}"\n')
    port = _free_port()
    runnable = script.replace("8765", str(port)).replace("/srv/repos/backend", str(repo))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    out_file, err_file = tmp_path / "session.out", tmp_path / "session.err"
    with out_file.open("w") as stdout, err_file.open("w") as stderr:  # files: the server keeps a pipe open
        session = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", runnable],
            cwd=tmp_path,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # the server it starts in the background is in this group, stopped below
        )
        try:
            session.wait(timeout=240)
        finally:
            try:
                os.killpg(session.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    out, err = out_file.read_text(), err_file.read_text()
    assert session.returncode == 0, out + err[-4000:]
    printed = out.splitlines()
    expected = _expected(script)
    assert len(printed) == len(expected), out
    for line, pattern in zip(printed, expected, strict=True):
        assert pattern.match(line), f"the README shows {pattern.pattern!r}, the command printed {line!r}"
