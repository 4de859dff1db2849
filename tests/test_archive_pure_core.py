"""The archive-reading core stays pure: importing it must not import Django."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PURE_MODULES = ["hacs.formats.canon", "hacs.formats.cdx", "hacs.formats.links"]


def test_the_archive_reading_core_does_not_import_django() -> None:
    # A fresh interpreter: in this one pytest-django may already have imported Django.
    code = (
        "import sys\n"
        + "".join(f"import {name}\n" for name in PURE_MODULES)
        + "leaked = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        + "assert not leaked, leaked\n"
        + "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
