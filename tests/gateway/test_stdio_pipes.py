"""Stdin and stdout as async line streams (:mod:`gateway.stdio_pipes`): event-loop pipes, or worker-thread files
for regular files, exercised in a real child process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from gateway.stdio_pipes import TOO_LONG, PipeLines

_CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    from gateway.stdio_pipes import stdio_pipes

    async def main():
        async with stdio_pipes() as (lines, writer):
            print("stray print")  # must not reach the wire
            os.write(1, b"stray write\\n")
            async for line in lines:
                await writer.write(f"echo {len(line)} {line[:5]}\\n")
                await writer.flush()
        print("after", os.get_blocking(0), os.get_blocking(1), flush=True)  # the descriptors are back, blocking

    asyncio.run(main())
    """
)


def _run(stdin: bytes | None = None, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-c", _CHILD], input=stdin, capture_output=True, timeout=60, check=True, **kwargs
    )


def test_lines_in_and_out_while_stray_output_goes_to_stderr() -> None:
    big = "x" * (3 * 1024 * 1024)  # far past asyncio's default 64 KiB line limit
    done = _run(f"hello\n{big}\n".encode())
    assert done.stdout.decode().splitlines() == [
        "echo 6 hello",
        f"echo {len(big) + 1} xxxxx",
        "after True True",
    ]
    assert "stray print" in done.stderr.decode() and "stray write" in done.stderr.decode()


def test_regular_files_are_read_and_written_through_a_thread(tmp_path: Path) -> None:
    requests, out = tmp_path / "in.txt", tmp_path / "out.txt"
    requests.write_text("hello\nworld\n")
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=60
        )
    assert done.returncode == 0, done.stderr.decode()
    assert out.read_text() == "echo 6 hello\necho 6 world\nafter True True\n"
    assert "stray print" in done.stderr.decode() and "stray write" in done.stderr.decode()


def test_devices_the_event_loop_cannot_watch_are_read_as_files() -> None:
    # epoll refuses /dev/null (``docker run`` without -i, systemd units, nohup): the child must see the end of input
    # and finish, not wait forever on a reader that was never registered
    with open(os.devnull, "rb") as stdin, open(os.devnull, "wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=60
        )
    assert done.returncode == 0, done.stderr.decode()
    assert "Operation not permitted" not in done.stderr.decode()


def test_a_line_longer_than_the_limit_is_skipped_and_the_next_is_read() -> None:
    async def main() -> list[str]:
        reader = asyncio.StreamReader(limit=16)
        reader.feed_data(b"x" * 40 + b"\n" + b'{"ok": 1}\n' + b"y" * 100)  # found past the limit; never found
        reader.feed_data(b"z" * 50 + b"\nlast")
        reader.feed_eof()
        return [line async for line in PipeLines(reader)]

    assert asyncio.run(main()) == [TOO_LONG, '{"ok": 1}\n', TOO_LONG, "last"]
