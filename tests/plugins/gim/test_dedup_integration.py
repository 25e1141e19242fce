"""The duplicate decision through the tools (real gateway, MCP SDK client, local embedder, Qdrant Edge, SQLite):
a look-alike report with another cause stays apart, a reworded report of the same cause merges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from tests.plugins.gim.support import call, gim_config, submission

pytestmark = pytest.mark.anyio

FLASK_ERROR = (
    '  File "/venv/lib/python3.11/site-packages/flask/app.py", line 28, in <module>\n'
    "    from werkzeug.urls import url_quote\n"
    "ImportError: cannot import name 'url_quote' from 'werkzeug.urls'"
)
FLASK_CAUSE = (
    "Werkzeug 3.0 removed url_quote (and other werkzeug.urls helpers); Flask 2.2.x and older import it, so an "
    "unpinned Werkzeug pulled in next to an old Flask breaks `import flask`."
)
FLASK_ACTIONS = [
    {"order": 1, "type": "downgrade", "command": 'pip install "Werkzeug<3.0"', "explanation": "keep url_quote"},
    {"order": 2, "type": "upgrade", "command": 'pip install -U "Flask>=2.3"', "explanation": "or upgrade Flask"},
]
LOGIN_ERROR = (
    '  File "/venv/lib/python3.11/site-packages/flask_login/utils.py", line 14, in <module>\n'
    "    from werkzeug.urls import url_decode\n"
    "ImportError: cannot import name 'url_decode' from 'werkzeug.urls'"
)
LOGIN_CAUSE = (
    "Flask-Login 0.6.2 imports werkzeug.urls.url_decode, removed in Werkzeug 3.0; Flask-Login 0.6.3 fixed it, so "
    "upgrade Flask-Login."
)
LOGIN_ACTIONS = [
    {
        "order": 1,
        "type": "upgrade",
        "command": 'pip install -U "Flask-Login>=0.6.3"',
        "explanation": "0.6.3 no longer imports url_decode",
    }
]
REWORDED_ERROR = (
    "from werkzeug.urls import url_quote\nImportError: cannot import name 'url_quote' from 'werkzeug.urls' "
    "(C:\\Users\\k\\env\\Lib\\site-packages\\werkzeug\\urls.py)"
)
REWORDED_CAUSE = (
    "Flask 2.2 depends on werkzeug.urls.url_quote; Werkzeug 3.0 dropped it, so pin Werkzeug below 3 or move to "
    "Flask 2.3+/3.x."
)
ENVIRONMENT = {"language": "Python", "framework": "Flask", "os": "Linux"}


def flask(error: str = FLASK_ERROR, cause: str = FLASK_CAUSE) -> dict[str, Any]:
    return submission(error, cause, actions=FLASK_ACTIONS, environment=ENVIRONMENT)


def flask_login() -> dict[str, Any]:
    return submission(LOGIN_ERROR, LOGIN_CAUSE, actions=LOGIN_ACTIONS, environment=ENVIRONMENT)


async def test_look_alike_with_another_cause_stays_apart_and_a_reworded_duplicate_merges(gim: Any) -> None:
    first = await call(gim, "gim_submit_issue", flask())
    look_alike = await call(gim, "gim_submit_issue", flask_login())
    assert look_alike["merged"] is False
    assert look_alike["master_issue_id"] != first["master_issue_id"]

    reworded = await call(gim, "gim_submit_issue", flask(REWORDED_ERROR, REWORDED_CAUSE))
    assert reworded["merged"] is True
    assert reworded["master_issue_id"] == first["master_issue_id"]


async def test_without_the_agreement_rule_the_embeddings_alone_merge_the_look_alike(data_dir: Path) -> None:
    """What the vetoes add: the same pair, judged by rules 1-2 only, is merged."""
    async with running_gateway(gim_config(gim={"dedup_require_agreement": False}), data_dir) as client:
        first = await call(client, "gim_submit_issue", flask())
        look_alike = await call(client, "gim_submit_issue", flask_login())
    assert look_alike["merged"] is True
    assert look_alike["master_issue_id"] == first["master_issue_id"]
