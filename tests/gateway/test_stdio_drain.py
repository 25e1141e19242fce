"""Over stdio, a stop signal or the end of input lets the calls in flight finish and be answered (within
``transport.shutdown_grace_seconds``) before what still runs is cancelled."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.gateway.stdio_support import INITIALIZE, INITIALIZED, StdioPeer
from tests.plugins.remote.support import PY_SERVER


def _config(tmp_path: Path, grace: float) -> Path:
    (tmp_path / "state").mkdir()
    path = tmp_path / "slow.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[transport]\nshutdown_grace_seconds = {grace}\n'
        '[packs]\nenabled = ["remote"]\n[sanitize]\nlogs = ""\n'
        f'[[plugins.remote.servers]]\nname = "py"\nprefix = "py_"\nstart = "eager"\n'
        f'command = [{json.dumps(sys.executable)}, {json.dumps(str(PY_SERVER))}, "stdio", '
        f"{json.dumps(str(tmp_path / 'state'))}]\n"
    )
    return path


def _pause(rpc_id: int, ms: int) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "method": "tools/call",
        "params": {"name": "py_pause", "arguments": {"ms": ms}},
    }


def _answers(stdout: bytes) -> dict[int, dict]:
    return {a["id"]: a for a in map(json.loads, stdout.decode().splitlines()) if a.get("id") != INITIALIZE["id"]}


def test_a_stop_signal_answers_the_calls_in_flight_before_stopping(tmp_path: Path) -> None:
    peer = StdioPeer(_config(tmp_path, grace=10))
    peer.open_session()
    for rpc_id in (1, 2, 3):
        peer.send(_pause(rpc_id, 600))
    time.sleep(0.3)
    peer.process.send_signal(signal.SIGTERM)
    stdout, _ = peer.process.communicate(timeout=60)
    answers = _answers(stdout)
    assert peer.process.returncode == -signal.SIGTERM
    assert sorted(answers) == [1, 2, 3] and all(
        "result" in a and not a["result"].get("isError") for a in answers.values()
    )


def test_past_the_grace_period_calls_still_running_are_cancelled(tmp_path: Path) -> None:
    peer = StdioPeer(_config(tmp_path, grace=0.5))
    peer.open_session()
    peer.send(_pause(1, 30_000))
    time.sleep(0.3)
    started = time.monotonic()
    status, _ = peer.stop(signal.SIGTERM)
    assert status == -signal.SIGTERM and time.monotonic() - started < 10


def test_the_end_of_input_answers_every_request_sent(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    quick = [{"jsonrpc": "2.0", "id": rpc_id, "method": "tools/list"} for rpc_id in range(100, 125)]
    lines = [INITIALIZE, INITIALIZED, *(_pause(rpc_id, 300) for rpc_id in range(1, 6)), *quick]
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(_config(tmp_path, grace=10))]
    with requests.open("rb") as stdin:
        done = subprocess.run(command, stdin=stdin, capture_output=True, timeout=120)
    wanted = [1, 2, 3, 4, 5, *range(100, 125)]
    assert sorted(_answers(done.stdout)) == wanted, set(wanted) - set(_answers(done.stdout))
