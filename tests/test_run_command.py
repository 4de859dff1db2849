"""The README's run command brings HACS up, runs jobs, and leaves nothing behind on Ctrl-C.

The command is started once for the module (it takes most of a minute to come up); a librarian's
session against it is recorded, then Ctrl-C stops it, and each test checks one part of that.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from scripts.localservers import free_port

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration


def wait_for_line(process: subprocess.Popen[str], pattern: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            if process.poll() is not None:
                break
            continue
        seen.append(line)
        if re.search(pattern, line):
            return line
    raise AssertionError(f"never printed {pattern!r}:\n" + "".join(seen[-40:]))


def poll(check: Callable[[], Any], timeout: float, every: float = 0.5) -> Any:
    """``check()`` until it is truthy or ``timeout`` seconds have passed; its last value."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(every)
        value = check()
    return value


@dataclass
class RunSession:
    """What a librarian's session against ``scripts/run.py`` showed, recorded for the tests."""

    var: Path
    port: int
    env: dict[str, str]
    process: subprocess.Popen[str]
    banner: str = ""
    programs: str = ""  # the command lines of every process run.py started
    started: list[psutil.Process] = field(default_factory=list)
    run_env: str = ""
    redis_port: int = 0
    second_terminal: list[str] = field(default_factory=list)
    pages: dict[str, requests.Response] = field(default_factory=dict)
    health_status: str = ""
    import_command: subprocess.CompletedProcess[str] | None = None
    import_running: bool = False
    workers: tuple[int, int] = (0, 0)  # rqworker processes before and while the import runs
    output: str = ""
    left: list[list[str]] = field(default_factory=list)  # processes alive after Ctrl-C


def start_run_command(var: Path, cdx_url: str) -> RunSession:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(
        HACS_VAR_DIR=str(var),
        DATABASE_URL=f"sqlite:///{var}/hacs.sqlite3",
        HACS_ADMIN_USER="curator",
        HACS_ADMIN_PASSWORD="a long test password",
        HACS_DEMO="0",
        PYTHONUNBUFFERED="1",
        HACS_CDX_URL=cdx_url,
        HACS_HTTP_RETRIES="0",
        HACS_HTTP_TIMEOUT="600",
        HACS_HTTP_DEADLINE="3600",
    )
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "run.py"), "--port", str(port), "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return RunSession(var=var, port=port, env=env, process=process)


def second_terminal_env(run: RunSession) -> dict[str, str]:
    """A second terminal's environment: neither REDIS_URL nor DATABASE_URL exported."""
    return {k: v for k, v in run.env.items() if k != "DATABASE_URL"}


def record_servers(run: RunSession) -> None:
    run.banner = wait_for_line(run.process, r"HACS is running at", timeout=180)
    run.started = psutil.Process(run.process.pid).children(recursive=True)
    run.programs = " ".join(" ".join(p.cmdline()) for p in run.started)
    run.run_env = (run.var / "run.env").read_text()
    redis_server = next(p for p in run.started if "redis-server" in " ".join(p.cmdline()))
    run.redis_port = redis_server.net_connections()[0].laddr.port
    run.second_terminal = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "shell",
            "-v",
            "0",
            "-c",
            "from django.conf import settings; print(settings.REDIS_URL); "
            "print(settings.DATABASES['default']['NAME'])",
        ],
        cwd=ROOT,
        env=second_terminal_env(run),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()


def record_login_and_health_check(run: RunSession, session: requests.Session) -> None:
    base = f"http://127.0.0.1:{run.port}"
    run.pages["login"] = session.get(f"{base}/accounts/login/", timeout=10)
    run.pages["after login"] = session.post(
        f"{base}/accounts/login/",
        data={
            "username": "curator",
            "password": "a long test password",
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": f"{base}/accounts/login/"},
        timeout=10,
    )
    run.pages["jobs"] = session.get(f"{base}/jobs/", timeout=10)
    run.pages["health queued"] = session.post(
        f"{base}/jobs/health/",
        data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{base}/jobs/"},
        timeout=10,
    )

    def health_status() -> str:
        status = session.get(f"{base}/jobs/status.json", timeout=10).json()["jobs"][0]["status"]
        run.health_status = status
        return status in ("finished", "failed")

    poll(health_status, timeout=60)
    run.pages["jobs after"] = session.get(f"{base}/jobs/", timeout=10)


def rq_workers(run: RunSession) -> list[psutil.Process]:
    tree = psutil.Process(run.process.pid).children(recursive=True)
    return [p for p in tree if "rqworker" in " ".join(p.cmdline())]


def record_import_from_a_second_terminal(run: RunSession, session: requests.Session) -> None:
    """The second terminal queues an import for the running workers, through run.env."""
    idle = len(rq_workers(run))
    seeds = run.var / "seeds.txt"
    seeds.write_text("http://cs.uni.edu/~ada/\n")
    run.import_command = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "import_seeds", str(seeds), "--enqueue"],
        cwd=ROOT,
        env=second_terminal_env(run),
        capture_output=True,
        text=True,
        timeout=60,
    )
    status_url = f"http://127.0.0.1:{run.port}/jobs/status.json"
    run.import_running = bool(
        poll(
            lambda: any(
                j["kind"] == "Import" and j["status"] == "running"
                for j in session.get(status_url, timeout=10).json()["jobs"]
            ),
            timeout=60,
        )
    )
    poll(lambda: len(rq_workers(run)) > idle, timeout=60, every=0.2)
    run.workers = (idle, len(rq_workers(run)))
    run.started = psutil.Process(run.process.pid).children(recursive=True)


