"""``gateway context index PATH``: indexes a directory with a progress bar, incrementally on a second run, and
prints what that run changed and every error it met."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from gateway.cli import cli
from tests.plugins.context.support import context_config
from tests.plugins.gim.support import write_config


def _config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "c.toml", context_config(gateway={"log_level": "warning", "data_dir": str(tmp_path / "data")})
    )


def _index(path: Path, config: Path, *options: str) -> Result:
    return CliRunner().invoke(cli, ["context", "index", str(path), *options, "--config", str(config)])


def test_index_command(repo: Path, tmp_path: Path) -> None:
    config = _config(tmp_path)
    result = _index(repo, config)
    assert result.exit_code == 0, result.output
    assert "file-shop: job completed; 6 indexed (new or changed), 0 unchanged, 0 removed" in result.output
    assert "the index holds 6 files" in result.output and "skipped: 1 hidden" in result.output
    assert "file/s" in result.output or "6/6" in result.output  # the progress bar went to stderr
    missing = _index(tmp_path / "nope", config)
    assert missing.exit_code != 0 and "does not exist" in missing.output


def test_each_run_says_what_it_changed(repo: Path, tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert _index(repo, config).exit_code == 0
    (repo / "shop" / "money.py").write_text("def round_cents(amount):\n    return round(amount, 3)\n")
    (repo / "web" / "routes.js").unlink()
    edited = _index(repo, config)
    assert edited.exit_code == 0, edited.output
    assert "job completed; 1 indexed (new or changed), 4 unchanged, 1 removed; the index holds 5 files" in edited.output
    quiet = _index(repo, config)
    assert "job completed; 0 indexed (new or changed), 5 unchanged, 0 removed" in quiet.output
    forced = _index(repo, config, "--force")
    assert "job completed; 5 indexed (new or changed), 0 unchanged, 0 removed" in forced.output


def test_errors_are_printed_and_a_failed_connector_exits_non_zero(repo: Path, tmp_path: Path) -> None:
    config = _config(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = _index(empty, config)
    assert nothing.exit_code == 0, nothing.output
    assert "errors: no document to index (the source is empty)" in nothing.output
    assert _index(repo, config).exit_code == 0
    for child in repo.iterdir():  # a checkout gone half-way: the connector refuses to empty its index
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    failed = _index(repo, config)
    assert failed.exit_code == 1, failed.output
    assert "file-shop: job completed; nothing indexed; the index holds 6 files" in failed.output
    assert "failed: 1 of 1 connector(s) failed: file-shop: the source offers no document now" in failed.output
