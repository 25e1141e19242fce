"""Root fixtures. Fakes for what cannot run here (the Gemini API) and the real PostgreSQL server the tests start
themselves live in tests/fakes and are loaded as plugins for every test."""

from __future__ import annotations

import logging
import threading

import pytest
import structlog

pytest_plugins = [
    "tests.fakes.gemini",
    "tests.fakes.postgres",
    "tests.fakes.github",
    "tests.fakes.jira",
    "tests.fakes.slack",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh_logging():
    """Logging is process-global: undo whatever configuration a test (or the CLI it drove) left behind."""
    root = logging.getLogger()
    handlers, level, hook = root.handlers[:], root.level, threading.excepthook  # pytest's hook: it must stay
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)
    threading.excepthook = hook


@pytest.fixture(autouse=True)
def _no_real_gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Gemini providers read ``GEMINI_API_KEY`` by default: a developer's real key must not send a test to the
    real API. Tests that want a key set one pointing at the fake (children started by a test inherit this)."""
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def _private_data_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A deployment without ``data_dir`` lives under ``$XDG_DATA_HOME``: point it at a temporary folder, so no test
    (nor a child process it starts) writes into the developer's own data dir."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
