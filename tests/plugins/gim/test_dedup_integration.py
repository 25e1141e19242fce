"""The duplicate decision through the tools (real gateway, MCP SDK client, local embedder, Qdrant Edge, SQLite):
a look-alike report with another cause stays apart, a reworded report of the same cause merges; with fixes that
only restate the cause (as the evaluation protocol's are), the mechanism check is what keeps them apart."""

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


NO_CUDA = (
    '  File "{home}/.venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 289, in _lazy_init\n'
    '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
    "AssertionError: Torch not compiled with CUDA enabled"
)
CPU_WHEEL = (
    "pip installed the CPU-only torch wheel (default index on Windows / a plain `pip install torch` resolved to "
    "+cpu); reinstall from the CUDA index URL."
)
APPLE = (
    "The code calls .cuda() on an Apple Silicon Mac, where no CUDA build exists; use the 'mps' device "
    "(torch.device('mps')) or CPU."
)
CPU_WHEEL_REWORDED = (
    "The environment got the +cpu build of torch that a plain pip install picks, not a CUDA wheel; reinstall torch "
    "from the CUDA index URL."
)
TORCH = {"language": "Python", "framework": "PyTorch"}


OTHER_ISSUES = [
    ("ModuleNotFoundError: No module named 'distutils'", "Python 3.12 removed distutils; install setuptools."),
    ("AttributeError: module 'numpy' has no attribute 'float'", "NumPy 1.24 removed the np.float alias."),
    ("ImportError: cannot import name 'url_quote' from 'werkzeug.urls'", "Werkzeug 3 removed url_quote."),
    ("AttributeError: 'DataFrame' object has no attribute 'append'", "pandas 2.0 removed DataFrame.append."),
    ("Error: listen EADDRINUSE: address already in use :::3000", "Another dev server still holds port 3000."),
    ("fatal: detected dubious ownership in repository at '/src'", "git 2.35.2 refuses repos owned by others."),
    ('psql: error: FATAL: Peer authentication failed for user "app"', "pg_hba.conf uses peer for local sockets."),
    ("npm ERR! code ERESOLVE unable to resolve dependency tree", "react-datepicker 3 wants React 16/17, not 18."),
    ("SSL: CERTIFICATE_VERIFY_FAILED unable to get local issuer certificate", "A proxy re-signs TLS traffic."),
    ("exec /usr/local/bin/docker-entrypoint.sh: exec format error", "The image was built for arm64, run on amd64."),
    ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", "The batch does not fit in GPU memory."),
    ("OSError: [E050] Can't find model 'en_core_web_sm'", "The spaCy pipeline was never downloaded."),
]
"""A memory to weigh terms against: the mechanism check's weights come from the stored explanations."""


def restating(home: str, cause: str) -> dict[str, Any]:
    """A report whose fix only points elsewhere and restates the cause (the shared evaluation protocol's form)."""
    pointer = [{"order": 1, "type": "command", "command": "see the linked thread", "explanation": cause}]
    return submission(NO_CUDA.format(home=home), cause, actions=pointer, environment=TORCH)


async def test_same_error_another_mechanism_stays_apart_with_restating_fixes(gim: Any) -> None:
    """Each fix is one action whose explanation is the root cause: the two causes differ only in their text."""
    for error, cause in OTHER_ISSUES:
        pointer = [{"order": 1, "type": "command", "command": "see the linked thread", "explanation": cause}]
        await call(gim, "gim_submit_issue", submission(error, cause, actions=pointer))
    first = await call(gim, "gim_submit_issue", restating("/home/u", CPU_WHEEL))
    apple = await call(gim, "gim_submit_issue", restating("/Users/me", APPLE))
    assert apple["merged"] is False

    reworded = await call(gim, "gim_submit_issue", restating("C:/Users/k", CPU_WHEEL_REWORDED))
    assert reworded["merged"] is True
    assert reworded["master_issue_id"] == first["master_issue_id"]


async def test_without_the_mechanism_check_the_same_error_with_another_mechanism_merges(data_dir: Path) -> None:
    """What the mechanism check adds: the embeddings and the other checks alone merge the two causes."""
    async with running_gateway(gim_config(gim={"dedup_mechanism_overlap": 0.0}), data_dir) as client:
        first = await call(client, "gim_submit_issue", restating("/home/u", CPU_WHEEL))
        apple = await call(client, "gim_submit_issue", restating("/Users/me", APPLE))
    assert apple["merged"] is True
    assert apple["master_issue_id"] == first["master_issue_id"]
