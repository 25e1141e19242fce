"""A real, throwaway PostgreSQL server for tests and benchmarks.

:class:`PostgresServer` runs the Debian ``postgresql`` server binaries (``/usr/lib/postgresql/<version>/bin``, or
the directory named by ``$PG_BIN``) in a temporary directory: ``initdb`` with trust authentication, the socket
directory inside the temporary directory, TCP on a free loopback port. PostgreSQL refuses to run as root, so
when the caller is root the server runs as the ``postgres`` user (``nobody`` when that user is missing),
switched to with ``setpriv``, which also sets a parent-death signal: the server dies with the process that
started it even when that process is killed.

Pytest fixtures (exposed to every test by the root ``conftest.py``):

* ``postgres_server`` / ``postgres_dsn`` (session): one server for the whole session, stopped at the end.
* ``postgres_db`` (function): the DSN of a fresh, empty database, dropped after the test.

Both skip with a clear reason only when the server binaries are absent. Benchmarks import
:class:`PostgresServer` directly.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

SUPERUSER = "postgres"
_VERSION_DIR = re.compile(r"/(\d+)/bin$")


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries are not installed."""


def find_bin_dir() -> Path:
    """The directory holding ``initdb`` and ``postgres``: ``$PG_BIN``, else the newest Debian install."""
    override = os.environ.get("PG_BIN")
    candidates = [Path(override)] if override else []
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(m.group(1)) if (m := _VERSION_DIR.search(str(p))) else 0,
        reverse=True,
    )
    candidates.extend(debian)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "postgres").is_file():
            return directory
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found (looked in $PG_BIN and /usr/lib/postgresql/*/bin); "
        "install them with `apt-get install -y postgresql`"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _unprivileged_user() -> pwd.struct_passwd | None:
    """The account to run the server as, or ``None`` to run as ourselves (we are not root)."""
    if os.geteuid() != 0:
        return None
    for name in (SUPERUSER, "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("PostgreSQL refuses to run as root, and neither a `postgres` nor a `nobody` account exists")


class PostgresServer:
    """One running server. Use :meth:`start` (or the class as a context manager) and :meth:`stop`."""

    def __init__(self, bin_dir: Path, base_dir: Path, port: int, process: subprocess.Popen[bytes]) -> None:
        self.bin_dir = bin_dir
        self.base_dir = base_dir
        self.port = port
        self._process = process

    @classmethod
    def start(
        cls, *, durable: bool = False, settings: dict[str, str] | None = None, timeout: float = 60.0
    ) -> PostgresServer:
        """Initialise a cluster in a new temporary directory and start it.

        ``durable=False`` (tests) turns off fsync and synchronous commit: the data is thrown away anyway.
        ``settings`` adds or overrides server parameters (``{"synchronous_commit": "off"}``).
        """
        bin_dir = find_bin_dir()
        account = _unprivileged_user()
        base_dir = Path(tempfile.mkdtemp(prefix="gateway-pg-", dir="/tmp" if account else None))
        try:
            if account is not None:
                os.chown(base_dir, account.pw_uid, account.pw_gid)
            wrapper = cls._wrapper(account)
            data_dir, socket_dir = base_dir / "data", base_dir / "socket"
            socket_dir.mkdir(mode=0o700)
            if account is not None:
                os.chown(socket_dir, account.pw_uid, account.pw_gid)
            initdb = subprocess.run(
                [
                    *wrapper,
                    str(bin_dir / "initdb"),
                    "--pgdata",
                    str(data_dir),
                    "--username",
                    SUPERUSER,
                    "--auth",
                    "trust",
                    "--encoding",
                    "UTF8",
                    "--locale",
                    "C",
                    "--no-sync",
                ],
                capture_output=True,
                text=True,
                env=cls._env(base_dir),
            )
            if initdb.returncode != 0:
                raise RuntimeError(f"initdb failed ({initdb.returncode}):\n{initdb.stdout}\n{initdb.stderr}")
            parameters = {
                "listen_addresses": "127.0.0.1",
                "unix_socket_directories": str(socket_dir),
                "max_connections": "200",
                "shared_buffers": "64MB",
                "log_min_messages": "warning",
            }
            if not durable:
                parameters |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
            parameters |= settings or {}
            last_error = ""
            for _ in range(5):  # a free port can be taken between choosing and binding it: try another one
                port = _free_port()
                options = [arg for key, value in parameters.items() for arg in ("-c", f"{key}={value}")]
                log = (base_dir / "server.log").open("ab")
                process = subprocess.Popen(
                    [*wrapper, str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(port), *options],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=cls._env(base_dir),
                )
                log.close()
                server = cls(bin_dir, base_dir, port, process)
                if server._wait_ready(timeout):
                    return server
                last_error = server._log_tail()
                server._terminate()
            raise RuntimeError(f"PostgreSQL did not start:\n{last_error}")
        except BaseException:
            shutil.rmtree(base_dir, ignore_errors=True)
            raise

    @staticmethod
    def _wrapper(account: pwd.struct_passwd | None) -> list[str]:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            if account is None:
                return []
            raise RuntimeError("running PostgreSQL from root needs `setpriv` (util-linux) to drop privileges")
        command = [setpriv, "--pdeathsig", "QUIT"]
        if account is not None:
            command += [f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups"]
        return command

    @staticmethod
    def _env(base_dir: Path) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base_dir), "LC_ALL": "C"}

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                with psycopg.connect(self.dsn(), connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        return False

    def _log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.base_dir / "server.log").read_text(errors="replace").splitlines()[-lines:])
        return ""

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq URI for ``dbname`` as the superuser over loopback TCP."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database and return its name."""
        name = name or f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database, disconnecting whoever is still connected to it."""
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        """A fresh database for the duration of the block; yields its DSN."""
        name = self.create_database()
        try:
            yield self.dsn(name)
        finally:
            self.drop_database(name)

    def _pids(self) -> list[int]:
        """The postmaster's children (backends, background workers), then the postmaster."""
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):  # a process that ended meanwhile
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self._process.pid:
                    children.append(int(stat.parent.name))
        return [*children, self._process.pid]

    def freeze(self) -> None:
        """Stop every server process (SIGSTOP): clients connect and send, but nothing ever answers, as with a
        server frozen or cut off by the network. :meth:`thaw` undoes it."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGSTOP)  # first, so that it forks no backend while we go
            for pid in self._pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """Let a frozen server run again (SIGCONT); harmless on one that is not frozen."""
        if self._process.poll() is None:
            for pid in self._pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def _terminate(self) -> None:
        self.thaw()  # a stopped process would not act on the shutdown signal
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)  # "fast" shutdown: roll back and disconnect clients
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def stop(self) -> None:
        """Shut the server down and delete its directory."""
        try:
            self._terminate()
        finally:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def started_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the caller's own for the duration of a fixture (the test is skipped when none can
    start here); stopped afterwards."""
    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    with server:
        yield server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server shared by the whole test session."""
    yield from started_server()


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """The DSN of the session server's ``postgres`` database (superuser, trust auth, loopback)."""
    return postgres_server.dsn()


@pytest.fixture
def postgres_db(postgres_server: PostgresServer) -> Iterator[str]:
    """The DSN of a fresh, empty database, dropped after the test."""
    with postgres_server.database() as dsn:
        yield dsn
