"""The README's run command brings HACS up, runs jobs, and leaves nothing behind on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

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


def test_run_command_serves_the_dashboard_runs_a_job_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    # An archive that accepts connections and never answers: an import started below stays
    # busy until run.py stops it.
    stalling = socket.socket()
    stalling.bind(("127.0.0.1", 0))
    stalling.listen(16)
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(
        HACS_VAR_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/hacs.sqlite3",
        HACS_ADMIN_USER="curator",
        HACS_ADMIN_PASSWORD="a long test password",
        HACS_DEMO="0",
        PYTHONUNBUFFERED="1",
        HACS_CDX_URL=f"http://127.0.0.1:{stalling.getsockname()[1]}/cdx",
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
    started: list[psutil.Process] = []
    try:
        line = wait_for_line(process, r"HACS is running at", timeout=180)
        assert f"http://127.0.0.1:{port}/" in line
        started = psutil.Process(process.pid).children(recursive=True)
        names = " ".join(" ".join(p.cmdline()) for p in started)
        for program in ("redis-server", "rqworker", "rqcron", "gunicorn"):
            assert program in names
        # A lone worker serves every queue, crawl lists before imports.
        assert "rqworker default estimation evaluation import" in names

        # A second terminal, with neither REDIS_URL nor DATABASE_URL exported, finds both.
        run_env = (tmp_path / "run.env").read_text()
        redis_server = next(p for p in started if "redis-server" in " ".join(p.cmdline()))
        redis_port = redis_server.net_connections()[0].laddr.port
        [redis_url] = re.findall(r"^REDIS_URL=(.*)$", run_env, re.MULTILINE)
        # Redis asks for a password, which run.env holds and no command line shows.
        password = re.fullmatch(rf"redis://:([^@]+)@127\.0\.0\.1:{redis_port}/0", redis_url)
        assert password is not None, redis_url
        assert not [p for p in started if password[1] in " ".join(p.cmdline())]
        second = {k: v for k, v in env.items() if k != "DATABASE_URL"}
        shown = subprocess.run(
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
            env=second,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        assert shown == [redis_url, f"{tmp_path}/hacs.sqlite3"]

        session = requests.Session()
        base = f"http://127.0.0.1:{port}"
        login = session.get(f"{base}/accounts/login/", timeout=10)
        assert login.status_code == 200
        token = session.cookies["csrftoken"]
        answer = session.post(
            f"{base}/accounts/login/",
            data={
                "username": "curator",
                "password": "a long test password",
                "csrfmiddlewaretoken": token,
            },
            headers={"Referer": f"{base}/accounts/login/"},
            timeout=10,
        )
        assert answer.status_code == 200 and "Overview" in answer.text
        jobs = session.get(f"{base}/jobs/", timeout=10)
        assert "Run a health check" in jobs.text
        queued = session.post(
            f"{base}/jobs/health/",
            data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
            headers={"Referer": f"{base}/jobs/"},
            timeout=10,
        )
        assert queued.status_code == 200
        deadline = time.monotonic() + 60
        status = ""
        while time.monotonic() < deadline:
            status = session.get(f"{base}/jobs/status.json", timeout=10).json()["jobs"][0]["status"]
            if status in ("finished", "failed"):
                break
            time.sleep(0.5)
        assert status == "finished"
        assert "Finished" in session.get(f"{base}/jobs/", timeout=10).text

        idle = len(
            [
                p
                for p in psutil.Process(process.pid).children(recursive=True)
                if "rqworker" in " ".join(p.cmdline())
            ]
        )
        # The second terminal queues an import for the running workers, through run.env.
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("http://cs.uni.edu/~ada/\n")
        queued_import = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "import_seeds", str(seeds), "--enqueue"],
            cwd=ROOT,
            env=second,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert queued_import.returncode == 0, queued_import.stderr
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            jobs_now = session.get(f"{base}/jobs/status.json", timeout=10).json()["jobs"]
            if any(j["kind"] == "Import" and j["status"] == "running" for j in jobs_now):
                break
            time.sleep(0.5)
        assert any(j["kind"] == "Import" and j["status"] == "running" for j in jobs_now)

        def workers() -> list[psutil.Process]:
            tree = psutil.Process(process.pid).children(recursive=True)
            return [p for p in tree if "rqworker" in " ".join(p.cmdline())]

        deadline = time.monotonic() + 60
        while len(workers()) <= idle and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(workers()) == idle + 1  # the work-horse the worker forked for the site
        started = psutil.Process(process.pid).children(recursive=True)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    assert "Stopped." in output
    assert not (tmp_path / "run.env").exists()  # nothing stale for the next terminal
    time.sleep(0.5)
    left = [p for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    for orphan in left:
        orphan.kill()
    stalling.close()  # only now: closing it would end the work-horse's stalled request
    assert not left, f"still running: {[p.cmdline() for p in left]}"  # the work-horse too
