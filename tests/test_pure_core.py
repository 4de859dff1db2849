"""The pure numerical core never imports Django (STYLE.md, "Three layers")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
PURE_MODULES = [
    "hacs.estimators",
    "hacs.updates",
    "hacs.evaluation",
    "hacs.charts",
    "hacs.evaluation_charts",
    "hacs.formats.cdx",
    "hacs.formats.links",
    "hacs.formats.canon",
    "hacs.formats.seeds",
]


def test_the_pure_core_imports_without_django() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {module}\n" for module in PURE_MODULES)
        + "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        + "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
