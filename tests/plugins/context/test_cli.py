"""``gateway context index PATH``: indexes a directory with a progress bar, incrementally on a second run."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gateway.cli import cli
from tests.plugins.context.support import context_config
from tests.plugins.gim.support import write_config


def test_index_command(repo: Path, tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.toml", context_config(gateway={"log_level": "warning", "data_dir": str(tmp_path / "data")})
    )
    result = CliRunner().invoke(cli, ["context", "index", str(repo), "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert "file-shop: job completed; 6 files" in result.output
    assert "file/s" in result.output or "6/6" in result.output  # the progress bar went to stderr
    again = CliRunner().invoke(cli, ["context", "index", str(repo), "--config", str(config)])
    assert again.exit_code == 0 and "file-shop: job completed; 6 files" in again.output
    missing = CliRunner().invoke(cli, ["context", "index", str(tmp_path / "nope"), "--config", str(config)])
    assert missing.exit_code != 0 and "does not exist" in missing.output
