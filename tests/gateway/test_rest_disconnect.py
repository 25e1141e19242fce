"""A REST call whose client hangs up is cancelled, as an MCP call is: the tool stops, and the call is logged
cancelled (not as a success after it ran to its end)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from gateway.testing import http_gateway
from tests.gateway.feature_pack import FeaturePlugin, feature_config


def test_a_rest_call_whose_client_hangs_up_is_cancelled(tmp_path: Path) -> None:
    plugin = FeaturePlugin()
    with http_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as (base, runtime):
        body = json.dumps({"steps": 1, "seconds": 30}).encode()
        url = urlsplit(base)
        with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
            sock.sendall(
                b"POST /api/v1/tools/feat_work HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            time.sleep(0.5)  # the call is running; then the client hangs up
        deadline = time.monotonic() + 10
        pack = runtime.packs["feat"]
        while not pack.cancelled and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pack.cancelled) == 1  # long before its 30 s
