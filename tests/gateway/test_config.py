"""Config validation: every error names the file, the key and the problem (and what is installed)."""

from __future__ import annotations

import pytest

from gateway.api import ConfigError, PluginError
from gateway.app import prepare, running_runtime
from gateway.config import load_config
from tests.gateway.sample_plugin import sample_config

pytestmark = pytest.mark.anyio


def _write(tmp_path, text):
    path = tmp_path / "deploy.toml"
    path.write_text(text)
    return path


def test_unknown_key_names_file_and_key(tmp_path):
    path = _write(tmp_path, "[transport]\nkind = 'stdio'\nprot = 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and "unknown key 'transport.prot'" in str(info.value)


def test_wrong_type_names_the_key(tmp_path):
    path = _write(tmp_path, "[transport]\nport = 'eighty'\n")
    with pytest.raises(ConfigError, match=r"'transport.port': Input should be a valid integer"):
        load_config(path)


def test_invalid_toml_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(_write(tmp_path, "[transport\n"))


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")


def test_pack_not_installed_lists_installed(tmp_path, sample):
    config = sample_config(tmp_path, packs={"enabled": ["nope"]})
    with pytest.raises(ConfigError) as info:
        prepare(config, extra_plugins=[("sample", sample)])
    message = str(info.value)
    assert "'packs.enabled'" in message and "'nope'" in message and "echo" in message


def test_provider_not_installed_lists_installed(tmp_path, sample):
    config = sample_config(tmp_path, providers={"vector_store": "faiss"})
    with pytest.raises(ConfigError, match=r"'providers.vector_store': no vector_store provider 'faiss'"):
        prepare(config, extra_plugins=[("sample", sample)])


def test_plugin_tables_are_validated_by_their_plugin(tmp_path, sample):
    config = sample_config(tmp_path, plugins={"echo": {"greting": "typo"}})
    with pytest.raises(ConfigError, match=r"unknown key 'plugins.echo.greting'"):
        prepare(config, extra_plugins=[("sample", sample)])


def test_unknown_plugin_table(tmp_path, sample):
    config = sample_config(tmp_path, plugins={"nonexistent": {}})
    with pytest.raises(ConfigError, match=r"unknown key 'plugins.nonexistent'"):
        prepare(config, extra_plugins=[("sample", sample)])


def test_secrets_come_from_the_environment_and_never_print(monkeypatch):
    from pydantic import BaseModel

    from gateway.api import Secret

    class Model(BaseModel):
        key: Secret = None

    monkeypatch.setenv("SOME_KEY", "s3cr3t-value")
    model = Model.model_validate({"key": {"env": "SOME_KEY"}})
    assert model.key.get_secret_value() == "s3cr3t-value"
    assert "s3cr3t" not in repr(model) and "s3cr3t" not in model.model_dump_json()
    assert Model.model_validate({"key": {"env": "UNSET_KEY_XYZ"}}).key is None


async def test_tool_name_collision_is_a_startup_error_naming_both_packs(tmp_path, sample):
    config = sample_config(tmp_path, packs={"enabled": ["echo", "clash"]})
    with pytest.raises(PluginError) as info:
        async with running_runtime(config, extra_plugins=[("sample", sample)], configure_logs=False):
            pass
    assert "'echo_echo'" in str(info.value) and "'echo'" in str(info.value) and "'clash'" in str(info.value)


async def test_prefix_resolves_a_collision(tmp_path, sample):
    config = sample_config(tmp_path, packs={"enabled": ["echo", "clash"], "prefix": {"clash": "c_"}})
    async with running_runtime(config, extra_plugins=[("sample", sample)], configure_logs=False) as runtime:
        assert {"echo_echo", "c_echo_echo"} <= set(runtime.tools)


def test_default_config_is_valid():
    from gateway.app import DEFAULT_CONFIG

    loaded, _ = prepare(DEFAULT_CONFIG)
    assert loaded.config.packs.enabled == ["gim"]
    assert loaded.config.providers.embedder == ["gemini", "local"]
    assert loaded.config.transport.host == "127.0.0.1"
