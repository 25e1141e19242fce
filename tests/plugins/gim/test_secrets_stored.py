"""No secret a caller sends reaches storage, whichever tool and field carries it: every text column of every table
is read back from the SQLite file after a submission, a search, a confirmation and a usage report."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from gateway.testing import running_gateway
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, gim_config, submission

ANTHROPIC_KEY = "sk-ant-api03-" + "Xq7Lp2Vb9Rt4Wm8Zc1Nd6Hf3Jk5Gs0Ty" * 3
GITHUB_TOKEN = "ghp_" + "R7tW2qL9xV4mB8nZ1cK6yH3jF5dS0gP4aE2u"
AWS_KEY = "AKIAQ3EGUV7PLM2XWK5D"
EMAIL = "jane.doe@northwind-corp.io"
PASSWORD = "Zq8xTr0ub4dor3kW"


def _stored_text(data_dir: Path) -> str:
    """Every text value of every table of every SQLite database under ``data_dir``."""
    values: list[str] = []
    for path in data_dir.rglob("*"):
        if not path.is_file() or path.read_bytes()[:16] != b"SQLite format 3\x00":
            continue
        with sqlite3.connect(path) as db:
            tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                for row in db.execute(f'SELECT * FROM "{table}"'):
                    values.extend(str(value) for value in row if isinstance(value, str | bytes))
    assert values, "no database found"
    return "\n".join(values)


@pytest.mark.anyio
async def test_no_secret_of_any_tool_or_field_is_stored(data_dir: Path) -> None:
    async with running_gateway(gim_config(), data_dir) as client:
        issue = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS, provider=f"acme {GITHUB_TOKEN} {EMAIL}")
        issue["code_snippet"] = f'import numpy as np\nDB_PASSWORD = "{PASSWORD}"\nx = np.int(3)\n'
        issue["root_cause"] = f"{NUMPY_CAUSE} The value {PASSWORD} had been rotated meanwhile."
        created = await call(client, "gim_submit_issue", issue)
        master = created["master_issue_id"]
        bundle = await call(client, "gim_get_fix_bundle", {"issue_id": master})
        assert PASSWORD not in bundle["root_cause"] and "<" in bundle["root_cause"]  # swept: the snippet named it
        await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR, "model": f"model {GITHUB_TOKEN}"})
        confirmed = {
            "issue_id": master,
            "success": True,
            "notes": f"worked; password={PASSWORD} and {ANTHROPIC_KEY}, ask {EMAIL}",
            "environment": {
                "token": GITHUB_TOKEN,
                "nested": {"who": EMAIL},
                "versions": ["1.2", AWS_KEY],
                PASSWORD: "a key can hold a secret too",
                "a.b": "dotted key",
                "a": {"b": "nested key"},
            },
            "session_id": f"sess {EMAIL}",
        }
        await call(client, "gim_confirm_fix", confirmed)
        usage = {
            "event_type": "fix_applied",
            "issue_id": master,
            "session_id": AWS_KEY,
            "timestamp": "2026-01-27T10:00:00Z",
            "model": ANTHROPIC_KEY,
            "provider": f"acme {EMAIL}",
        }
        await call(client, "gim_report_usage", usage)
    stored = _stored_text(data_dir)
    for secret in (ANTHROPIC_KEY, GITHUB_TOKEN, AWS_KEY, EMAIL, PASSWORD):
        assert secret not in stored, secret
    assert "reported provider: acme <" in stored  # what was not secret in the field is kept
    assert re.search(r'"a\.b": ?"dotted key"', stored) and re.search(r'"a": ?\{"b": ?"nested key"\}', stored)
