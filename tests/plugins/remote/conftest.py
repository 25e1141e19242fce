"""Fixtures of the federation tests (helpers live in ``support``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.plugins.remote.support import HttpUpstream, http_upstream, node_or_skip


@pytest.fixture
def node() -> str:
    return node_or_skip()


@pytest.fixture
def py_http(tmp_path: Path) -> Iterator[HttpUpstream]:
    """The Python SDK server over Streamable HTTP in a subprocess."""
    with http_upstream(tmp_path) as upstream:
        yield upstream
