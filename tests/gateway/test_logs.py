"""Logs: one redacted JSON line per call on stderr, and the call's correlation id on every line logged during it."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import warnings
from typing import Any

import pytest
import structlog
from pydantic import BaseModel

from gateway.api import CallContext, Tool, ToolPack, hookimpl
from gateway.app import running_runtime
from gateway.logs import call_log, configure_logging, make_log_redactor
from gateway_plugins.sanitizers.patterns import PatternSanitizer

pytestmark = pytest.mark.anyio


class Note(BaseModel):
    text: str


async def _note(args: Note, ctx: CallContext) -> Note:
    structlog.get_logger("a.plugin").info("inside the tool", detail=args.text)
    return Note(text="noted")


class NotePack(ToolPack):
    name = "note"

    def tools(self) -> list[Tool[Any, Any]]:
        return [Tool("note_take", "Take a note.", Note, Note, _note)]


class NotePlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("note", lambda ctx: NotePack())


def _config(tmp_path: Any, level: str) -> dict[str, Any]:
    return {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "alice@acme-corp.io", "log_level": level},
        "packs": {"enabled": ["note"]},
        "sanitize": {"logs": "patterns"},
    }


def _lines(err: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


async def test_each_call_logs_one_redacted_line_and_its_correlation_id_reaches_plugin_logs(tmp_path, capsys):
    token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
    async with running_runtime(_config(tmp_path, "info"), extra_plugins=[("note", NotePlugin())]) as runtime:
        context = runtime.new_context()
        outcome = await runtime.call_tool("note_take", {"text": f"my token is {token}"}, context)
    assert not outcome.is_error
    err = capsys.readouterr().err
    assert token not in err and "alice@acme-corp.io" not in err
    lines = _lines(err)
    inside = next(line for line in lines if line["event"] == "inside the tool")
    assert inside["detail"] == "my token is <GITHUB_TOKEN_1>"
    assert inside["correlation_id"] == context.correlation_id and inside["tool"] == "note_take"
    (call,) = [line for line in lines if line["event"] == "tool call"]
    assert call["correlation_id"] == context.correlation_id and call["tool"] == "note_take"
    assert call["principal"] == "<EMAIL_1>" and call["transport"] == "memory"
    assert call["error"] is None and call["ms"] >= 0
    assert call["level"] == "info" and call["timestamp"].endswith("Z")


async def test_a_call_of_a_tool_no_pack_serves_is_logged_and_counted(tmp_path, capsys):
    """The name is the caller's text: the line keeps its first 128 characters, redacted; the counter has no label."""
    from gateway.runtime import UnknownTool

    name = "note_tak" + "e" * 200 + " ghp_0123456789abcdefghijABCDEFGHIJ012345"
    async with running_runtime(_config(tmp_path, "info"), extra_plugins=[("note", NotePlugin())]) as runtime:
        context = runtime.new_context()
        with pytest.raises(UnknownTool):
            await runtime.call_tool(name, {}, context)
        with pytest.raises(UnknownTool):
            await runtime.call_tool("nope ghp_0123456789abcdefghijABCDEFGHIJ012345", {}, runtime.new_context())
        with pytest.raises(UnknownTool):  # a token across the 128th character: redacted whole, then cut
            await runtime.call_tool("x" * 110 + " ghp_0123456789abcdefghijABCDEFGHIJ012345", {}, runtime.new_context())
        metrics = runtime.metrics.render().decode()
    assert "gateway_unknown_tool_calls_total 3.0" in metrics and "ghp_" not in metrics
    err = capsys.readouterr().err
    calls = [line for line in _lines(err) if line["event"] == "tool call"]
    assert [call["error"] for call in calls] == ["unknown_tool"] * 3
    assert calls[0]["tool"] == name[:128] and calls[0]["correlation_id"] == context.correlation_id
    assert calls[1]["tool"] == "nope <GITHUB_TOKEN_1>"
    assert calls[2]["tool"] == "x" * 110 + " <GITHUB_TOKEN_1>" and "ghp_" not in err


async def test_the_call_line_follows_the_log_level(tmp_path, capsys):
    async with running_runtime(_config(tmp_path, "warning"), extra_plugins=[("note", NotePlugin())]) as runtime:
        await runtime.call_tool("note_take", {"text": "x"}, runtime.new_context())
    assert not [line for line in _lines(capsys.readouterr().err) if line["event"] in ("tool call", "inside the tool")]


