"""The pure core never imports Django (STYLE.md, "Three layers, imports flow one way").

Every module of the pure packages ``hacs`` and ``hacs_demo`` is imported in a fresh interpreter
— found by walking the packages, so that a new module is covered without editing this test —
without Django settings, and the interpreter must not have loaded Django.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

IMPORT_EVERY_MODULE = """
import importlib
import json
import pkgutil
import sys

import hacs
import hacs_demo


def fail(name):
    raise ImportError(f"cannot import package {name}")


names = ["hacs", "hacs_demo"]
for package in (hacs, hacs_demo):
    prefix = package.__name__ + "."
    names += [m.name for m in pkgutil.walk_packages(package.__path__, prefix, onerror=fail)]
for name in names:
    importlib.import_module(name)
django = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
print(json.dumps({"imported": names, "django": django, "has_django": "django" in sys.modules}))
"""


def test_no_module_of_the_pure_core_imports_django() -> None:
    # A fresh interpreter: in this one pytest-django has already imported Django.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_MODULE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["django"] == [] and not report["has_django"], report["django"]
    # Not vacuous: the walk found the package's modules (hacs.estimators, hacs.formats.cdx...).
    assert len(report["imported"]) > 10, report["imported"]
    assert {"hacs.estimators", "hacs.updates", "hacs.formats.cdx"} <= set(report["imported"])
    assert {"hacs_demo.build", "hacs_demo.warc"} <= set(report["imported"])
