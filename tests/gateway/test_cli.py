"""The ``gateway`` command line, driven in-process with click's runner against the example pack."""

from __future__ import annotations

import json

from click.testing import CliRunner

from gateway.cli import cli


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