def record_ctrl_c(run: RunSession) -> None:
    run.process.send_signal(signal.SIGINT)
    run.output, _ = run.process.communicate(timeout=120)

    def still_running() -> list[psutil.Process]:
        return [p for p in run.started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]

    # Each child is given a moment to be gone; what is left after it is killed, and reported.
    poll(lambda: not still_running(), timeout=5, every=0.1)
    left = still_running()
    run.left = [p.cmdline() for p in left]
    for orphan in left:
        orphan.kill()


@pytest.fixture(scope="module")
def run_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunSession]:
    # An archive that accepts connections and never answers: the import started by the second
    # terminal stays busy until run.py stops it.
    stalling = socket.socket()
    stalling.bind(("127.0.0.1", 0))
    stalling.listen(16)
    run = start_run_command(
        tmp_path_factory.mktemp("run"), f"http://127.0.0.1:{stalling.getsockname()[1]}/cdx"
    )
    try:
        record_servers(run)
        session = requests.Session()
        record_login_and_health_check(run, session)
        record_import_from_a_second_terminal(run, session)
    finally:
        record_ctrl_c(run)
        stalling.close()  # only now: closing it would end the work-horse's stalled request
    yield run


def test_it_prints_its_address_and_starts_every_server(run_session: RunSession) -> None:
    assert f"http://127.0.0.1:{run_session.port}/" in run_session.banner
    for program in ("redis-server", "rqworker", "rqcron", "gunicorn"):
        assert program in run_session.programs
    # A lone worker serves every queue, crawl lists before imports.
    assert "rqworker default estimation evaluation import" in run_session.programs


def test_a_second_terminal_finds_redis_and_the_database(run_session: RunSession) -> None:
    [redis_url] = re.findall(r"^REDIS_URL=(.*)$", run_session.run_env, re.MULTILINE)
    assert run_session.second_terminal == [redis_url, f"{run_session.var}/hacs.sqlite3"]


def test_redis_asks_for_a_password_that_no_command_line_shows(run_session: RunSession) -> None:
    [redis_url] = re.findall(r"^REDIS_URL=(.*)$", run_session.run_env, re.MULTILINE)
    password = re.fullmatch(rf"redis://:([^@]+)@127\.0\.0\.1:{run_session.redis_port}/0", redis_url)
    assert password is not None, redis_url
    assert password[1] not in run_session.programs


def test_a_librarian_logs_in_and_a_health_check_finishes(run_session: RunSession) -> None:
    pages = run_session.pages
    assert pages["login"].status_code == 200
    assert pages["after login"].status_code == 200 and "Overview" in pages["after login"].text
    assert "Run a health check" in pages["jobs"].text
    assert pages["health queued"].status_code == 200
    assert run_session.health_status == "finished"
    assert "Finished" in pages["jobs after"].text


def test_an_import_queued_from_a_second_terminal_runs_in_a_work_horse(
    run_session: RunSession,
) -> None:
    assert run_session.import_command is not None
    assert run_session.import_command.returncode == 0, run_session.import_command.stderr
    assert run_session.import_running
    idle, busy = run_session.workers
    assert busy == idle + 1  # the work-horse the worker forked for the site


def test_ctrl_c_stops_every_process_and_leaves_nothing_stale(run_session: RunSession) -> None:
    assert run_session.process.returncode == 0, run_session.output
    assert "Stopped." in run_session.output
    assert not (run_session.var / "run.env").exists()  # nothing stale for the next terminal
    assert not run_session.left, f"still running: {run_session.left}"  # the work-horse too
