"""The web server as ``scripts/run.py`` starts it (its own gunicorn command line), on this test
run's database, for tests that speak HTTP to it over real sockets; and a login over HTTP."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from scripts.localservers import free_port, port_open
from scripts.run import web_command

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass
class WebServer:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def connect(self, timeout: float = 60) -> socket.socket:
        """A new connection to the server; ``timeout`` guards every read and write on it."""
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def web_server(database_url: str, directory: Path, **settings: str) -> Iterator[WebServer]:
    """gunicorn started with ``run.py``'s command line on a free port, using ``database_url``,
    ``directory`` as its var directory and ``directory/tmp`` as its temporary directory, with the
    extra environment ``settings``; stopped at the end."""
    port = free_port()
    temporary = directory / "tmp"
    temporary.mkdir(parents=True, exist_ok=True)
    env = {name: value for name, value in os.environ.items() if name != "REDIS_URL"}
    env.update(
        DJANGO_SETTINGS_MODULE="hacs_site.settings",
        DATABASE_URL=database_url,
        HACS_VAR_DIR=str(directory),
        TMPDIR=str(temporary),
        **settings,
    )
    static = directory / "static"
    if not static.exists():
        # The static files the test session collected (tests/conftest.py), as run.sh collects
        # them: pages name them by their hashed names.
        from django.conf import settings as django_settings

        static.symlink_to(Path(django_settings.VAR_DIR) / "static", target_is_directory=True)
    log = directory / "gunicorn.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            web_command(port, env),
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = WebServer(port, process, log)
    try:
        deadline = time.monotonic() + 120
        while not port_open(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"gunicorn did not start:\n{server.log_text()[-3000:]}")
            time.sleep(0.1)
        yield server
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def http_login(base_url: str, username: str, password: str) -> requests.Session:
    """A session logged in through the login page, as a browser does."""
    session = requests.Session()
    page = session.get(f"{base_url}/accounts/login/", timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None, page.text[:500]
    answer = session.post(
        f"{base_url}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token[1]},
        timeout=60,
        allow_redirects=False,
    )
    assert answer.status_code == 302, answer.text[:500]
    return session
