"""Entry-point discovery, the block list, and loud failures for misspelled hooks."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, RootModel
from structlog.testing import capture_logs

from gateway.api import ConfigError, PluginError, Tool, ToolPack, hookimpl
from gateway.plugin_manager import create_plugin_manager
from gateway.testing import running_gateway
from tests.gateway.sample_plugin import sample_config

BUILT_INS = {
    "embedders": {"embedder:local", "embedder:gemini"},
    "vector_stores": {"vector_store:qdrant-edge", "vector_store:qdrant"},
    "stores": {"store:sqlite", "store:postgres"},
    "rate_limits": {"rate_limiter:memory", "rate_limiter:sqlite", "rate_limiter:postgres", "interceptor:rate_limit"},
    "sanitizers": {"sanitizer:patterns", "sanitizer:contextual", "sanitizer:gemini"},
    "auth": {"auth:none", "auth:api_key", "auth:jwt"},
    "judges": {"judge:internal", "judge:gemini"},
    "gim": {"pack:gim"},
    "thinking": {"pack:thinking"},
}


def test_every_built_in_is_discovered_through_its_entry_point():
    plugins = create_plugin_manager()
    inventory = {info.name: info for info in plugins.inventory()}
    for name, offers in BUILT_INS.items():
        info = inventory[name]
        assert info.distribution == "mcp-gateway"
        assert info.entry_point == f"{name} = gateway_plugins.{name}.plugin"
        assert offers <= set(info.offers), (name, info.offers)


def test_the_example_pack_is_discovered_like_a_built_in():
    inventory = {info.name: info for info in create_plugin_manager().inventory()}
    assert inventory["hello"].distribution == "hello-pack"
    assert inventory["hello"].offers == ("pack:hello",)


def test_a_blocked_plugin_disappears():
    plugins = create_plugin_manager(blocked=["hello", "thinking"])
    names = {info.name for info in plugins.inventory()}
    assert "hello" not in names and "thinking" not in names
    assert "hello" not in plugins.registry.packs and "thinking" not in plugins.registry.packs
    assert "gim" in plugins.registry.packs


def test_blocking_a_name_no_plugin_has_is_a_warning():
    with capture_logs() as logs:
        create_plugin_manager(blocked=["helo", "hello"])
    (warning,) = [e for e in logs if e["event"] == "[gateway] block names no installed plugin"]
    assert warning["names"] == ["helo"] and "hello" in warning["installed"]


def test_a_misspelled_hook_fails_loudly():
    class Typo:
        @hookimpl
        def gateway_register_tool_pack(self, register):  # missing "s"
            pass

    with pytest.raises(PluginError, match=r"^plugin 'typo': gateway_register_tool_pack is not a hook of the gateway"):
        create_plugin_manager(extra_plugins=[("typo", Typo())])


def test_a_hook_function_without_hookimpl_fails_loudly():
    class Unmarked:
        def gateway_register_tool_packs(self, register):  # pluggy alone would ignore it
            register("never", lambda context: None)

    with pytest.raises(PluginError, match=r"^plugin 'unmarked': gateway_register_tool_packs is named like a hook"):
        create_plugin_manager(extra_plugins=[("unmarked", Unmarked())])


def test_two_plugins_registering_the_same_pack_name_fail():
    class One:
        @hookimpl
        def gateway_register_tool_packs(self, register):
            register("dup", lambda ctx: None)

    class Two(One):
        pass

    with pytest.raises(PluginError, match=r"pack 'dup' is registered twice: by plugin 'one' and by plugin 'two'"):
        create_plugin_manager(extra_plugins=[("one", One()), ("two", Two())])


def test_a_plugin_name_two_distributions_claim_fails_naming_both(tmp_path, monkeypatch):
    # a third-party distribution whose entry point is also called "judges" would otherwise replace the built-in
    # (or be dropped) by the order of sys.path, silently
    info = tmp_path / "evil_judges-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-judges\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mcp_gateway]\njudges = evil_judges_mod\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match=r"'judges' is claimed by two installed distributions.*'evil-judges'"):
        create_plugin_manager()


def test_a_hook_with_the_wrong_arguments_or_a_failing_registration_names_its_plugin():
    class WrongArgument:
        @hookimpl
        def gateway_register_tool_packs(self, registrar):
            pass

    class Failing:
        @hookimpl
        def gateway_register_tool_packs(self, register):
            raise RuntimeError("no config file")

    with pytest.raises(PluginError, match=r"(?s)^plugin 'wrong'.*registrar"):
        create_plugin_manager(extra_plugins=[("wrong", WrongArgument())])
    with pytest.raises(PluginError, match=r"^plugin 'failing': gateway_register_tool_packs failed: RuntimeError"):
        create_plugin_manager(extra_plugins=[("failing", Failing())])


@pytest.mark.parametrize("name", ["embedder", "store", "interceptor"])
def test_a_pack_named_like_a_provider_kind_is_refused(name):
    class Squatter:
        @hookimpl
        def gateway_register_tool_packs(self, register):
            register(name, lambda context: None)

    with pytest.raises(PluginError, match=rf"^plugin 'squatter': a pack may not be named '{name}'"):
        create_plugin_manager(extra_plugins=[("squatter", Squatter())])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("factory", r"pack 'faulty' \(plugin 'faulty'\): its factory failed: RuntimeError: no database"),
        ("none", r"pack 'faulty' \(plugin 'faulty'\): its factory returned NoneType, not a ToolPack"),
        ("start", r"pack 'faulty' \(plugin 'faulty'\): start\(\) failed: OSError: port busy"),
        ("config", r"^<config>: 'plugins.faulty.n': must be even$"),
    ],
)
async def test_a_pack_that_fails_to_build_or_start_is_named(tmp_path, fault, message):
    class Faulty(ToolPack):
        name = "faulty"

        async def start(self):
            raise OSError("port busy")

    def build(context):
        if fault == "factory":
            raise RuntimeError("no database")
        if fault == "config":
            raise ConfigError("'plugins.faulty.n': must be even")
        return None if fault == "none" else Faulty()

    class Plugin:
        @hookimpl
        def gateway_register_tool_packs(self, register):
            register("faulty", build)

    config = {"gateway": {"data_dir": str(tmp_path)}, "packs": {"enabled": ["faulty"]}}
    with pytest.raises(PluginError if fault != "config" else ConfigError, match=message):
        async with running_gateway(config, extra_plugins=[("faulty", Plugin())]):
            pass


class _Wrapped(RootModel[list[int]]):
    pass


class _Out(BaseModel):
    n: int


async def _answer(args, ctx):
    return _Out(n=1)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (lambda: 1 / 0, r"serving what it offers.*failed: ZeroDivisionError"),
        (lambda: {"t": 1}, r"serving what it offers.*failed: AttributeError"),
        (
            lambda: [Tool("odd_list", "A list in.", _Wrapped, _Out, _answer)],
            r"failed: TypeError: tool 'odd_list': the input model _Wrapped is a RootModel, which is not a JSON object",
        ),
        (
            lambda: [Tool.from_json_schema("odd_array", "An array in.", {"type": "array"}, _answer)],
            r"tool 'odd_array': the input JSON Schema must have \"type\": \"object\" at its root",
        ),
        (
            lambda: [Tool.from_json_schema("odd_out", "Text out.", {"type": "object"}, _answer, output_schema={})],
            r"tool 'odd_out': the output JSON Schema must have",
        ),
    ],
)
async def test_a_pack_whose_tools_cannot_be_served_is_named_at_start(tmp_path, tools, message):
    class Odd(ToolPack):
        name = "odd"

        def tools(self):
            return tools()

    class Plugin:
        @hookimpl
        def gateway_register_tool_packs(self, register):
            register("odd", lambda context: Odd())

    config = {"gateway": {"data_dir": str(tmp_path)}, "packs": {"enabled": ["odd"]}}
    with pytest.raises(PluginError, match=r"^pack 'odd' \(plugin 'odd'\): (?s:.*)" + message):
        async with running_gateway(config, extra_plugins=[("odd", Plugin())]):
            pass


class _HalfLimiter:
    async def hit(self, rule, identity, cost=1, now=None):  # no peek, no close
        raise AssertionError("never called")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda context: 1 / 0, r"its factory failed: ZeroDivisionError"),
        (lambda context: None, r"its factory returned NoneType, not a RateLimiter \(missing: close, hit, peek\)"),
        (lambda context: _HalfLimiter(), r".*returned _HalfLimiter, not a RateLimiter \(missing: close, peek\)"),
    ],
)
async def test_a_provider_that_fails_to_build_is_named_not_the_plugin_that_asked(tmp_path, sample, factory, message):
    class Provider:
        @hookimpl
        def gateway_register_providers(self, register):
            register("rate_limiter", "shaky", factory)

    config = sample_config(
        tmp_path,
        providers={"rate_limiter": "shaky"},
        pipeline={"interceptors": [{"name": "rate_limit"}]},
        plugins={"interceptor": {"rate_limit": {"rules": [{"name": "r", "tools": ["echo_echo"], "limit": 1}]}}},
    )
    plugins = [("sample", sample), ("provplug", Provider())]
    with pytest.raises(PluginError, match=r"rate_limiter provider 'shaky' \(plugin 'provplug'\): " + message):
        async with running_gateway(config, extra_plugins=plugins):
            pass


def test_passing_an_installed_plugin_again_is_a_clear_error():
    import hello_pack

    with pytest.raises(PluginError, match="an installed plugin is found through its entry point"):
        create_plugin_manager(extra_plugins=[("mine", hello_pack)])
