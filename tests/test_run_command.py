"""The README's run command brings HACS up, runs jobs, and leaves nothing behind on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import requests

from hacs_site.localservers import free_port

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
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(
        HACS_VAR_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/hacs.sqlite3",
        HACS_ADMIN_USER="curator",
        HACS_ADMIN_PASSWORD="a long test password",
        HACS_DEMO="0",
        PYTHONUNBUFFERED="1",
    )
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "run.py"), "--port", str(port), "--workers", "1"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    started: list[psutil.Process] = []
    try:
        line = wait_for_line(process, r"HACS is running at", timeout=180)
        assert f"http://127.0.0.1:{port}/" in line
        started = psutil.Process(process.pid).children(recursive=True)
        names = " ".join(" ".join(p.cmdline()) for p in started)
        for program in ("redis-server", "rqworker", "rqcron", "gunicorn"):
            assert program in names

        session = requests.Session()
        base = f"http://127.0.0.1:{port}"
        login = session.get(f"{base}/accounts/login/", timeout=10)
        assert login.status_code == 200
        token = session.cookies["csrftoken"]
        answer = session.post(
            f"{base}/accounts/login/",
            data={"username": "curator", "password": "a long test password",
                  "csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/accounts/login/"}, timeout=10,
        )  # fmt: skip
        assert answer.status_code == 200 and "Overview" in answer.text
        jobs = session.get(f"{base}/jobs/", timeout=10)
        assert "Run a health check" in jobs.text
        queued = session.post(
            f"{base}/jobs/health/",
            data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
            headers={"Referer": f"{base}/jobs/"}, timeout=10,
        )  # fmt: skip
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
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "Stopped." in output
    time.sleep(0.5)
    left = [p for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"still running: {[p.cmdline() for p in left]}"
