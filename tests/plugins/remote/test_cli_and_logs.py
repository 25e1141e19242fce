"""What operators see: ``gateway plugins`` and ``gateway tools`` say which remote each tool comes from and how
that server is doing; remote descriptions and results reach the logs only through the log redaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugins.remote.support import py_stdio_server, remote_config, write_toml

pytestmark = pytest.mark.slow


def _gateway(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ),
    )


def _config(tmp_path: Path) -> Path:
    servers = [
        py_stdio_server(tmp_path / "state"),
        {"name": "ghost", "command": [str(tmp_path / "missing-binary")], "prefix": "ghost_"},
    ]
    return write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, servers))


def test_tools_and_plugins_show_each_remote_and_its_state(tmp_path: Path):
    """The first run starts the lazy server to learn its tools; later runs list them from the copy."""
    config = _config(tmp_path)
    listed = _gateway(config, "tools", "--json")
    text = _gateway(config, "tools")
    plugins = _gateway(config, "plugins")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    echo = rows["py_echo"]
    assert (echo["pack"], echo["upstream"], echo["upstream_state"]) == ("remote", "py", "up")
    assert echo["inputSchema"]["required"] == ["text"]
    assert text.returncode == 0 and "py_echo  [remote/py: idle]" in text.stdout
    assert "remote/ghost  stdio  down  0 tools" in text.stdout and "last error:" in text.stdout
    assert plugins.returncode == 0, plugins.stderr
    assert "remote = gateway_plugins.remote.plugin" in plugins.stdout
    assert "remote: 13 tools" in plugins.stdout
    assert "remote/py  stdio  idle  13 tools" in plugins.stdout
    assert "remote/ghost  stdio  down" in plugins.stdout and "missing-binary" in plugins.stdout


def test_config_check_start_fails_naming_a_remote_server_that_is_down(tmp_path: Path):
    config = _config(tmp_path)
    checked = _gateway(config, "config", "check", "--start")
    assert checked.returncode == 1, checked.stdout
    assert "remote server(s) down: ghost (" in checked.stderr and "missing-binary" in checked.stderr
    fine = write_toml(tmp_path / "fine.toml", remote_config(tmp_path, [py_stdio_server(tmp_path / "state")]))
    passed = _gateway(fine, "config", "check", "--start")
    assert passed.returncode == 0, passed.stderr
    assert "ok (started: 13 tools)" in passed.stdout and "remote/py  stdio  idle  13 tools" in passed.stdout


def test_config_check_start_fails_naming_a_remote_server_that_never_answers(tmp_path: Path):
    hanging = {
        **py_stdio_server(tmp_path / "state", connect_timeout_seconds=3),
        "env": {"PY_SERVER_HANG_ONCE": "1"},
    }
    checked = _gateway(
        write_toml(tmp_path / "hangs.toml", remote_config(tmp_path, [hanging])), "config", "check", "--start"
    )
    assert checked.returncode == 1, checked.stdout
    assert "remote server(s) down: py (" in checked.stderr


def test_remote_text_is_redacted_in_the_logs(tmp_path: Path):
    config = remote_config(
        tmp_path,
        [py_stdio_server(tmp_path / "state")],
        gateway={"log_level": "debug"},
        sanitize={"logs": "patterns"},
    )
    path = write_toml(tmp_path / "gateway.toml", config)
    result = _gateway(path, "call", "py_leak", "-vv")
    assert result.returncode == 0, result.stderr
    # the caller gets the result as the server wrote it; the logs never do
    assert "AKIAZ3MHALPEXH7BQX4K" in result.stdout
    logs = result.stderr
    assert "upstream result" in logs and "upstream tool" in logs
    for secret in ("AKIAZ3MHALPEXH7BQX4K", "bob.smith@corp-mail.io", "ghp_0123456789abcdefghijABCDEFGHIJ012345"):
        assert secret not in logs
    assert "<AWS_KEY_1>" in logs and "<GITHUB_TOKEN_1>" in logs


def test_a_server_printing_its_own_secret_on_stderr_does_not_put_it_in_the_log(tmp_path: Path):
    key = "sk-upstream-0123456789-NOT-IN-LOGS"
    server = {
        **py_stdio_server(tmp_path / "state"),
        "env": {"API_KEY": {"env": "TEST_UPSTREAM_API_KEY"}, "PY_SERVER_SAY_ENV": "API_KEY"},
    }
    path = write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, [server], sanitize={"logs": ""}))
    result = subprocess.run(
        [sys.executable, "-m", "gateway", "call", "py_echo", '{"text": "hi"}', "-v", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "TEST_UPSTREAM_API_KEY": key},
    )
    assert result.returncode == 0, result.stderr
    # a value written as { env = ... } is a secret; a literal one (the name of the variable to print) is not
    assert "starting with API_KEY=<env.API_KEY>" in result.stderr
    assert key not in result.stderr and key not in result.stdout


def test_a_result_echoing_the_servers_own_secret_is_logged_without_it(tmp_path: Path):
    key = "sk-upstream-0123456789-ECHOED"
    server = {**py_stdio_server(tmp_path / "state"), "env": {"API_KEY": {"env": "TEST_UPSTREAM_API_KEY"}}}
    config = remote_config(tmp_path, [server], gateway={"log_level": "debug"}, sanitize={"logs": ""})
    path = write_toml(tmp_path / "gateway.toml", config)
    result = subprocess.run(
        [sys.executable, "-m", "gateway", "call", "py_echo", json.dumps({"text": key}), "-vv", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "TEST_UPSTREAM_API_KEY": key},
    )
    assert result.returncode == 0, result.stderr
    assert key in result.stdout  # the caller gets the result as the server wrote it
    assert "upstream result" in result.stderr and "<env.API_KEY>" in result.stderr
    assert key not in result.stderr
