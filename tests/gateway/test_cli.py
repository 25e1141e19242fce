"""The ``gateway`` command line, driven in-process with click's runner against the example pack."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gateway.app import DEFAULT_CONFIG
from gateway.cli import cli
from gateway.cli_errors import cli_failure


def _config(tmp_path) -> str:
    path = tmp_path / "hello.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\nidentity = "cli-user"\nlog_level = "warning"\n'
        '[packs]\nenabled = ["hello"]\n[sanitize]\nlogs = ""\n'
    )
    return str(path)


def test_config_check(tmp_path):
    result = CliRunner().invoke(cli, ["config", "check", "--config", _config(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "ok" in result.output and "packs: hello" in result.output


def test_config_check_start_finds_what_only_starting_reveals(tmp_path):
    config = tmp_path / "pg.toml"
    config.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[packs]\nenabled = ["gim"]\n[providers]\nstore = "postgres"\n'
        '[plugins.store.postgres]\ndsn = "postgresql://gim@127.0.0.1:1/gim"\n'
    )
    static = CliRunner().invoke(cli, ["--config", str(config), "config", "check"])
    assert static.exit_code == 0 and "ok (not started" in static.output
    started = CliRunner().invoke(cli, ["--config", str(config), "config", "check", "--start"])
    assert started.exit_code == 1 and "store:postgres: cannot connect" in started.output
    fine = CliRunner().invoke(cli, ["--config", _config(tmp_path), "config", "check", "--start"])
    assert fine.exit_code == 0 and "ok (started: 2 tools)" in fine.output, fine.output


def test_a_data_dir_that_cannot_be_written_is_one_error_line(tmp_path):
    config = tmp_path / "file.toml"
    (tmp_path / "afile").write_text("not a directory")
    config.write_text(f'[gateway]\ndata_dir = "{tmp_path / "afile"}"\n[packs]\nenabled = ["hello"]\n')
    result = CliRunner().invoke(cli, ["--config", str(config), "call", "hello_add", '{"a": 1, "b": 2}'])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"the data dir {tmp_path / 'afile'} cannot be used: it is not a directory" in result.output


def test_config_check_reports_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[packs]\nenabeld = []\n")
    result = CliRunner().invoke(cli, ["--config", str(bad), "config", "check"])
    assert result.exit_code != 0
    assert "unknown key 'packs.enabeld'" in result.output


def test_plugins_inventory(tmp_path):
    result = CliRunner().invoke(cli, ["--config", _config(tmp_path), "plugins"])
    assert result.exit_code == 0, result.output
    assert "hello  (hello-pack 0.1.0)" in result.output
    assert "hooks:       gateway_register_tool_packs" in result.output


def test_tools_as_json(tmp_path):
    result = CliRunner().invoke(cli, ["--config", _config(tmp_path), "tools", "--json"])
    assert result.exit_code == 0, result.output
    tools = {t["name"]: t for t in json.loads(result.output)}
    assert tools["hello_add"]["inputSchema"]["required"] == ["a", "b"]


def test_call_prints_the_result_and_fails_on_error(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["--config", _config(tmp_path), "call", "hello_add", '{"a": 2, "b": 3}'])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output) == {"sum": 5.0}
    bad = runner.invoke(cli, ["--config", _config(tmp_path), "call", "hello_add", '{"a": 2}'])
    assert bad.exit_code == 1
    assert json.loads(bad.output)["error"]["code"] == "validation_error"
    unknown = runner.invoke(cli, ["--config", _config(tmp_path), "call", "nope", "{}"])
    assert unknown.exit_code != 0 and "unknown tool 'nope'" in unknown.output


def _chatty_config(tmp_path: Path) -> str:
    """The example pack with the gateway logging at ``info``, as the shipped config.toml does."""
    path = tmp_path / "chatty.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\nidentity = "cli-user"\nlog_level = "info"\n'
        '[packs]\nenabled = ["hello"]\n[sanitize]\nlogs = ""\n'
    )
    return str(path)


def _log_events(stderr: str) -> list[str]:
    return [json.loads(line)["event"] for line in stderr.splitlines() if line.startswith("{")]


def test_commands_print_their_result_and_log_only_warnings(tmp_path: Path) -> None:
    config = _chatty_config(tmp_path)
    quiet = CliRunner().invoke(cli, ["--config", config, "call", "hello_add", '{"a": 2, "b": 3}'])
    assert quiet.exit_code == 0, quiet.output
    assert json.loads(quiet.stdout) == {"sum": 5.0} and quiet.stderr == ""
    for args in (["-v", "--config", config, "call"], ["--config", config, "call", "-v"]):
        verbose = CliRunner().invoke(cli, [*args, "hello_add", '{"a": 2, "b": 3}'])
        assert json.loads(verbose.stdout) == {"sum": 5.0}
        assert {"gateway started", "tool call"} <= set(_log_events(verbose.stderr))
    listed = CliRunner().invoke(cli, ["--config", config, "tools", "--json"])
    assert {tool["name"] for tool in json.loads(listed.stdout)} == {"hello_greet", "hello_add"}
    assert listed.stderr == ""


def test_warnings_still_show_unless_quiet(tmp_path: Path) -> None:
    shipped = DEFAULT_CONFIG.read_text().replace('enabled = ["gim"]', 'enabled = ["thinking"]')
    config = tmp_path / "thinking.toml"
    config.write_text(shipped.replace("[gateway]\n", f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n', 1))
    shown = CliRunner().invoke(cli, ["--config", str(config), "tools"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("sequentialthinking  [thinking]")
    assert _log_events(shown.stderr) == ["rate-limit rule skipped: its pack is not enabled"] * 2
    quiet = CliRunner().invoke(cli, ["--config", str(config), "tools", "-q"])
    assert quiet.stdout == shown.stdout and quiet.stderr == ""


def test_call_reads_its_arguments_from_stdin_or_a_file(tmp_path: Path) -> None:
    config = _config(tmp_path)
    runner = CliRunner()
    from_stdin = runner.invoke(cli, ["--config", config, "call", "hello_add", "-"], input='{"a": 1, "b": 2}\n')
    assert from_stdin.exit_code == 0, from_stdin.output
    assert json.loads(from_stdin.stdout) == {"sum": 3.0}
    arguments = tmp_path / "args.json"
    arguments.write_text('{"name": "file"}')
    from_file = runner.invoke(cli, ["--config", config, "call", "hello_greet", f"@{arguments}"])
    assert json.loads(from_file.stdout)["greeting"] == "Hello, file!"


@pytest.mark.parametrize(
    ("argument", "stdin", "message"),
    [
        ("-", "{not json", "stdin: not JSON: Expecting property name"),
        ("-", "", "stdin gave nothing; expected a JSON object"),
        ("@{dir}/absent.json", None, "cannot read {dir}/absent.json: No such file or directory"),
        ("@{dir}/list.json", None, "{dir}/list.json: must be a JSON object, not an array"),
        ('{"a": }', None, "the command line: not JSON: Expecting value"),
    ],
)
def test_bad_arguments_are_a_usage_error_naming_their_source(
    tmp_path: Path, argument: str, stdin: str | None, message: str
) -> None:
    (tmp_path / "list.json").write_text("[1, 2]")
    result = CliRunner().invoke(
        cli, ["--config", _config(tmp_path), "call", "hello_add", argument.replace("{dir}", str(tmp_path))], input=stdin
    )
    assert result.exit_code == 2
    assert f"Invalid value for ARGUMENTS: {message.replace('{dir}', str(tmp_path))}" in result.stderr


def test_serve_failures_are_one_line_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[packs\n")
    remote = tmp_path / "remote.toml"
    remote.write_text('[transport]\nkind = "http"\nhost = "0.0.0.0"\n')
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe[packs]\n")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = tmp_path / "busy.toml"
    busy.write_text(f'[transport]\nkind = "http"\nport = {taken.getsockname()[1]}\n')
    env = {**os.environ, "MCP_GATEWAY_DATA_DIR": str(tmp_path / "data")}
    for config, expected in (
        (bad, "not valid TOML"),
        (remote, "'providers.auth' is 'none'"),
        (binary, "not UTF-8 text"),
        (busy, f"Error: cannot listen on 127.0.0.1:{taken.getsockname()[1]}"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "--config", str(config), "serve"],
            stdin=subprocess.DEVNULL,  # also: a gateway whose stdin is /dev/null ends instead of waiting
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert done.returncode == 1, done.stderr
        assert expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    taken.close()


def test_config_check_start_runs_the_http_fronts_checks(tmp_path: Path) -> None:
    public = tmp_path / "public.toml"
    public.write_text('[transport]\nkind = "http"\nhost = "0.0.0.0"\n[packs]\nenabled = ["hello"]\n')
    result = CliRunner().invoke(cli, ["--config", str(public), "config", "check", "--start"])
    assert result.exit_code == 1 and "'providers.auth' is 'none'" in result.output, result.output


def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--config", _config(tmp_path), "serve", "--port", "70000"])
    assert result.exit_code == 2 and "70000 is not in the range 0<=x<=65535" in result.output


def test_indent_must_be_a_small_non_negative_number(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--config", _config(tmp_path), "gim", "stats", "--indent", "-3"])
    assert result.exit_code == 2 and "-3 is not in the range 0<=x<=16" in result.output


def test_ctrl_c_is_exit_status_130_not_a_tool_error() -> None:
    """``gateway call`` exits 1 for a tool error: an interrupted command must not look like one."""
    replacement = cli_failure(BaseExceptionGroup("serving", [KeyboardInterrupt()]))
    assert isinstance(replacement, click.exceptions.Exit) and replacement.exit_code == 130


def test_plugins_fails_after_the_inventory_when_the_deployment_cannot_start(tmp_path):
    config = tmp_path / "file.toml"
    (tmp_path / "afile").write_text("not a directory")
    config.write_text(f'[gateway]\ndata_dir = "{tmp_path / "afile"}"\n[packs]\nenabled = ["hello"]\n')
    result = CliRunner().invoke(cli, ["--config", str(config), "plugins"])
    assert result.exit_code == 1 and "hello  (hello-pack 0.1.0)" in result.stdout
    assert "cannot be used: it is not a directory" in result.output and "Traceback" not in result.output
