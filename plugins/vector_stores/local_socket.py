"""Local-socket plumbing for serving a store to other processes of the same user: where the socket lives, who may
connect, and how messages are framed.

The socket is a Unix domain socket in a directory only its owner may enter (mode 0700), and is itself mode 0600;
on Linux each side also checks the other's user id (``SO_PEERCRED``), so a socket planted by another user is
refused rather than trusted. A socket path is limited to about 100 bytes: when the store's directory makes it
longer, the socket goes to ``$TMPDIR/mcp-gateway-<uid>/<hash of the directory>.sock`` instead (same checks).

Messages are frames: a 4-byte big-endian length, then an orjson document (numpy arrays are written natively).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import stat
import struct
import tempfile
from pathlib import Path
from typing import Any

import orjson

SOCKET_DIR = "run"
SOCKET_NAME = "store.sock"
MAX_PATH_BYTES = 100
"""Longest socket path used in place (``sun_path`` holds 108 bytes on Linux, 104 on macOS)."""
MAX_FRAME_BYTES = 1 << 30
"""Largest frame accepted; anything larger is a confused or hostile peer, not a request."""

_HEADER = struct.Struct(">I")
_DUMPS_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS

SUPPORTED = hasattr(socket, "AF_UNIX")
"""Unix domain sockets exist on this platform (without them a store cannot be shared)."""


class PeerRefused(ConnectionError):
    """The other end of the socket runs as another user (or the socket's directory is not private)."""


class FrameError(ConnectionError):
    """A frame that is too large or not a JSON document: the connection cannot be trusted any more."""


def socket_path(directory: Path) -> Path:
    """Where the socket of the store in ``directory`` lives (the same answer in every process of the user)."""
    preferred = directory / SOCKET_DIR / SOCKET_NAME
    if len(os.fsencode(preferred)) <= MAX_PATH_BYTES:
        return preferred
    digest = hashlib.sha256(os.fsencode(directory.resolve())).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"mcp-gateway-{os.getuid()}" / f"{digest}.sock"


def private_directory(path: Path) -> Path:
    """Create ``path`` if missing and make it private (mode 0700); :class:`PeerRefused` when it is not a real
    directory of this user."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_owner(path)
    os.chmod(path, 0o700)
    return path


def check_private_directory(path: Path) -> None:
    """:class:`PeerRefused` unless ``path`` is a directory of this user that no one else may enter."""
    info = _check_owner(path)
    if info.st_mode & 0o077:
        raise PeerRefused(f"{path} may be entered by other users (mode {stat.S_IMODE(info.st_mode):o})")


def _check_owner(path: Path) -> os.stat_result:
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise PeerRefused(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise PeerRefused(f"{path} belongs to uid {info.st_uid}, not to this user ({os.getuid()})")
    return info


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of ``sock`` (``None`` where the platform cannot tell)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def check_peer(sock: socket.socket) -> None:
    """:class:`PeerRefused` unless the other end runs as this user (where the platform says)."""
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        raise PeerRefused(f"the process at the other end of the socket runs as uid {uid}, not {os.getuid()}")


# -- frames ------------------------------------------------------------------------------------------------------


def encode_frame(message: Any) -> bytes:
    """``message`` as one frame (``TypeError`` for what JSON cannot hold, such as integers beyond 64 bits)."""
    body = orjson.dumps(message, option=_DUMPS_OPTIONS)
    return _HEADER.pack(len(body)) + body


def _decode_body(length: int, body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"a frame of {length} bytes is not JSON: {exc}") from None


def _check_length(length: int) -> int:
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {length} bytes exceeds the limit of {MAX_FRAME_BYTES}")
    return length


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message; :class:`asyncio.IncompleteReadError` at the end of the stream."""
    length = _check_length(_HEADER.unpack(await reader.readexactly(_HEADER.size))[0])
    return _decode_body(length, await reader.readexactly(length))


def read_frame_blocking(sock: socket.socket) -> Any:
    """The next message from a blocking socket (its timeout applies); :class:`ConnectionError` at its end."""
    length = _check_length(_HEADER.unpack(_receive_exactly(sock, _HEADER.size))[0])
    return _decode_body(length, _receive_exactly(sock, length))


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionResetError("the other end closed the socket")
        chunks += chunk
    return bytes(chunks)
