"""The interceptor chain: configured order, refusals, and on_error policies."""

from __future__ import annotations

import json

import pytest

from gateway.testing import running_gateway
from tests.gateway.sample_plugin import sample_config

pytestmark = pytest.mark.anyio


def _config(tmp_path, first="pass", second="pass", first_policy="fail_closed"):
    return sample_config(
        tmp_path,
        pipeline={"interceptors": [{"name": "first", "on_error": first_policy}, {"name": "second"}]},
        plugins={
            "interceptor": {
                "first": {"label": "first", "behaviour": first},
                "second": {"label": "second", "behaviour": second},
            }
        },
    )


async def test_interceptors_run_in_configured_order(tmp_path, sample):
    async with running_gateway(_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_echo", {"text": "x"})
    assert not result.is_error
    assert sample.trace == ["first:before", "second:before", "second:after", "first:after"]


async def test_a_refusal_stops_the_call(tmp_path, sample):
    async with running_gateway(_config(tmp_path, second="refuse"), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_echo", {"text": "x"})
    assert json.loads(result.content[0].text)["error"]["code"] == "rate_limit_exceeded"
    assert sample.trace == ["first:before", "second:before"]


async def test_a_crashing_link_fails_closed_by_default(tmp_path, sample):
    async with running_gateway(_config(tmp_path, first="crash"), extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_echo", {"text": "x"})
    body = json.loads(result.content[0].text)
    assert result.is_error and body["error"]["code"] == "service_unavailable"
    assert "interceptor bug" not in result.content[0].text
    assert sample.trace == ["first:before"]


async def test_fail_open_link_is_skipped_when_it_crashes(tmp_path, sample):
    config = _config(tmp_path, first="crash", first_policy="fail_open")
    async with running_gateway(config, extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_echo", {"text": "x"})
    assert not result.is_error
    assert sample.trace == ["first:before", "second:before", "second:after"]


async def test_errors_from_downstream_are_not_subject_to_the_policy(tmp_path, sample):
    config = _config(tmp_path, first_policy="fail_open", second="refuse")
    async with running_gateway(config, extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_echo", {"text": "x"})
    assert json.loads(result.content[0].text)["error"]["code"] == "rate_limit_exceeded"


@pytest.mark.parametrize(
    ("mode", "raised", "code"),
    [("missing", "NotFound", "not_found"), ("crash", "RuntimeError", "internal_error")],
)
async def test_a_link_sees_what_downstream_raised_and_letting_it_through_keeps_it(tmp_path, sample, mode, raised, code):
    config = _config(tmp_path, first="observe", first_policy="fail_open")
    async with running_gateway(config, extra_plugins=[("sample", sample)]) as client:
        result = await client.call_tool("echo_fail", {"mode": mode})
    assert result.is_error and json.loads(result.content[0].text)["error"]["code"] == code
    assert sample.trace == ["first:before", "second:before", f"first:saw {raised}"]


async def test_scope_is_enforced_before_the_pipeline(tmp_path, sample):
    from gateway.api import Principal

    async with running_gateway(_config(tmp_path), extra_plugins=[("sample", sample)]) as client:
        runtime = client.runtime
        reader = Principal(subject="reader", scopes=frozenset({"echo:read"}))
        visible = {s.name for s in runtime.visible_tools(reader)}
        outcome = await runtime.call_tool("echo_admin", {"text": "x"}, runtime.new_context(principal=reader))
    assert "echo_admin" not in visible and "echo_echo" in visible
    assert outcome.is_error and outcome.body["error"]["code"] == "forbidden"
    assert sample.trace == []


async def test_rate_limit_rules_name_served_tools_including_a_pack_prefix(tmp_path, sample):
    config = sample_config(
        tmp_path,
        packs={"enabled": ["echo"], "prefix": {"echo": "team_"}},
        providers={"rate_limiter": "memory"},
        pipeline={"interceptors": [{"name": "rate_limit"}]},
        plugins={"interceptor": {"rate_limit": {"rules": [{"name": "r", "tools": ["team_echo_echo"], "limit": 1}]}}},
    )
    async with running_gateway(config, extra_plugins=[("sample", sample)]) as client:
        first = await client.call_tool("team_echo_echo", {"text": "x"})
        second = await client.call_tool("team_echo_echo", {"text": "x"})
    assert not first.is_error
    assert json.loads(second.content[0].text)["error"]["code"] == "rate_limit_exceeded"
