"""Support for the REST route tests: a deployment served over real HTTP with API keys of chosen tenants and scopes
(the notes sample here; the context pack's tests use the same pieces)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx

from gateway.api import AUTH
from gateway.app import prepare
from gateway.providers import ProviderHub
from gateway.runtime import GatewayRuntime
from gateway.testing import http_gateway
from tests.gateway.rest_sample import PLUGINS


@dataclass(frozen=True)
class Served:
    base: str
    runtime: GatewayRuntime
    keys: dict[str, dict[str, str]]
    """Headers per key name (``{"X-API-Key": ...}``)."""
    timeout: float = 30

    def url(self, path: str) -> str:
        return f"{self.base}/api/v1{path}"

    def call(self, method: str, path: str, key: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {**(self.keys[key] if key else {}), **kwargs.pop("headers", {})}
        return httpx.request(method, self.url(path), headers=headers, timeout=self.timeout, **kwargs)


def create_keys(
    config: dict[str, Any], keys: dict[str, tuple[str, list[str]]], extra_plugins: Sequence[tuple[str, Any]] = ()
) -> dict[str, dict[str, str]]:
    """API keys on the deployment's own store: ``{name: (tenant, scopes)}`` → request headers per name."""

    async def main() -> dict[str, dict[str, str]]:
        loaded, plugins = prepare(config, extra_plugins=extra_plugins)
        hub = ProviderHub(loaded, plugins.registry)
        try:
            manager = hub.get(AUTH, "api_key")
            made = {}
            for name, (tenant, scopes) in keys.items():
                issued = await manager.create_key(name=name, scopes=scopes, tenant=tenant)
                made[name] = {"X-API-Key": issued.key}
            return made
        finally:
            await hub.aclose()

    return anyio.run(main)


@contextmanager
def serve_notes(config: dict[str, Any], keys: dict[str, tuple[str, list[str]]]) -> Iterator[Served]:
    headers = create_keys(config, keys, PLUGINS)
    with http_gateway(config, extra_plugins=PLUGINS) as (base, runtime):
        yield Served(base, runtime, headers)


def envelope(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The error of an envelope response at ``status`` with ``code`` (and its correlation header)."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    assert set(error) >= {"code", "message", "detail", "correlation_id", "retryable"}
    assert isinstance(error["detail"], str) and error["detail"]  # the spec types it as a string
    assert response.headers["X-Correlation-ID"] == error["correlation_id"]
    return error


def run_schemathesis(
    served: Served, key: str, cwd: Path, *, max_examples: int, timeout: float, extra: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """schemathesis (its ``st`` CLI, every check, a fixed seed, one worker, no example database) against the live
    server's OpenAPI document, authenticated with API key ``key``. ``cwd``: where it reads ``schemathesis.toml``
    and keeps its cache."""
    return subprocess.run(
        [
            str(Path(sys.executable).with_name("st")),
            "run",
            served.url("/openapi.json"),
            "--header",
            f"X-API-Key: {served.keys[key]['X-API-Key']}",
            "--checks",
            "all",
            *extra,
            "--max-examples",
            str(max_examples),
            "--seed",
            "1",
            "--workers",
            "1",
            "--generation-database",
            "none",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
