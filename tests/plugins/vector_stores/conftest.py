"""Fixtures of the vector-store tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_SHM = Path("/dev/shm")


@pytest.fixture
def fast_tmp_path(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory on a RAM file system when there is one (else ``tmp_path``).

    Qdrant Edge fsyncs on every flush, index change and close: 70-170 ms each on a busy VM disk, nothing on
    tmpfs. What the engine does is the same; tests that are about the disk use ``tmp_path``.
    """
    if not (_SHM.is_dir() and os.access(_SHM, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="gateway-vectors-", dir=_SHM))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
