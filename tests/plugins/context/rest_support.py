"""Support for the REST tests of the context pack: a deployment served over real HTTP behind the real ``api_key``
authenticator, with keys of chosen tenants and scopes, and helpers to index a tree and wait for the job."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gateway.testing import http_gateway
from tests.gateway.rest_support import Served, create_keys
from tests.gateway.rest_support import envelope as envelope  # the context tests import it from here
from tests.plugins.context.support import context_config

SCOPES = [
    "search:read",
    "index:read",
    "index:write",
    "connectors:read",
    "connectors:write",
    "config:read",
    "config:write",
]
ROUTES = {
    ("GET", "/health"): (None, None),
    ("GET", "/status"): ("index:read", 10),
    ("POST", "/search"): ("search:read", 100),
    ("GET", "/search/suggestions"): ("search:read", 50),
    ("POST", "/index/start"): ("index:write", 10),
    ("POST", "/index/stop"): ("index:write", 10),
    ("GET", "/index/status"): ("index:read", 30),
    ("POST", "/index/force-reindex"): ("index:write", 5),
    ("GET", "/connectors"): ("connectors:read", 20),
    ("POST", "/connectors"): ("connectors:write", 10),
    ("GET", "/connectors/{id}"): ("connectors:read", 20),
    ("PUT", "/connectors/{id}"): ("connectors:write", 10),
    ("DELETE", "/connectors/{id}"): ("connectors:write", 5),
    ("GET", "/config"): ("config:read", 5),
    ("PATCH", "/config"): ("config:write", 2),
}
"""Every route of the spec's section 1.4 (but ``POST /auth/refresh``, the jwt provider's): (scope, requests per
minute; ``None``: unlimited)."""

ROOMY = {
    name: 100_000
    for name in (
        "search",
        "index",
        "connectors",
        "config",
        "status",
        "suggestions",
        "index_status",
        "force_reindex",
        "connectors_write",
        "connectors_delete",
        "config_write",
    )
}
"""Every tier of the pack, large enough for a test module (the tier tests set their own sizes)."""


def rest_config(data_dir: Path, *, tiers: dict[str, Any] | None = None, **context: Any) -> dict[str, Any]:
    """An ``api_key`` deployment whose tenants may index the test session's temporary directories (``data_dir`` is
    ``<basetemp>/<test>/data``; the tests' sample repositories are in other ``<basetemp>/<test>`` directories)."""
    context.setdefault("tenant_connectors", {"roots": [str(data_dir.parents[1])]})
    config = context_config(context=context, rest={"tiers": tiers if tiers is not None else ROOMY})
    config["providers"]["auth"] = "api_key"
    config["gateway"] = {"log_level": "warning", "data_dir": str(data_dir), "identity": "local"}
    config["sanitize"] = {"logs": ""}
    return config


class Api(Served):
    """A served context deployment, with the calls the context tests make again and again."""

    def ok(self, method: str, path: str, key: str, status: int = 200, **kwargs: Any) -> Any:
        response = self.call(method, path, key, **kwargs)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def add_file_connector(self, key: str, root: Path, name: str = "shop") -> str:
        body = {"type": "file", "name": name, "config": {"root": str(root)}}
        return self.ok("POST", "/connectors", key, 201, json=body)["id"]

    def wait_for_job(self, key: str) -> dict[str, Any]:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = self.ok("GET", "/index/status", key)
            if status["status"] not in ("running", "queued", "stopping"):
                return status
            time.sleep(0.1)
        raise AssertionError("indexing did not finish")

    def index(self, key: str, **body: Any) -> dict[str, Any]:
        self.ok("POST", "/index/start", key, 202, json=body)
        return self.wait_for_job(key)


@contextmanager
def serve(config: dict[str, Any], keys: dict[str, tuple[str, list[str]]]) -> Iterator[Api]:
    headers = create_keys(config, keys)
    with http_gateway(config) as (base, runtime):
        yield Api(base, runtime, headers, timeout=60)
