"""``[[plugins.remote.servers]]`` validation: every mistake is refused at start naming the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.api import ConfigError, HttpTarget, StdioTarget
from gateway.app import prepare
from gateway_plugins.remote.config import RemoteConfig, ServerConfig
from gateway_plugins.remote.targets import target_of
from tests.plugins.remote.support import remote_config


def _check(tmp_path: Path, *servers: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as refused:
        prepare(remote_config(tmp_path, list(servers)))
    return str(refused.value)


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({"name": "a"}, "give either command (stdio) or url"),
        ({"name": "a", "command": ["x"], "url": "http://h/mcp"}, "give either command (stdio) or url"),
        ({"name": "a", "url": "ftp://h/mcp"}, "url must be an http:// or https:// URL with a host"),
        ({"name": "a", "url": "http://"}, "url must be an http:// or https:// URL with a host"),
        ({"name": "a", "url": "http://h/mcp", "protocol": "banana"}, "servers.0.protocol': server 'a': protocol must"),
        ({"name": "a", "url": "http://h/mcp", "headers": {"Bad Header": "x"}}, "not an HTTP header name"),
        ({"name": "a", "command": ["x"], "prefix": "my tools/"}, "servers.0.prefix"),
        ({"name": "a", "command": [""]}, "the first element must name the program"),
        (
            {"name": "a", "command": ["x"], "restart_backoff_seconds": 90},
            "restart_backoff_seconds exceeds max_backoff_seconds",
        ),
        ({"name": "a", "command": ["x"], "headers": {"A": "b"}}, "headers and protocol apply to url servers only"),
        ({"name": "a", "url": "http://h/mcp", "env": {"A": "b"}}, "env and cwd apply to command servers only"),
        ({"name": "a b", "command": ["x"]}, "plugins.remote.servers.0.name"),
        ({"name": "a", "command": []}, "plugins.remote.servers.0.command"),
        ({"name": "a", "command": ["x"], "tools": {"allow": ["p"], "deny": ["q"]}}, "either allow or deny"),
        ({"name": "a", "command": ["x"], "start": "later"}, "plugins.remote.servers.0.start"),
        ({"name": "a", "command": ["x"], "timeout": 3}, "unknown key 'plugins.remote.servers.0.timeout'"),
        ({"name": "a", "command": ["x"], "max_concurrency": 0}, "plugins.remote.servers.0.max_concurrency"),
        ({"name": "a", "command": ["x"], "headers": None, "env": {"K": {"vault": "x"}}}, "env.K"),
    ],
)
def test_mistakes_are_refused_naming_the_key(tmp_path: Path, server: dict[str, Any], expected: str) -> None:
    assert expected in _check(tmp_path, server)


def test_server_names_are_unique(tmp_path: Path) -> None:
    message = _check(tmp_path, {"name": "a", "command": ["x"]}, {"name": "a", "url": "http://h/mcp"})
    assert "server names must be unique (repeated: a)" in message


def test_secrets_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", "s3cret")
    monkeypatch.delenv("UNSET_TOKEN", raising=False)
    http = ServerConfig.model_validate(
        {
            "name": "search",
            "url": "https://mcp.internal.example/mcp",
            "headers": {"Authorization": {"env": "SEARCH_TOKEN"}, "X-Other": {"env": "UNSET_TOKEN"}},
        }
    )
    stdio = ServerConfig.model_validate({"name": "s", "command": ["srv"], "env": {"API_KEY": {"env": "SEARCH_TOKEN"}}})
    target = target_of(http)
    assert isinstance(target, HttpTarget) and target.headers == {"Authorization": "s3cret"}
    assert "s3cret" not in repr(http) and "s3cret" not in repr(target)
    assert http.missing_secrets() == {"headers.X-Other": "UNSET_TOKEN"}
    stdio_target = target_of(stdio)
    assert isinstance(stdio_target, StdioTarget) and stdio_target.env == {"API_KEY": "s3cret"}
    assert stdio_target.command == ("srv",)


def test_the_issue_example_is_valid(tmp_path: Path) -> None:
    config = RemoteConfig.model_validate(
        {
            "servers": [
                {
                    "name": "everything",
                    "command": ["npx", "-y", "@modelcontextprotocol/server-everything"],
                    "prefix": "ev_",
                    "tools": {"allow": ["echo", "add"]},
                },
                {
                    "name": "search",
                    "url": "https://mcp.internal.example/mcp",
                    "headers": {"Authorization": {"env": "SEARCH_TOKEN"}},
                },
            ]
        }
    )
    everything, search = config.servers
    assert everything.tools.admits("echo") and not everything.tools.admits("get-env")
    assert (everything.start, everything.transport, search.transport) == ("lazy", "stdio", "http")


def test_secret_values_are_scrubbed_as_an_http_library_quotes_them() -> None:
    from gateway.api import scrub_secrets as scrubbed

    secrets = {"headers.X-Upstream-Key": "Zq81hT0pLx\r\n", "env.SHORT": "ab"}
    text = "cannot connect: LocalProtocolError: Illegal header value b'Zq81hT0pLx\\r\\n' (also 'Zq81hT0pLx') ab"
    assert scrubbed(text, secrets) == (
        "cannot connect: LocalProtocolError: Illegal header value b'<headers.X-Upstream-Key>' "
        "(also '<headers.X-Upstream-Key>') ab"
    )


def test_overlapping_secrets_leave_no_part_of_either() -> None:
    from gateway.api import scrub_secrets

    assert scrub_secrets("xxabcd1234", {"b": "abcd1234", "a": "xxab"}) == "xx<b>"
    assert scrub_secrets("key=SECRET_VALUE and SECRET", {"A": "SECRET", "B": "SECRET_VALUE"}) == "key=<B> and <A>"


def test_only_values_written_as_env_references_are_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_KEY", "k-0123456789")
    server = ServerConfig(
        name="s", command=["srv"], env={"API_KEY": {"env": "UPSTREAM_KEY"}, "NODE_ENV": "production", "EMPTY": ""}
    )
    target = target_of(server)
    assert isinstance(target, StdioTarget)
    assert target.secrets == {"env.API_KEY": "k-0123456789"}
    assert target.env == {"API_KEY": "k-0123456789", "NODE_ENV": "production", "EMPTY": ""}  # passed on as set


def test_an_idle_timeout_of_zero_means_never() -> None:
    assert ServerConfig(name="s", command=["srv"], idle_timeout_seconds=0).idle_timeout_seconds is None
    assert ServerConfig(name="s", command=["srv"]).idle_timeout_seconds == 600


def test_an_allow_or_deny_list_naming_tools_the_server_lacks_is_told() -> None:
    from gateway_plugins.remote.config import ToolFilter

    assert ToolFilter(allow=["echo", "add"]).absent_from({"echo", "get-sum"}) == ["add"]
    assert ToolFilter(allow=["echo", "add"]).listing == "allow"
    assert ToolFilter(deny=["ehco", "echo"]).absent_from({"echo"}) == ["ehco"]
    assert ToolFilter(deny=["ehco"]).listing == "deny" and ToolFilter().absent_from({"echo"}) == []


@pytest.mark.parametrize("protocol", ["2025-06-18", "2025-11-25", "2024-11-05"])
def test_a_handshake_era_protocol_version_is_refused_saying_to_write_legacy(tmp_path: Path, protocol: str) -> None:
    message = _check(tmp_path, {"name": "web", "url": "http://h/mcp", "protocol": protocol})
    assert "'plugins.remote.servers.0.protocol': server 'web'" in message
    assert f"{protocol!r} is a handshake-era version: write 'legacy'" in message


def test_only_a_protocol_version_the_adapter_speaks_is_accepted(tmp_path: Path) -> None:
    from gateway.mcp_adapter.sdk import MODERN_PROTOCOL_VERSIONS
    from gateway_plugins.remote.config import MODERN_PROTOCOLS

    assert set(MODERN_PROTOCOLS) == set(MODERN_PROTOCOL_VERSIONS)  # the one list the config keeps, kept true
    for protocol in ["auto", "legacy", *MODERN_PROTOCOLS]:
        assert ServerConfig(name="web", url="http://h/mcp", protocol=protocol).protocol == protocol
    message = _check(tmp_path, {"name": "web", "url": "http://h/mcp", "protocol": "2099-01-01"})
    assert "server 'web': protocol must be 'auto', 'legacy' or a version the gateway speaks (2026-07-28)" in message


@pytest.mark.parametrize(
    ("server", "shown"),
    [
        ({"url": "http://alice:Pw0rd@127.0.0.1:9/mcp?token=Tok&x=1"}, "http://***@127.0.0.1:9/mcp?token=***&x=***"),
        ({"url": "https://ghp_0123456789@mcp.example/mcp"}, "https://***@mcp.example/mcp"),
        (
            {"command": ["docker", "run", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_1", "img", "--tokenizer", "gpt2"]},
            "docker run -e GITHUB_PERSONAL_ACCESS_TOKEN=*** img --tokenizer ***",
        ),
        (
            {"command": ["npx", "mcp-remote", "https://x.example", "--header", "Authorization: Bearer sk-1"]},
            "npx mcp-remote https://x.example --header Authorization: ***",
        ),
        ({"url": "https://mcp.example/mcp"}, "https://mcp.example/mcp"),
        (
            {"command": ["server", "--api-key", "K1", "--port", "8", "--token=T2", "-v"]},
            "server --api-key *** --port 8 --token=*** -v",
        ),
    ],
)
def test_the_target_shown_by_the_cli_hides_credentials(server: dict[str, Any], shown: str) -> None:
    assert ServerConfig.model_validate({"name": "s", **server}).target == shown


def test_a_secret_is_scrubbed_as_json_writes_it_too() -> None:
    from gateway.api import scrub_secrets

    secret = 'Tr0ub"4dor&3x\\'
    assert (
        scrub_secrets(json.dumps({"said": f"key {secret}"}), {"env.API_KEY": secret}) == '{"said": "key <env.API_KEY>"}'
    )
