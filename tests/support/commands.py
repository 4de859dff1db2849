"""HACS's management commands run in the test's process, their output kept for the test."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import date
from pathlib import Path

from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def crawl_list_command(*args: str) -> tuple[str, str]:
    """``manage.py crawl_list ARGS``: what it printed (the CSV) and what it said on stderr."""
    out, err = io.StringIO(), io.StringIO()
    call_command("crawl_list", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def learned_list_command(method: str, day: date, *args: str) -> tuple[str, str]:
    """A three-site list of a learned scheduler (``gp4c`` or ``lws``) for ``day``."""
    return crawl_list_command("--method", method, "--budget", "3", "--date", day.isoformat(), *args)


def manage_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``manage.py check`` in a process of its own, under ``env``: how start-up meets it."""
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
