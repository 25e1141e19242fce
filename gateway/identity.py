"""The caller identity over stdio: configured, or a per-install id kept in the data dir."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from gateway.api.context import Principal

_ID_FILE = "install-id"


def install_id(data_dir: Path) -> str:
    """A stable random id for this install, created on first start (atomically, so racing starts agree)."""
    path = data_dir / _ID_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    candidate = f"install-{uuid.uuid4()}"
    tmp = data_dir / f".{_ID_FILE}.{os.getpid()}"
    tmp.write_text(candidate, encoding="utf-8")
    try:
        os.link(tmp, path)  # fails if another process won the race
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def local_principal(configured: str | None, data_dir: Path) -> Principal:
    """The principal of every stdio (and unauthenticated) call: full access, identity from config or install."""
    subject = configured or install_id(data_dir)
    return Principal(subject=subject, method="config" if configured else "install", all_scopes=True)
