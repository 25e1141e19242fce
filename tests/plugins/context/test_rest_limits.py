"""The spec's per-endpoint limits on the context pack's routes, over real HTTP with the spec's default sizes: each
route's bucket has the spec's size (``X-RateLimit-Limit`` and the OpenAPI document agree), health is unlimited, and
concurrent requests take exactly the bucket (the host's approach: 3 x limit at once, exactly limit admitted, the
remaining count going down without a gap), on the memory and the SQLite limiter."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.plugins.context.rest_support import ROUTES, SCOPES, Api, envelope, rest_config, serve
from tests.plugins.context.support import sample_repo

REQUESTS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/search"): {"json": {"query": "card"}},
    ("GET", "/search/suggestions"): {"params": {"q": "char"}},
    ("POST", "/index/start"): {"json": {"connectors": ["nope"]}},  # 404: a refusal still takes its token
    ("POST", "/index/force-reindex"): {"json": {"confirm_destructive": True, "connectors": ["nope"]}},
    ("POST", "/connectors"): {"json": {"type": "ftp", "name": "x"}},
    ("GET", "/connectors/{id}"): {},
    ("PUT", "/connectors/{id}"): {"json": {"name": "shop"}},
    ("DELETE", "/connectors/{id}"): {},
    ("PATCH", "/config"): {"json": {}},
}


def _path(path: str) -> str:
    return path.replace("{id}", "file-none")


def test_each_route_has_the_spec_size_and_health_none(tmp_path: Path) -> None:
    with serve(rest_config(tmp_path / "data", tiers={}), {"admin": ("acme", SCOPES)}) as api:
        document = api.ok("GET", "/openapi.json", "admin")
        for (method, path), (_scope, limit) in ROUTES.items():
            response = api.call(method, _path(path), "admin", **REQUESTS.get((method, path), {}))
            assert response.status_code < 500, (method, path, response.text)
            operation = document["paths"][f"/api/v1{path}"][method.lower()]
            if limit is None:
                assert not any(name.lower().startswith("x-ratelimit") for name in response.headers)
                assert "x-rate-limit" not in operation
                continue
            assert response.headers["X-RateLimit-Limit"] == str(limit), (method, path)
            assert response.headers["X-RateLimit-Remaining"] == str(limit - 1), (method, path)
            assert operation["x-rate-limit"] == {"limit": limit, "period_seconds": 60.0}
        for _ in range(30):
            assert api.call("GET", "/health").status_code == 200


async def _fire(api: Api, method: str, path: str, count: int, **kwargs: Any) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(timeout=120, limits=limits, headers=api.keys["admin"]) as client:
        return await asyncio.gather(*(client.request(method, api.url(path), **kwargs) for _ in range(count)))


def _admitted(responses: list[httpx.Response]) -> int:
    statuses = sorted({r.status_code for r in responses})
    assert statuses == [200, 429], statuses
    ok = [r for r in responses if r.status_code == 200]
    assert sorted(int(r.headers["X-RateLimit-Remaining"]) for r in ok) == list(range(len(ok)))
    envelope(next(r for r in responses if r.status_code == 429), 429, "RATE_LIMIT_ERROR")
    return len(ok)


CONCURRENT = (
    ("PATCH", "/config", "config_write", 2, {"json": {}}),
    ("GET", "/config", "config", 5, {}),
    ("GET", "/status", "status", 10, {}),
    ("GET", "/search/suggestions", "suggestions", 50, {"params": {"q": "char"}}),
)


@pytest.mark.parametrize("limiter", ["memory", "sqlite"])
def test_concurrent_requests_take_exactly_each_bucket(tmp_path: Path, limiter: str) -> None:
    # The spec's sizes, refilled per hour rather than per minute: no token comes back while a burst is served.
    tiers = {tier: {"limit": limit, "period_seconds": 3600} for _, _, tier, limit, _ in CONCURRENT}
    config = rest_config(tmp_path / "data", tiers=tiers)
    config["providers"]["rate_limiter"] = limiter
    with serve(config, {"admin": ("acme", SCOPES)}) as api:
        api.add_file_connector("admin", sample_repo(tmp_path / "shop"))
        for method, path, _tier, limit, kwargs in CONCURRENT:
            responses = asyncio.run(_fire(api, method, path, 3 * limit, **kwargs))
            assert _admitted(responses) == limit, (method, path)
