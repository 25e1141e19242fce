"""Config validation: every error names the file, the key and the problem (and what is installed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomli_w
from pydantic import BaseModel

from gateway import http
from gateway.api import AUTH, ConfigError, Tool, ToolPack, hookimpl
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


@pytest.mark.parametrize(
    ("chain", "message"),
    [("[]", "at least 1 item"), ('["local", "gemini", "local"]', "names 'local' more than once")],
)
def test_an_empty_or_repeating_embedder_chain_is_refused_when_read(tmp_path, chain, message):
    path = _write(tmp_path, f"[providers]\nembedder = {chain}\n")
    with pytest.raises(ConfigError, match=rf"'providers.embedder': .*{message}"):
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


def test_a_provider_registered_under_another_kind_is_pointed_out(tmp_path, sample):
    class Misfiled:
        @hookimpl
        def gateway_register_providers(self, register):
            register("ratelimiter", "redis", lambda context: None)

    config = sample_config(tmp_path, providers={"rate_limiter": "redis"})
    with pytest.raises(ConfigError, match=r"'redis' is registered as a provider of kind 'ratelimiter'$"):
        prepare(config, extra_plugins=[("sample", sample), ("misfiled", Misfiled())])


def test_plugin_tables_are_validated_by_their_plugin(tmp_path, sample):
    config = sample_config(tmp_path, plugins={"echo": {"greting": "typo"}})
    with pytest.raises(ConfigError, match=r"unknown key 'plugins.echo.greting'"):
        prepare(config, extra_plugins=[("sample", sample)])


class _Needs(BaseModel):
    url: str


class _NeedsOptions:
    """A pack, a rate limiter and an interceptor, each with an option that has no default."""

    @hookimpl
    def gateway_register_tool_packs(self, register):
        register("needy", lambda context: ToolPack(), config_model=_Needs)

    @hookimpl
    def gateway_register_providers(self, register):
        register("rate_limiter", "needy", lambda context: None, config_model=_Needs)

    @hookimpl
    def gateway_register_interceptors(self, register):
        register("needy", lambda context: None, config_model=_Needs)


@pytest.mark.parametrize(
    ("tables", "key"),
    [
        ({"packs": {"enabled": ["needy"]}}, "plugins.needy.url"),
        ({"providers": {"rate_limiter": "needy"}}, "plugins.rate_limiter.needy.url"),
        ({"pipeline": {"interceptors": [{"name": "needy"}]}}, "plugins.interceptor.needy.url"),
    ],
)
def test_a_required_option_of_what_the_config_names_is_checked_without_its_table(tmp_path, sample, tables, key):
    with pytest.raises(ConfigError, match=rf"'{key}': Field required"):
        prepare(sample_config(tmp_path, **tables), extra_plugins=[("sample", sample), ("needy", _NeedsOptions())])


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
    path = tmp_path / "clash.toml"
    path.write_text(tomli_w.dumps(sample_config(tmp_path, packs={"enabled": ["echo", "clash"]})))
    with pytest.raises(ConfigError) as info:
        async with running_runtime(path, extra_plugins=[("sample", sample)], configure_logs=False):
            pass
    assert str(info.value).startswith(f"{path}: 'packs.enabled': tool name collision")
    assert "'echo_echo'" in str(info.value) and "'echo'" in str(info.value) and "'clash'" in str(info.value)


async def test_prefix_resolves_a_collision(tmp_path, sample):
    config = sample_config(tmp_path, packs={"enabled": ["echo", "clash"], "prefix": {"clash": "c_"}})
    async with running_runtime(config, extra_plugins=[("sample", sample)], configure_logs=False) as runtime:
        assert {"echo_echo", "c_echo_echo"} <= set(runtime.tools)


async def test_a_prefix_that_makes_a_tool_name_too_long_is_a_startup_error(tmp_path):
    long_name = "t" * 100

    class LongPack(ToolPack):
        name = "long"

        def tools(self):
            async def run(args: dict, ctx: object) -> dict:
                return {}

            return [Tool.from_json_schema(long_name, "A long name.", {"type": "object"}, run)]

    class LongPlugin:
        @hookimpl
        def gateway_register_tool_packs(self, register):
            register("long", lambda context: LongPack())

    config = {"gateway": {"data_dir": str(tmp_path)}, "packs": {"enabled": ["long"], "prefix": {"long": "p" * 40}}}
    with pytest.raises(ConfigError, match="longer than a tool name may be"):
        async with running_runtime(config, extra_plugins=[("long", LongPlugin())], configure_logs=False):
            pass


def test_default_config_is_valid():
    from gateway.app import DEFAULT_CONFIG

    loaded, _ = prepare(DEFAULT_CONFIG)
    assert loaded.config.packs.enabled == ["gim"]
    assert loaded.config.providers.embedder == ["gemini", "local"]
    assert loaded.config.transport.host == "127.0.0.1"


def _base(tmp_path: Path) -> dict[str, Any]:
    return {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "tester"},
        "packs": {"enabled": ["hello"]},
        "sanitize": {"logs": ""},
        "providers": {"rate_limiter": "memory"},
    }


def _quota(rule: dict[str, Any], **table: Any) -> dict[str, Any]:
    return {
        "pipeline": {"interceptors": [{"name": "rate_limit"}]},
        "plugins": {"interceptor": {"rate_limit": {"rules": [{"name": "r", "limit": 5} | rule], **table}}},
    }


def _jwt(**table: Any) -> dict[str, Any]:
    return {
        "providers": {"rate_limiter": "memory", "auth": "jwt"},
        "plugins": {"auth": {"jwt": table}} if table else {},
    }


BAD_CONFIGS: dict[str, tuple[str | dict[str, Any], str]] = {
    # case: (the config (TOML text, or tables laid over the base), text of the error after the path)
    "not TOML": ("[transport\n", "not valid TOML"),
    "unknown key": ({"transport": {"prot": 1}}, "unknown key 'transport.prot'"),
    "wrong type": ({"transport": {"port": "eighty"}}, "'transport.port'"),
    "pack not installed": ({"packs": {"enabled": ["nope"]}}, "'packs.enabled': no tool pack 'nope'"),
    "prefix of a pack that is off": ({"packs": {"enabled": ["hello"], "prefix": {"gim": "g_"}}}, "'packs.prefix.gim'"),
    "interceptor not installed": ({"pipeline": {"interceptors": [{"name": "nope"}]}}, "no interceptor 'nope'"),
    "provider not installed": ({"providers": {"store": "nope"}}, "'providers.store': no store provider 'nope'"),
    "unknown plugin kind": ({"plugins": {"nope": {}}}, "unknown key 'plugins.nope'"),
    "provider table": ({"plugins": {"rate_limiter": {"sqlite": {"pth": "x"}}}}, "plugins.rate_limiter.sqlite.pth"),
    "pack table": ({"plugins": {"gim": {"nope": 1}}}, "unknown key 'plugins.gim.nope'"),
    "limit from an unset variable": (_quota({"tools": ["hello_greet"], "limit": {"env": "UNSET_LIMIT_XYZ"}}), "UNSET"),
    "rule for an unknown tool": (_quota({"tools": ["hello_gret"]}), "rules[0] (r): unknown tool(s) hello_gret"),
    "rule for a pack not installed": (_quota({"pack": "gimm", "tools": ["gim_x"]}), "no tool pack 'gimm'"),
    "rule's limiter not installed": (
        _quota({"tools": ["hello_greet"]}, limiter="nope"),
        "no rate_limiter provider 'nope' is installed",
    ),
    "jwt without its table": (_jwt(), "'plugins.auth.jwt.algorithms': Field required"),
    "jwt key file missing": (
        _jwt(algorithms=["ES256"], public_key_file="/nonexistent/idp.pem", issuer="https://i/", audience="a"),
        "plugins.auth.jwt.public_key_file: cannot read",
    ),
    "empty embedder chain": (
        {"providers": {"rate_limiter": "memory", "embedder": []}},
        "List should have at least 1 item",
    ),
    "public bind without auth": ({"transport": {"host": "0.0.0.0"}}, "the bind host"),
    "public bind with a chain that lets anyone in": (
        {
            "transport": {"host": "0.0.0.0"},
            "providers": {"auth": "chain"},
            "plugins": {"auth": {"chain": {"methods": ["api_key", "none"]}}},
        },
        "the 'chain' authenticator uses 'none'",
    ),
    "an origin that is not one": ({"transport": {"allowed_origins": ["*"]}}, "'transport.allowed_origins'"),
    "MCP on the public health route": ({"transport": {"path": "/health"}}, "'transport.path'"),
    "MCP under the discovery documents": ({"transport": {"path": "/.well-known/mcp"}}, "'transport.path'"),
    "a relative MCP path": ({"transport": {"path": "mcp"}}, "'transport.path'"),
    "a prefix a tool name cannot hold": ({"packs": {"prefix": {"gim": "bad name!"}}}, "'packs.prefix.gim'"),
    "a pack enabled twice": ({"packs": {"enabled": ["gim", "gim"]}}, "'packs.enabled'"),
}


async def _exercise(path: Path) -> None:
    """Load, start and use ``path`` as serving would: providers built lazily and the HTTP app included."""
    async with running_runtime(path, configure_logs=False) as runtime:
        if runtime.loaded.config.providers.auth != "none":
            runtime.providers.get(AUTH)
        runtime.providers.embeddings()
        runtime.providers.sanitization()
        http.build_http_app(runtime)


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
async def test_every_config_error_starts_with_the_file(tmp_path: Path, case: str) -> None:
    config, expected = BAD_CONFIGS[case]
    path = tmp_path / "deploy.toml"
    if isinstance(config, str):
        path.write_text(config)
    else:
        merged = _base(tmp_path)
        for key, value in config.items():
            merged[key] = {**merged.get(key, {}), **value}
        path.write_text(tomli_w.dumps(merged))
    with pytest.raises(ConfigError) as info:
        await _exercise(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert expected in message, message


async def test_the_base_of_the_bad_configs_is_good(tmp_path: Path) -> None:
    path = tmp_path / "deploy.toml"
    path.write_text(tomli_w.dumps(_base(tmp_path)))
    await _exercise(path)