def test_log_redactor_structlog_line() -> None:
    lines: list[str] = []
    logger = structlog.wrap_logger(
        _Collect(lines),
        processors=[make_log_redactor(PatternSanitizer().redact), structlog.processors.JSONRenderer()],
    )
    logger.info(
        "login for alice@acme-corp.io",
        headers={"Authorization": "Bearer 1a2B3c4D5e6F7g8H9i0J"},
        keys=["ghp_0123456789abcdefghijABCDEFGHIJ012345", 42],
        port=8000,
    )
    event = json.loads(lines[0])
    assert event["event"] == "login for <EMAIL_1>"
    assert event["headers"] == {"Authorization": "Bearer <TOKEN_1>"}
    assert event["keys"] == ["<GITHUB_TOKEN_1>", 42] and event["port"] == 8000


def test_log_redactor_never_logs_on_failure() -> None:
    def boom(_text: str) -> str:
        raise ValueError

    assert make_log_redactor(boom)(None, "info", {"event": "secret"}) == {"event": "<REDACTION_FAILED>"}


class _Collect:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def info(self, message: str) -> None:
        self.lines.append(message)


def test_lines_of_threads_logging_at_once_stay_whole_and_warnings_and_thread_deaths_are_lines_too() -> None:
    """structlog's lines, the standard library's (uvicorn, libraries) and the per-call line share one stream."""
    stream = io.StringIO()
    configure_logging("info", redactor=make_log_redactor(PatternSanitizer().redact), stream=stream)

    def chatter(n: int) -> None:
        for i in range(2000):
            if n == 0:
                structlog.get_logger("a").warning("structlog line", i=i)
            elif n == 1:
                logging.getLogger("library").warning(f"stdlib line {i}")  # distinct lines: no flood to cut
            else:
                call_log()(tool="t", i=i)

    workers = [threading.Thread(target=chatter, args=(n,)) for n in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a library warns: password=hunter2 ghp_0123456789abcdefghijABCDEFGHIJ012345", stacklevel=1)

    def dies() -> None:
        raise RuntimeError("a worker died holding ghp_0123456789abcdefghijABCDEFGHIJ012345")

    thread = threading.Thread(target=dies, name="doomed")
    thread.start()
    thread.join()
    text = stream.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]  # every line is one whole JSON document
    assert len(lines) == 6002
    assert "ghp_0123456789" not in text and "hunter2" not in text
    warned, died = lines[-2], lines[-1]
    assert "a library warns" in warned["event"] and warned["logger"] == "py.warnings"
    assert died["event"] == "a thread ended with an exception" and died["thread"] == "doomed"
    assert "RuntimeError: a worker died" in died["exception"]


def test_a_library_repeating_one_message_is_cut_to_ten_lines_a_second_one_traceback_each() -> None:
    """The MCP SDK logs an error with a traceback for every line a remote server prints on stdout that is not
    JSON-RPC: a server printing garbage wrote megabytes a second."""
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    flooding = logging.getLogger("mcp.client.stdio")
    for _ in range(3):
        for _ in range(500):
            try:
                raise ValueError("Invalid JSON: expected value at line 1 column 1")
            except ValueError:
                flooding.exception("Failed to parse JSONRPC message from server")
        time.sleep(1.05)
    flooding.error("Failed to parse JSONRPC message from server")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert 31 <= len(lines) <= 40, len(lines)  # ten a second, whatever the rate
    with_traceback = [line for line in lines if "exception" in line]
    assert 3 <= len(with_traceback) <= 6  # the first of each second's
    assert "more lines like this were dropped in a second)" in lines[-1]["event"]


def test_a_fatal_signal_leaves_its_traceback_on_the_log_stream(tmp_path) -> None:
    """A native library that faults (SIGBUS on a file system that cannot back a mapped file, say) kills the process
    at once: the traceback of where it happened still reaches stderr."""
    import subprocess
    import sys

    script = (
        "import ctypes\nfrom gateway.logs import configure_logging\nconfigure_logging('info')\nctypes.string_at(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "Fatal Python error: Segmentation fault" in done.stderr and "string_at" in done.stderr


def test_distinct_lines_of_one_format_string_are_not_a_flood_and_any_message_type_passes() -> None:
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    library = logging.getLogger("somelib")
    for n in range(30):
        library.warning("dropping tool %r: its schema is not an object", f"tool{n}")
    library.warning({"a": "dict as the message"})  # unhashable: logged, not raised into the library
    events = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]
    assert len(events) == 31 and "tool29" in events[29] and "dict as the message" in events[30]
