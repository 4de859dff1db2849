"""A real pywb archive for integration tests, serving WARC files on 127.0.0.1.

pywb pins old libraries (gevent, redis 2.x, ...), so it lives in its own virtual environment,
``<root>/.venv-pywb``, built from ``<root>/requirements-pywb.txt`` on first use::

    with PywbServer([archive.warc_path], "demo") as pywb:
        rows = requests.get(pywb.cdx_url, params={"url": "cs.foo.edu/~bar", ...})
        body = requests.get(pywb.memento_url("20160102030405", "http://cs.foo.edu/~bar/"))

The server gets a fresh directory (``wb-manager init`` + ``wb-manager add``), listens on a free
port of 127.0.0.1 only, has no live-web collection, no proxy mode and no auto-indexing, and its
environment points every proxy variable at a closed port so that nothing in it can reach the
Internet. Leaving the ``with`` block terminates its whole process group.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, NamedTuple
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
VENV_NAME = ".venv-pywb"
REQUIREMENTS = "requirements-pywb.txt"
MARKER = ".hacs-requirements.sha256"
_NO_PROXY = "http://127.0.0.1:9"  # the discard port: closed, so any proxied request fails fast


class PywbBinaries(NamedTuple):
    """The pywb console scripts of a virtual environment."""

    wayback: Path
    wb_manager: Path

    @property
    def bin_dir(self) -> Path:
        return self.wayback.parent

    @property
    def cdx_indexer(self) -> Path:
        return self.bin_dir / "cdx-indexer"

    @property
    def python(self) -> Path:
        return self.bin_dir / "python"


def ensure_pywb_venv(root: Path = ROOT) -> PywbBinaries:
    """Create ``root/.venv-pywb`` from ``root/requirements-pywb.txt`` unless it is up to date.

    Up to date means: the binaries exist and a marker holds the SHA-256 of the requirements file
    it was installed from. A virtualenv without the marker (made by hand, or half-built by an
    interrupted run) gets ``pip install -r`` again, which is quick when everything is there.
    A lock file (in the temp directory, keyed by ``root``) keeps parallel test workers from
    building it twice. Raises ``RuntimeError`` with the tail of pip's output on failure.
    """
    root = Path(root).resolve()
    requirements = root / REQUIREMENTS
    if not requirements.is_file():
        raise RuntimeError(f"{requirements} is missing: cannot build pywb's virtualenv")
    venv = root / VENV_NAME
    binaries = PywbBinaries(venv / "bin" / "wayback", venv / "bin" / "wb-manager")
    wanted = hashlib.sha256(requirements.read_bytes()).hexdigest()
    if _is_current(venv, binaries, wanted):
        return binaries

    lock_path = Path(tempfile.gettempdir()) / (
        "hacs-venv-pywb-" + hashlib.sha256(str(venv).encode()).hexdigest()[:16] + ".lock"
    )
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if _is_current(venv, binaries, wanted):  # another worker built it meanwhile
            return binaries
        (venv / MARKER).unlink(missing_ok=True)
        if (venv / "bin" / "python").exists() and not _python_runs(venv):
            # A broken environment (say, the Python it was made from is gone): start afresh.
            _run([sys.executable, "-m", "venv", "--clear", str(venv)], "python -m venv --clear")
        _install(venv, requirements)
        missing = [str(b) for b in binaries if not os.access(b, os.X_OK)]
        if missing:
            raise RuntimeError(f"pip succeeded but these pywb scripts are missing: {missing}")
        (venv / MARKER).write_text(wanted + "\n")
    return binaries


def _is_current(venv: Path, binaries: PywbBinaries, wanted: str) -> bool:
    try:
        marker = (venv / MARKER).read_text().strip()
    except OSError:
        return False
    return marker == wanted and all(os.access(b, os.X_OK) for b in binaries)


def _python_runs(venv: Path) -> bool:
    try:
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", "pass"],
            env=_clean_env(),
            capture_output=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def _install(venv: Path, requirements: Path) -> None:
    if not (venv / "bin" / "python").exists():
        # The interpreter running the tests is the one HACS supports; pywb 2.10 runs on it.
        _run([sys.executable, "-m", "venv", str(venv)], "python -m venv")
    _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-r",
            str(requirements),
        ],
        "pip install -r " + requirements.name,
    )


def _clean_env() -> dict[str, str]:
    """The environment for pywb's processes: no leaking of the test virtualenv into them."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("VIRTUAL_ENV", None)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def _offline_env() -> dict[str, str]:
    """pywb's environment: every proxy variable points at a closed port, except for 127.0.0.1,
    so a code path that tried the live web would fail at once instead of reaching it."""
    env = _clean_env()
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env[name] = _NO_PROXY
    env["no_proxy"] = env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def _run(
    cmd: list[str],
    what: str,
    cwd: Path | None = None,
    timeout: float = 900,
    env: dict[str, str] | None = None,
) -> str:
    try:
        result = subprocess.run(
            cmd, cwd=cwd, env=env or _clean_env(), capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{what} failed: {exc}") from exc
    output = (result.stdout or "") + (result.stderr or "")
    if result.returncode != 0:
        tail = "\n".join(output.splitlines()[-40:])
        raise RuntimeError(f"{what} failed with exit status {result.returncode}:\n{tail}")
    return output


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str, timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """GET without any proxy from the environment; returns (status, headers, body), also for
    4xx/5xx answers, and does not follow redirects (an archived 301 must stay a 301)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
    try:
        with opener.open(url, timeout=timeout) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers.items()), exc.read()


class PywbServer:
    """pywb's ``wayback`` serving the given WARC files as collection ``collection``.

    Attributes once started: ``base_url`` (``http://127.0.0.1:PORT``), ``cdx_url``
    (``.../<coll>/cdx``), ``port``, ``directory`` (the temporary pywb root), ``pid``.
    """

    def __init__(
        self,
        warcs: Iterable[Path | str],
        collection: str = "demo",
        *,
        root: Path = ROOT,
        timeout: float = 60.0,
    ) -> None:
        self.warcs = [Path(w).resolve() for w in warcs]
        if not self.warcs:
            raise ValueError("PywbServer needs at least one WARC file")
        for warc in self.warcs:
            if not warc.is_file():
                raise ValueError(f"no such WARC file: {warc}")
        if not collection or not all(c.isalnum() or c in "-_" for c in collection):
            raise ValueError(f"collection names are letters, digits, - and _: {collection!r}")
        self.collection = collection
        self.root = Path(root)
        self.timeout = timeout
        self.port = 0
        self.directory: Path | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # ---------------------------------------------------------------- URLs

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdx_url(self) -> str:
        return f"{self.base_url}/{self.collection}/cdx"

    def memento_url(self, timestamp: str, url: str) -> str:
        """The raw capture (``id_``: no rewriting, no banner) of ``url`` nearest ``timestamp``."""
        return f"{self.base_url}/{self.collection}/{timestamp}id_/{url}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> PywbServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        tools = ensure_pywb_venv(self.root)
        self._tmp = tempfile.TemporaryDirectory(prefix="hacs-pywb-")
        self.directory = Path(self._tmp.name)
        try:
            _run(
                [str(tools.wb_manager), "init", self.collection],
                "wb-manager init",
                cwd=self.directory,
                timeout=120,
                env=_offline_env(),
            )
            _run(
                [str(tools.wb_manager), "add", self.collection, *map(str, self.warcs)],
                "wb-manager add",
                cwd=self.directory,
                timeout=600,
                env=_offline_env(),
            )
            for _attempt in range(3):
                # The free port can be taken between our probe and pywb's bind: try another.
                if self._launch(tools):
                    return
            raise RuntimeError("pywb could not bind a port:\n" + self.log_text()[-3000:])
        except BaseException:
            self.stop()
            raise

    def _launch(self, tools: PywbBinaries) -> bool:
        assert self.directory is not None
        self.port = free_port()
        env = _offline_env()
        if self._log is not None:
            self._log.close()
        self._log = open(self.directory / "wayback.log", "wb")
        self._proc = subprocess.Popen(
            [str(tools.wayback), "-p", str(self.port), "-b", "127.0.0.1"],
            cwd=self.directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() can end all of it
        )
        deadline = time.monotonic() + self.timeout
        probe = f"{self.cdx_url}?url={quote('example.invalid/')}&limit=1"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                log = self.log_text()
                self._reap()
                if "Address already in use" in log or "address already in use" in log.lower():
                    return False
                raise RuntimeError(
                    f"pywb's wayback exited with status {self._proc.returncode} before "
                    f"answering:\n{log[-3000:]}"
                )
            try:
                http_get(probe, timeout=2)
                return True
            except OSError:
                time.sleep(0.1)
        log = self.log_text()
        self._reap()
        raise RuntimeError(
            f"pywb's wayback did not answer on port {self.port} within {self.timeout:.0f} s:\n"
            f"{log[-3000:]}"
        )

    def log_text(self) -> str:
        """What wayback printed (stdout and stderr) so far."""
        if self.directory is None:
            return ""
        try:
            return (self.directory / "wayback.log").read_text(errors="replace")
        except OSError:
            return ""

    def _reap(self) -> None:
        """End the server's process group: SIGTERM, then SIGKILL after 10 seconds."""
        proc = self._proc
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the group id is the leader's pid
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                if proc.poll() is not None and not _group_alive(pgid):
                    break
                time.sleep(0.05)
            else:
                continue
            break
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def stop(self) -> None:
        self._reap()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp.name, ignore_errors=True)
            self._tmp.cleanup()
            self._tmp = None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
