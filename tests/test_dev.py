"""``./dev``: what it installs for which command, what it says, and when it installs again. A stand-in Python (a
shell script that records its arguments) plays the interpreter and pip, so nothing is downloaded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "{log}"
if [ "$1" = "-c" ]; then exit {version_check}; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
  printf '#!/bin/sh\\necho gateway "$@"\\n' > "$3/bin/gateway" && chmod +x "$3/bin/gateway"
fi
"""


class Dev:
    def __init__(self, tmp_path: Path, *, version_check: int = 0) -> None:
        self.log = tmp_path / "python.log"
        self.venv = tmp_path / "venv"
        python = tmp_path / "python3"
        python.write_text(FAKE_PYTHON.format(log=self.log, version_check=version_check))
        python.chmod(0o755)
        self.env = {**os.environ, "PYTHON": str(python), "MCP_GATEWAY_VENV": str(self.venv)}

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        self.log.write_text("")
        return subprocess.run([str(ROOT / "dev"), *args], env=self.env, capture_output=True, text=True, check=False)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


@pytest.fixture
def dev(tmp_path: Path) -> Dev:
    return Dev(tmp_path)


def test_first_run_says_what_it_does_and_installs_only_what_serving_needs(dev: Dev) -> None:
    done = dev("gateway", "serve")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "gateway serve\n"
    assert "first run: creating" in done.stderr and "about 1-2 minutes" in done.stderr
    assert done.stderr.rstrip().endswith("./dev: ready")
    assert dev.calls()[-1] == f"-m pip install --quiet -e {ROOT}"  # no dev extra, no example pack
    assert f"-m venv {dev.venv}" in dev.calls()
    assert (dev.venv / ".installed-serve").exists() and not (dev.venv / ".installed-dev").exists()
    again = dev("gateway", "tools")
    assert (again.stdout, again.stderr, dev.calls()) == ("gateway tools\n", "", [])


def test_other_commands_add_the_dev_tools_once(dev: Dev) -> None:
    dev("gateway", "serve")
    done = dev("echo", "tests run")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tests run\n"
    assert "installing the test and lint tools" in done.stderr
    assert dev.calls() == [f"-m pip install --quiet -e {ROOT}[dev] -e {ROOT}/examples/hello_pack"]
    assert (dev("echo", "x").stderr, dev.calls()) == ("", [])
    assert (dev("gateway", "x").stderr, dev.calls()) == ("", [])  # the dev install covers serving


def test_a_first_dev_command_installs_everything_at_once(dev: Dev) -> None:
    done = dev("echo", "x")
    assert "first run: creating" in done.stderr and "test and lint tools" in done.stderr
    assert dev.calls()[-1] == f"-m pip install --quiet -e {ROOT}[dev] -e {ROOT}/examples/hello_pack"
    assert (dev("gateway", "x").stderr, dev.calls()) == ("", [])


def test_a_changed_pyproject_or_build_backend_installs_again(dev: Dev) -> None:
    dev("echo", "x")
    for stamp in (dev.venv / ".installed-serve", dev.venv / ".installed-dev"):
        os.utime(stamp, (0, 0))  # older than pyproject.toml and the build backend
    served = dev("gateway", "x")
    assert "pyproject.toml or the build backend changed" in served.stderr
    assert dev.calls() == [f"-m pip install --quiet -e {ROOT}"]
    tested = dev("echo", "x")
    assert "changed" in tested.stderr and dev.calls()[-1].endswith("examples/hello_pack")


def test_an_old_python_is_refused_with_the_way_out(tmp_path: Path) -> None:
    done = Dev(tmp_path, version_check=1)("gateway", "serve")
    assert done.returncode == 1
    assert "needs Python 3.11 or newer" in done.stderr and "PYTHON=" in done.stderr


def test_no_command_prints_the_usage(dev: Dev) -> None:
    done = dev()
    assert done.returncode == 2 and "usage: ./dev COMMAND" in done.stderr
