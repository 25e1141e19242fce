"""``gateway config check`` (without ``--start``) checks declared connectors: their type is installed and their
options are ones that type takes, through :data:`gateway.api.CHECK_PROVIDER_OPTIONS`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.api import ConfigError
from gateway.app import prepare


def _config(tmp_path: Path, connector: str) -> Path:
    (tmp_path / "repo").mkdir(exist_ok=True)
    path = tmp_path / "context.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[packs]\nenabled = ["context"]\n'
        f"[[plugins.context.connectors]]\n{connector}\n"
    )
    return path


@pytest.mark.parametrize(
    ("connector", "message"),
    [
        (
            'type = "file"\nname = "backend"\nroot = "repo"\nmax_file_byte = 5',
            "'plugins.context.connectors.0': max_file_byte: Extra inputs are not permitted",
        ),
        (
            'type = "fiel"\nname = "backend"\nroot = "repo"',
            "no connector provider 'fiel' is installed (installed: file, github, jira, slack)",
        ),
        ('type = "file"\nname = "backend"\nroot = "no-such-dir"', "no-such-dir does not exist"),
    ],
)
def test_a_declared_connector_is_checked_without_starting(tmp_path: Path, connector: str, message: str) -> None:
    path = _config(tmp_path, connector)
    with pytest.raises(ConfigError) as refused:
        prepare(path)
    assert message in str(refused.value) and str(refused.value).startswith(str(path))


def test_a_good_connector_passes_and_its_relative_root_is_the_config_files(tmp_path: Path) -> None:
    loaded, _ = prepare(_config(tmp_path, 'type = "file"\nname = "backend"\nroot = "repo"'))
    (declared,) = loaded.plugin_configs[("pack", "context")].connectors  # type: ignore[union-attr]
    assert declared.type == "file" and declared.model_extra == {"root": "repo"}
