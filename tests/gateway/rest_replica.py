"""A gateway replica in a process of its own (started with ``multiprocessing``'s spawn), serving the notes pack
over real HTTP until told to stop: what N identical replicas behind a load balancer are."""

from __future__ import annotations

import multiprocessing.queues
import multiprocessing.synchronize
from typing import Any

from gateway.testing import http_gateway
from tests.gateway.rest_sample import PLUGINS


def serve_replica(
    config: dict[str, Any],
    started: multiprocessing.queues.Queue[str],
    stop: multiprocessing.synchronize.Event,
) -> None:
    """Serve ``config`` on a free loopback port, put the base URL on ``started``, serve until ``stop`` is set."""
    with http_gateway(config, extra_plugins=PLUGINS) as (base, _runtime):
        started.put(base)
        stop.wait(300)
